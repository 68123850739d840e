//! Set-id bits under `--preserve=mode` without ownership: kept when the copy was created with
//! the source's owner (as cp keeps them), dropped when it belongs to someone else
//! (docs/guarantees.md §4).

use mimeo::{CopyPair, NoObserver, Options, Preserve};
use std::os::unix::fs::{MetadataExt, PermissionsExt};

fn mode_only() -> Options {
    let mut opts = Options::default();
    opts.preserve = Preserve::default();
    opts.preserve.mode = true;
    opts
}

fn perm(path: &std::path::Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

#[test]
fn set_id_bits_stay_when_the_copy_has_the_sources_owner() {
    let dir = tempfile::tempdir().unwrap();
    let own = dir.path().join("own");
    std::fs::write(&own, b"x").unwrap();
    std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o4755)).unwrap();
    mimeo::copy_file(&own, &dir.path().join("file"), &mode_only()).unwrap();
    assert_eq!(perm(&dir.path().join("file")), 0o4755);
    let summary = mimeo::copy(
        &[CopyPair::new(&own, dir.path().join("tree"))],
        &mode_only(),
        &NoObserver,
    );
    assert_eq!(summary.errors, 0);
    assert_eq!(perm(&dir.path().join("tree")), 0o4755);
    if rustix::process::geteuid().is_root() {
        // Someone else's set-uid file becomes root's: the bits go.
        let theirs = dir.path().join("theirs");
        std::fs::write(&theirs, b"x").unwrap();
        std::os::unix::fs::chown(&theirs, Some(1234), Some(5678)).unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o6755)).unwrap();
        mimeo::copy_file(&theirs, &dir.path().join("copy"), &mode_only()).unwrap();
        assert_eq!(perm(&dir.path().join("copy")), 0o755);
    }
}
