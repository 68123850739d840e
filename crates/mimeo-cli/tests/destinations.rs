//! What mimeo does with an existing destination that cp treats specially, with GNU cp as the
//! oracle: a copy onto the same file (through symlinks and hard links) is refused, and a
//! regular file copied onto a FIFO or device node is written into it.
//!
//! Each differential case builds the same entries in two directories, runs cp in one and
//! mimeo in the other with the same arguments, and compares the exit status, the message
//! and the resulting entries.

mod util;

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use mimeo_testkit::{FsKind, run_ok};
use util::tree::{cp_in, mimeo_timed, run_timed};
use util::{random_file, run_in, scratch};

/// One entry as the comparison sees it: type, permission bits and content (file bytes or
/// symlink target; nothing for nodes).
type Entry = (&'static str, u32, Vec<u8>);

/// Every entry below `dir`, by relative path.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Entry> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = fs::symlink_metadata(&p).unwrap();
            let t = m.file_type();
            let perm = m.permissions().mode() & 0o7777;
            let entry = if t.is_symlink() {
                let target = fs::read_link(&p).unwrap();
                ("symlink", 0, target.into_os_string().into_encoded_bytes())
            } else if t.is_dir() {
                stack.push(p.clone());
                ("dir", perm, Vec::new())
            } else if t.is_file() {
                ("file", perm, fs::read(&p).unwrap())
            } else if t.is_fifo() {
                ("fifo", perm, Vec::new())
            } else {
                ("node", perm, Vec::new())
            };
            out.insert(p.strip_prefix(dir).unwrap().to_path_buf(), entry);
        }
    }
    out
}

/// Builds `setup` in a fresh directory for cp and one for mimeo under `base`, runs both with
/// `args` there, and asserts the same outcome.
#[track_caller]
fn same_as_cp(base: &Path, case: &str, setup: &dyn Fn(&Path), args: &[&str]) {
    let (with_cp, with_mimeo) = (
        base.join(format!("{case}-cp")),
        base.join(format!("{case}-mimeo")),
    );
    for d in [&with_cp, &with_mimeo] {
        fs::create_dir(d).unwrap();
        setup(d);
    }
    let cp = cp_in(Some(&with_cp), args);
    let mimeo = run_in(Some(&with_mimeo), args);
    let what = format!("{case}: `{}`\ncp: {cp}\nmimeo: {mimeo:#?}", args.join(" "));
    assert_eq!(cp.success(), mimeo.code == 0, "exit status differs: {what}");
    assert_eq!(
        cp.stderr.replace("cp: ", ""),
        mimeo.stderr.replace("mimeo: ", ""),
        "messages differ: {what}"
    );
    assert_eq!(
        snapshot(&with_cp),
        snapshot(&with_mimeo),
        "results differ: {what}"
    );
}

/// `foo` holding data and a symlink `l` to it.
fn file_and_link(d: &Path) {
    fs::write(d.join("foo"), b"data\n").unwrap();
    symlink("foo", d.join("l")).unwrap();
}

