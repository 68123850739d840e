//! The only place that calls the operating system. Everything above works with these
//! functions and types, so a port to another platform replaces this module alone.

mod iobuf;
pub(crate) use iobuf::IoBuf;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub(crate) use linux::*;

// Page-cache state (cachestat, for shared reads), dedupe (FIDEDUPERANGE), inode identity
// (generations, stamps, mount ids) and range clones (FICLONERANGE, clone granularity).
#[cfg(target_os = "linux")]
mod cache;
#[cfg(target_os = "linux")]
mod dedupe;
#[cfg(target_os = "linux")]
mod ident;
#[cfg(target_os = "linux")]
mod inode;
#[cfg(target_os = "linux")]
mod range;
#[cfg(target_os = "linux")]
pub(crate) use {cache::*, dedupe::*, ident::*, inode::*, range::*};

#[cfg(all(test, target_os = "linux"))]
mod extents_tests;
#[cfg(all(test, target_os = "linux"))]
mod testutil;

#[cfg(feature = "failpoints")]
pub(crate) mod failpoints;

#[cfg(not(target_os = "linux"))]
compile_error!("mimeo currently supports Linux only");
