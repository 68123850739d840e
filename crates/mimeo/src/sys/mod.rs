//! The only place that calls the operating system. Everything above works with these
//! functions and types, so a port to another platform replaces this module alone.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub(crate) use linux::*;

#[cfg(feature = "failpoints")]
pub(crate) mod failpoints;

#[cfg(not(target_os = "linux"))]
compile_error!("mimeo currently supports Linux only");
