//! The oracles the tests share: "no half files that look whole" (docs/guarantees.md
//! §5) and tree
//! equality, so that every test judges a copy by the same rules.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::compare::{CompareOptions, compare_trees, first_difference};

/// Whether `name` is one of mimeo's own scratch entries: a temporary (`.mimeo-….tmp`) or an
/// in-progress marker (`.mimeo-….partial`).
pub fn is_scratch(name: &OsStr) -> bool {
    let b = name.as_encoded_bytes();
    b.starts_with(b".mimeo-") && (b.ends_with(b".tmp") || b.ends_with(b".partial"))
}

/// Whether the directory holding `path` carries an in-progress marker: its entries may be
/// incomplete (a killed run was writing them), which `--update` must then finish.
pub fn in_marked_dir(path: &Path) -> bool {
    let Some(dir) = path.parent() else {
        return false;
    };
    fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let n = e.file_name();
            is_scratch(&n) && n.as_encoded_bytes().ends_with(b".partial")
        })
    })
}

/// The state of one destination file relative to its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    /// Not there.
    Absent,
    /// Marked incomplete: the mark of a file copied on its own (the xattr
    /// `user.mimeo.incomplete`), a sticky bit that the source lacks, or an in-progress marker
    /// in its directory while it differs from the source.
    Incomplete,
    /// Same bytes, size and permission bits as the source.
    Complete,
    /// Looks finished but is not the source: what the oracle hunts.
    Wrong(String),
}

/// Judges the destination file `dst` against its source `src`.
pub fn file_state(src: &Path, dst: &Path) -> FileState {
    let Ok(d) = fs::symlink_metadata(dst) else {
        return FileState::Absent;
    };
    let s = fs::symlink_metadata(src).unwrap_or_else(|e| panic!("lstat {src:?}: {e}"));
    if d.is_file() && d.mode() & 0o1000 != 0 && s.mode() & 0o1000 == 0 {
        return FileState::Incomplete;
    }
    if d.is_file() && marked_alone(dst) {
        return FileState::Incomplete;
    }
    let wrong = if !d.is_file() {
        Some(format!("not a regular file: {:?}", d.file_type()))
    } else if d.len() != s.len() {
        Some(format!("size {} != {}", d.len(), s.len()))
    } else if d.mode() & 0o7777 != s.mode() & 0o7777 {
        Some(format!("mode {:o} != {:o}", d.mode(), s.mode()))
    } else if first_difference(src, dst, s.len()).ok().flatten().is_some() {
        Some("bytes differ".into())
    } else {
        None
    };
    match wrong {
        None => FileState::Complete,
        Some(_) if in_marked_dir(dst) => FileState::Incomplete,
        Some(why) => FileState::Wrong(why),
    }
}

/// Whether `path` carries the mark of a file copied on its own that is not complete yet
/// (docs/design.md §5).
pub fn marked_alone(path: &Path) -> bool {
    crate::compare::read_xattrs(path)
        .is_ok_and(|x| x.contains_key(OsStr::new("user.mimeo.incomplete")))
}

/// What [`no_half_files`] tolerates besides complete copies.
#[derive(Debug, Clone, Default)]
pub struct Allow<'a> {
    /// Temporaries may be left (after SIGKILL).
    pub temps: bool,
    /// Files may be marked incomplete (after SIGKILL or a failure).
    pub marked: bool,
    /// Files (relative paths) that may still hold `stale_bytes`, which the test put there.
    pub stale: Option<(&'a BTreeSet<PathBuf>, &'a [u8])>,
}

/// How the destination's regular files stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HalfFiles {
    /// Complete copies of their sources.
    pub complete: usize,
    /// Marked incomplete (allowed by [`Allow::marked`]).
    pub incomplete: usize,
}

/// docs/guarantees.md §5: every regular file below `dst` is a complete copy of its source
/// below `src`, or (as `allow` says) marked incomplete, a temporary, or untouched stale
/// content. A file that looks complete but is not is an error naming it.
pub fn no_half_files(src: &Path, dst: &Path, allow: &Allow<'_>) -> Result<HalfFiles, String> {
    let mut counts = HalfFiles {
        complete: 0,
        incomplete: 0,
    };
    for rel in regular_files(dst) {
        let path = dst.join(&rel);
        if let Some((stale, bytes)) = allow.stale {
            if stale.contains(&rel) && fs::read(&path).is_ok_and(|b| b == bytes) {
                continue;
            }
        }
        if rel.file_name().is_some_and(is_scratch) {
            if allow.temps {
                continue;
            }
            return Err(format!("temporary {rel:?} left behind"));
        }
        let orig = src.join(&rel);
        if fs::symlink_metadata(&orig).is_err() {
            // Its source is gone (a test removed it while the copy ran): nothing to judge by.
            continue;
        }
        match file_state(&orig, &path) {
            FileState::Complete => counts.complete += 1,
            FileState::Absent => {}
            FileState::Incomplete if allow.marked => counts.incomplete += 1,
            FileState::Incomplete => return Err(format!("{rel:?} is marked incomplete")),
            FileState::Wrong(why) => {
                return Err(format!("{rel:?} looks complete but is not: {why}"));
            }
        }
    }
    Ok(counts)
}

/// The regular files below `root`, as paths relative to it (symlinks not followed).
pub fn regular_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        let Ok(list) = fs::read_dir(root.join(&rel)) else {
            continue;
        };
        for e in list.flatten() {
            let rel = rel.join(e.file_name());
            let Ok(m) = fs::symlink_metadata(root.join(&rel)) else {
                continue;
            };
            if m.is_dir() {
                todo.push(rel);
            } else if m.is_file() {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

/// Asserts that `right` equals `left` in every field `opts` compares, naming `what` made it.
#[track_caller]
pub fn assert_trees_equal(what: &str, left: &Path, right: &Path, opts: &CompareOptions) {
    let c = compare_trees(left, right, opts)
        .unwrap_or_else(|e| panic!("{what}: comparing {left:?} with {right:?}: {e}"));
    assert!(
        c.is_equal(),
        "{what}: {right:?} differs from {left:?}:\n{c}"
    );
}

/// [`assert_trees_equal`] with [`CompareOptions::archive`]: what `cp -a` keeps.
#[track_caller]
pub fn assert_archive_equal(what: &str, left: &Path, right: &Path) {
    assert_trees_equal(what, left, right, &CompareOptions::archive());
}
