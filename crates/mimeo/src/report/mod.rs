//! What a run reports: typed errors, owned events for an [`Observer`], live progress through
//! a [`Control`], and a [`Summary`] that merges. Every layer above `sys` reports through here;
//! this layer imports nothing of the engine but `sys`.

mod control;
mod error;
mod event;
mod outcome;
mod quote;
mod reporter;
mod summary;

pub use control::Control;
pub use error::{Cause, Error, Op, Refusal, Result};
pub use event::{Action, EntryKind, Event, EventChannel, NoObserver, Observer, Warning};
pub use outcome::{FileOutcome, Method};
pub use quote::{quote, quote_arg};
pub(crate) use reporter::Reporter;
pub use summary::Summary;