#[test]
fn a_copy_onto_the_same_file_is_refused_through_symlinks_and_hard_links() {
    for kind in FsKind::ALL {
        let Some(fs) = scratch(kind) else { continue };
        let base = fs.path();
        // A source symlink onto its own target: the data would be replaced by a link to itself.
        for (i, flags) in [&["-a"][..], &["-P"], &["-d"], &["-L"], &["-H"], &[]]
            .iter()
            .enumerate()
        {
            let mut args = flags.to_vec();
            args.extend(["l", "foo"]);
            same_as_cp(
                base,
                &format!("link-onto-target-{i}"),
                &file_and_link,
                &args,
            );
        }
        // A source onto a destination symlink that points to it.
        same_as_cp(
            base,
            "onto-link-to-source",
            &file_and_link,
            &["-a", "foo", "l"],
        );
        // Two symlinks to one file: one replaces the other, nothing is lost.
        let two_links = |d: &Path| {
            file_and_link(d);
            symlink("foo", d.join("l2")).unwrap();
        };
        same_as_cp(base, "link-onto-link", &two_links, &["-a", "l", "l2"]);
        // Hard links of one file.
        let hard = |d: &Path| {
            fs::write(d.join("foo"), b"data\n").unwrap();
            fs::hard_link(d.join("foo"), d.join("hard")).unwrap();
        };
        same_as_cp(base, "hard-link", &hard, &["-a", "foo", "hard"]);
        // Inside a tree: the source tree holds a symlink to the file it would replace.
        let tree = |d: &Path| {
            fs::create_dir_all(d.join("s")).unwrap();
            fs::create_dir_all(d.join("t")).unwrap();
            fs::write(d.join("t/x"), b"precious\n").unwrap();
            symlink("../t/x", d.join("s/x")).unwrap();
            fs::write(d.join("s/y"), b"y\n").unwrap();
        };
        same_as_cp(base, "tree-link-to-destination", &tree, &["-a", "s/.", "t"]);
        same_as_cp(
            base,
            "tree-link-to-destination-r",
            &tree,
            &["-r", "s/.", "t"],
        );
        assert_eq!(
            fs::read(base.join("tree-link-to-destination-mimeo/t/x")).unwrap(),
            b"precious\n"
        );
    }
}

/// A FIFO `p` and a file `f` to copy onto it.
fn file_and_fifo(d: &Path) {
    fs::write(d.join("f"), b"through the pipe\n").unwrap();
    fs::set_permissions(d.join("f"), fs::Permissions::from_mode(0o640)).unwrap();
    run_ok(
        "touch",
        &["-d", "2001-02-03 04:05:06.7", d.join("f").to_str().unwrap()],
    );
    run_ok("mkfifo", &["-m", "600", d.join("p").to_str().unwrap()]);
}

/// Reads the FIFO `p` to its end on a thread; the receiver gets what was read. A FIFO that
/// nobody ever writes leaves the thread blocked, so wait on the receiver with a time limit.
fn drain(p: PathBuf) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut v = Vec::new();
        fs::File::open(p).unwrap().read_to_end(&mut v).unwrap();
        let _ = tx.send(v);
    });
    rx
}

#[test]
fn a_file_copied_onto_a_fifo_is_written_into_it_like_cp() {
    for kind in FsKind::ALL {
        let Some(fs) = scratch(kind) else { continue };
        for flags in [&[][..], &["-a"], &["-p"]] {
            let mut results = Vec::new();
            for tool in ["cp", "mimeo"] {
                let d = fs.path().join(format!("{tool}{}", flags.join("")));
                fs::create_dir(&d).unwrap();
                file_and_fifo(&d);
                let reader = drain(d.join("p"));
                let mut args = flags.to_vec();
                args.extend(["f", "p"]);
                let ok = if tool == "cp" {
                    cp_in(Some(&d), &args).success()
                } else {
                    run_in(Some(&d), &args).code == 0
                };
                let got = reader
                    .recv_timeout(Duration::from_secs(5))
                    .unwrap_or_else(|_| panic!("{kind} {tool} {flags:?}: nothing wrote into p"));
                let m = fs::symlink_metadata(d.join("p")).unwrap();
                assert!(
                    m.file_type().is_fifo(),
                    "{kind} {tool} {flags:?}: p is no longer a FIFO"
                );
                // Without -p the write itself sets the FIFO's times: compare them only when kept.
                let times = (!flags.is_empty()).then(|| (m.mtime(), m.mtime_nsec()));
                results.push((ok, got, m.mode(), times, m.uid()));
            }
            assert_eq!(results[0], results[1], "{kind} {flags:?}: cp, then mimeo");
            assert!(results[1].0);
            assert_eq!(results[1].1, b"through the pipe\n");
        }
    }
}

