//! The planning walks, run on the local pool: progress totals ([`scan`]) and `--dry-run`
//! ([`dry_run`]). Their visitors live in the tree layer; this only drives them.

use super::local::walk;
use crate::options::Options;
use crate::report::{Control, Observer, Reporter, Summary};
use crate::tree::{CopyPair, DryRun, ScanVisitor, Totals, dry_run_roots, scan_roots, walk_options};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

/// Counts the entries, files and bytes a copy of `pairs` would handle, for a progress bar.
/// Meant to run on its own thread beside the copy; it stops early when `control` is stopped.
/// The walk is parallel, with `opts.jobs` workers.
pub fn scan(pairs: &[CopyPair], opts: &Options, totals: &Totals, control: &Control) {
    let (roots, items) = scan_roots(pairs, opts);
    walk(
        &roots,
        &walk_options(opts),
        &ScanVisitor(totals),
        control,
        items,
    );
    totals.complete.store(true, Relaxed);
}

/// Reports what a copy of `pairs` would create, replace, skip, merge or refuse, and changes
/// nothing. Each entry is an [`Event::Planned`](crate::Event::Planned) (or
/// [`Event::Failed`](crate::Event::Failed) for a refusal), decided by the same rule the copy
/// uses. The walk is parallel, so entries are reported in no fixed order, each directory
/// before the entries below it.
pub fn dry_run(pairs: &[CopyPair], opts: &Options, observer: &dyn Observer) -> Summary {
    let start = Instant::now();
    let control = Control::new();
    let report = Reporter::new(observer, &control);
    let (roots, walk_roots, items) = dry_run_roots(pairs, opts, &report);
    let visitor = DryRun::new(opts, &report, roots, &walk_roots);
    walk(&walk_roots, &walk_options(opts), &visitor, &control, items);
    report.finish(start.elapsed())
}
