//! Files with known content and layout, and assertions about them, for tests.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::compare::first_difference;
use crate::extents::st_blocks;
use crate::fsimg::{FsKind, LoopFs};
use crate::rng::Rng;

/// A loop filesystem of `kind` big enough for most single-file tests.
pub fn scratch(kind: FsKind) -> Option<LoopFs> {
    LoopFs::try_new(kind, kind.min_size_mib().max(300))
}

/// Writes a file of `size` bytes with seeded random data at each of the
/// `data` ranges `(offset, len)` and holes elsewhere.
pub fn sparse_file(path: &Path, size: u64, data: &[(u64, u64)]) {
    let file = File::create(path).unwrap();
    let mut rng = Rng::new(size ^ data.len() as u64);
    for &(at, len) in data {
        let mut buf = vec![0u8; len as usize];
        rng.fill(&mut buf);
        file.write_all_at(&buf, at).unwrap();
    }
    file.set_len(size).unwrap();
    file.sync_all().unwrap();
}

/// Writes `size` bytes of seeded random data.
pub fn random_file(path: &Path, size: u64) {
    sparse_file(path, size, &[(0, size)]);
}

/// Asserts that two files have the same size and bytes (reading only the
/// data segments, so huge sparse files are cheap).
#[track_caller]
pub fn assert_same_bytes(left: &Path, right: &Path) {
    let (l, r) = (meta(left), meta(right));
    assert_eq!(l.len(), r.len(), "size of {right:?} differs from {left:?}");
    let diff = first_difference(left, right, l.len()).unwrap();
    assert_eq!(
        diff, None,
        "{right:?} differs from {left:?} at byte {diff:?}"
    );
}

/// Asserts equal bytes and that the copy allocates no more blocks than
/// the source (holes were kept).
#[track_caller]
pub fn assert_sparse_copy(src: &Path, dst: &Path) {
    assert_same_bytes(src, dst);
    let (sb, db) = (st_blocks(src).unwrap(), st_blocks(dst).unwrap());
    assert!(db <= sb, "{dst:?} has {db} blocks, the source {sb}");
}

/// `lstat`, panicking with the path.
#[track_caller]
pub fn meta(path: &Path) -> std::fs::Metadata {
    std::fs::symlink_metadata(path).unwrap_or_else(|e| panic!("lstat {path:?}: {e}"))
}

/// Sorted names in `dir`: to prove no stray destination or temporary file.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}