#[test]
fn a_file_copied_onto_device_nodes_is_written_into_them() {
    let Some(fs) = scratch(FsKind::Ext4) else {
        return;
    };
    let d = fs.path();
    // A character device: a private null device.
    fs::write(d.join("f"), b"into the void\n").unwrap();
    run_ok("mknod", &[d.join("null").to_str().unwrap(), "c", "1", "3"]);
    run_in(Some(d), &["f", "null"]).expect_code(0);
    let m = fs::symlink_metadata(d.join("null")).unwrap();
    assert!(m.file_type().is_char_device() && m.rdev() == rustix::fs::makedev(1, 3));

    // A block device: writing an image, the reason cp writes into nodes. The node is made in
    // the scratch directory so that `-a` changes its metadata, not that of /dev/loopN.
    let backing = d.join("disk");
    run_ok("truncate", &["-s", "4M", backing.to_str().unwrap()]);
    let dev = run_ok("losetup", &["--find", "--show", backing.to_str().unwrap()]);
    let dev = dev.stdout.trim().to_string();
    let rdev = fs::metadata(&dev).unwrap().rdev();
    let (major, minor) = (rustix::fs::major(rdev), rustix::fs::minor(rdev));
    run_ok(
        "mknod",
        &[
            d.join("blk").to_str().unwrap(),
            "b",
            &major.to_string(),
            &minor.to_string(),
        ],
    );
    random_file(&d.join("image"), (3 << 20) + 512);
    let copy = run_in(Some(d), &["-a", "image", "blk"]);
    run_ok("losetup", &["-d", &dev]);
    copy.expect_code(0);
    assert!(
        fs::symlink_metadata(d.join("blk"))
            .unwrap()
            .file_type()
            .is_block_device()
    );
    let image = fs::read(d.join("image")).unwrap();
    let disk = fs::read(&backing).unwrap();
    assert_eq!(
        &disk[..image.len()],
        &image[..],
        "the image is on the device"
    );
    assert_eq!(
        fs::metadata(&backing).unwrap().len(),
        4 << 20,
        "the device kept its size"
    );
}

#[test]
fn no_clobber_and_update_leave_a_fifo_unopened() {
    let Some(fs) = scratch(FsKind::Ext4) else {
        return;
    };
    let d = fs.path();
    file_and_fifo(d);
    // Nobody reads the FIFO: opening it for writing would wait for ever.
    run_timed(
        10,
        &[
            "-n",
            d.join("f").to_str().unwrap(),
            d.join("p").to_str().unwrap(),
        ],
    )
    .expect_code(0);
    // -u: the FIFO is newer than the source, so cp skips it too.
    run_timed(
        10,
        &[
            "-u",
            d.join("f").to_str().unwrap(),
            d.join("p").to_str().unwrap(),
        ],
    )
    .expect_code(0);
    assert!(
        fs::symlink_metadata(d.join("p"))
            .unwrap()
            .file_type()
            .is_fifo()
    );
}

#[test]
fn sigint_while_waiting_for_a_fifo_reader_stops_and_keeps_the_fifo() {
    let Some(fs) = scratch(FsKind::Ext4) else {
        return;
    };
    let d = fs.path();
    file_and_fifo(d);
    let mut child = mimeo_timed(
        20,
        &[d.join("f").to_str().unwrap(), d.join("p").to_str().unwrap()],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    thread::sleep(Duration::from_millis(300));
    // `timeout` runs mimeo as its child: signal mimeo itself.
    let pid = Command::new("pgrep")
        .args(["-P", &child.id().to_string()])
        .output()
        .unwrap();
    let pid = String::from_utf8(pid.stdout).unwrap().trim().to_string();
    assert!(!pid.is_empty(), "mimeo is not running");
    run_ok("kill", &["-INT", &pid]);
    let start = Instant::now();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "stopped by SIGINT");
    assert!(start.elapsed() < Duration::from_secs(2), "stopped promptly");
    assert!(
        fs::symlink_metadata(d.join("p"))
            .unwrap()
            .file_type()
            .is_fifo()
    );
}
