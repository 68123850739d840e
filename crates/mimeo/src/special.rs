//! special
