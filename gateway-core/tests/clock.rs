//! clock tests
