//! syscall layer
