//! select tests
