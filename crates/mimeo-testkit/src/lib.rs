//! Test and benchmark tooling for mimeo.
//!
//! - [`fsimg`]: loop-mounted btrfs, XFS and ext4 scratch filesystems.
//! - [`treegen`]: seeded generators for tricky trees and bulk trees (named
//!   so because `gen` is a reserved word in Rust 2024).
//! - [`compare`]: a tree comparer reporting every metadata or data difference.
//! - [`extents`]: FIEMAP sharing checks and `st_blocks`.
//! - [`files`]: files of seeded content with holes, and byte-level assertions.
//! - [`mutate`]: mmap stores, range clones, writeback by hand, cached pages, device reads.
//! - [`oracle`]: the shared oracles: no half files that look whole, trees equal.
//! - [`cmd`]: running helper programs with captured output.
//! - [`fuzz`]: differential fuzzers: mimeo as `cp` against GNU cp, `mimeo-cat` against `cat`.
//! - [`space`]: trees with shared extents, and the space numbers they must give
//!   (`btrfs filesystem du`, and a FIEMAP pass of our own).

pub mod cmd;
pub mod compare;
pub mod extents;
pub mod files;
pub mod fsimg;
pub mod fuzz;
pub mod golden;
pub mod mutate;
pub mod oracle;
pub mod rng;
pub mod space;
pub mod treegen;

pub use cmd::{Captured, as_user, capture, run_ok};
pub use compare::{CompareOptions, Comparison, Difference, Field, compare_trees};
pub use extents::{Sharing, sharing, st_blocks};
pub use fsimg::{FsKind, LoopFs};
pub use treegen::{GenOptions, GenStats, gen_deep, gen_empty, gen_small, generate};
