//! Trees: resolving the command-line roots, the per-directory pass and the per-entry copy,
//! explicit directory completion, the parallel walker with the step every walk takes in a
//! directory, and the walks that plan (`--dry-run`, progress totals). Work
//! is plain data ([`WorkItem`]) run by an [`Executor`]; which thread or process runs it is the
//! scheduler's business (the layer above).

mod context;
mod dir;
mod entry;
mod exec;
mod file;
mod hooks;
mod listing;
mod named;
mod placing;
mod plan;
mod resume;
mod roots;
mod shared_reads;
mod sharing;
mod single;
mod split;
mod split_state;
mod through;
mod walk;
mod work;

pub(crate) use exec::Passes;
pub use exec::{Executor, Worker};
pub use hooks::{Hooked, Hooks, NoHooks};
pub(crate) use listing::{Look, Want};
pub use plan::Totals;
pub(crate) use plan::{DryRun, Scan};
pub use roots::CopyPair;
pub use single::{copy_file, copy_file_with};
pub(crate) use walk::{Entry, Roots, Visitor, Walk, WalkOptions};
pub(crate) use work::join_rel;
pub use work::{
    DirDone, DirInfo, EntryType, FileRange, Lineage, Named, RangeDone, Stat, WorkItem, WorkKind,
    XattrList,
};
