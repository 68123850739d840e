//! A device number is reused by whatever is mounted next. What one run learned about a device
//! (that it cannot clone) must not deny clones to a later filesystem on the same number.
//!
//! Alone in its test binary, so that no other test takes loop devices meanwhile: after the
//! ext4 image is unmounted, the next loop mount gets its device number back.

mod util;

use std::os::unix::fs::MetadataExt;
use std::thread;
use std::time::Duration;

use mimeo::{Method, Options};
use mimeo_testkit::FsKind;
use util::{assert_same_bytes, meta, random_file, scratch};

#[test]
fn a_reused_device_number_is_not_taken_for_a_filesystem_that_cannot_clone() {
    let opts = Options::default();
    let ext4_dev = {
        let Some(ext4) = scratch(FsKind::Ext4) else {
            return;
        };
        let (src, dst) = (ext4.path().join("src"), ext4.path().join("dst"));
        random_file(&src, 50_000);
        let out = mimeo::copy_file(&src, &dst, &opts).unwrap();
        assert_eq!(out.method, Method::Offload);
        meta(&src).dev()
    };
    // The ext4 image is unmounted and its loop device freed; the next one may take a moment.
    for attempt in 0..10 {
        let Some(xfs) = scratch(FsKind::Xfs) else {
            return;
        };
        let (src, dst) = (xfs.path().join("src"), xfs.path().join("dst"));
        random_file(&src, 50_000);
        if meta(&src).dev() != ext4_dev {
            drop(xfs);
            thread::sleep(Duration::from_millis(100 * (attempt + 1)));
            continue;
        }
        let out = mimeo::copy_file(&src, &dst, &opts).unwrap();
        assert_eq!(out.method, Method::Clone, "XFS on ext4's old device number");
        assert_same_bytes(&src, &dst);
        return;
    }
    panic!("the XFS image never got the ext4 image's device number back, so nothing was tested");
}
