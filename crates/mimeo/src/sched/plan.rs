//! Walks that copy nothing, on the local pool: the progress totals and `--dry-run`, run by the
//! parallel walker with the visitors of the tree layer.

use super::local::walk;
use crate::options::Options;
use crate::report::{Control, Observer, Summary};
use crate::tree::{CopyPair, DryRun, Scan, Totals};
use std::time::Instant;

/// Counts the entries, files and bytes a copy of `pairs` would handle, for a progress bar.
/// Meant to run on its own thread beside the copy (its workers start from that thread); it
/// stops early when `control` is stopped.
pub fn scan(pairs: &[CopyPair], opts: &Options, totals: &Totals, control: &Control) {
    let (scan, initial) = Scan::new(pairs, opts, totals);
    walk(&scan.roots, &scan.opts, &scan, control, initial);
    scan.finish();
}

/// Reports what a copy of `pairs` would create, replace, skip, merge or refuse, and changes
/// nothing. Each entry is an [`Event::Planned`](crate::Event::Planned) (or
/// [`Event::Failed`](crate::Event::Failed) for a refusal), decided by the same rule the copy
/// uses.
pub fn dry_run(pairs: &[CopyPair], opts: &Options, observer: &dyn Observer) -> Summary {
    let start = Instant::now();
    let control = Control::new();
    let (dry, initial) = DryRun::new(pairs, opts, observer, &control);
    walk(&dry.roots, &dry.wopts, &dry, &control, initial);
    dry.finish(start.elapsed())
}
