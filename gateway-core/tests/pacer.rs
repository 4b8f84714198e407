//! pacer tests
