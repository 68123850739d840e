//! links
