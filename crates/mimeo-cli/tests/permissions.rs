//! docs/guarantees.md, guarantee 4, against GNU cp 9.1 on btrfs, XFS and ext4:
//!
//! - A file being written gives nobody but its owner access until its final owner, group and
//!   ACL are in place (GNU's tests/cp/file-perm-race.sh and its relatives): the file is
//!   looked at while the copy waits on a FIFO source read with `--copy-contents`.
//! - A source directory that cannot be listed or searched is copied as cp copies it when
//!   run by an unprivileged user: the same messages and exit status, and its copy with the
//!   same mode and times; a destination directory the user may not list, merged into, gets
//!   its times and mode as cp gives them by name.

mod util;

use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt, chown, symlink};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mimeo_testkit::compare::{CompareOptions, compare_trees, read_xattrs};
use mimeo_testkit::treegen::{FOREIGN_GID, FOREIGN_UID};
use mimeo_testkit::{FsKind, run_ok};

/// The mode, owner and group of a file seen while it was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    mode: u32,
    uid: u32,
    gid: u32,
}

/// The entry of `dir` that is being written: `name` itself or a temporary, once it holds
/// what the writer sent (an existing file's old bytes do not count).
fn being_written(dir: &Path, name: &str) -> Option<Seen> {
    for e in fs::read_dir(dir).ok()?.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n != name && !n.starts_with(".mimeo-") {
            continue;
        }
        let bytes = fs::read(e.path()).unwrap_or_default();
        if bytes.starts_with(b"foo\n") {
            let m = fs::symlink_metadata(e.path()).ok()?;
            return Some(Seen {
                mode: m.mode() & 0o7777,
                uid: m.uid(),
                gid: m.gid(),
            });
        }
    }
    None
}

/// Runs `program args` in `dir` with the FIFO `dir/fifo` as a source, feeds it lines until
/// `dir/watch` (or its temporary) holds some, looks at it, then ends the input. Returns
/// what was seen and whether the program succeeded.
fn watch_while_written(program: &Path, dir: &Path, args: &[&str], watch: &str) -> (Seen, bool) {
    let child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut fifo = fs::OpenOptions::new()
        .write(true)
        .open(dir.join("fifo"))
        .unwrap();
    let watched = dir.join(watch);
    let (parent, name) = (
        watched.parent().unwrap().to_owned(),
        watched.file_name().unwrap().to_string_lossy().into_owned(),
    );
    let start = Instant::now();
    let seen = loop {
        fifo.write_all(b"foo\n").unwrap();
        if let Some(s) = being_written(&parent, &name) {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{program:?} {args:?}: nothing written to {watch}"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    drop(fifo);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.is_empty(), "{program:?} {args:?}: {stderr}");
    (seen, out.status.success())
}

/// A FIFO source case: `setup` builds the same entries (with the FIFO `fifo`) in a
/// directory for cp and one for mimeo; both run `args` while `watch` is looked at. The
/// results must be the same; returns what was seen (cp's, mimeo's) and mimeo's final mode,
/// owner and group of `watch`.
fn fifo_case(
    base: &Path,
    case: &str,
    setup: &dyn Fn(&Path),
    args: &[&str],
    watch: &str,
) -> [Seen; 3] {
    let dirs = [
        base.join(format!("{case}-cp")),
        base.join(format!("{case}-mimeo")),
    ];
    for d in &dirs {
        fs::create_dir(d).unwrap();
        run_ok("mkfifo", &["-m", "644", d.join("fifo").to_str().unwrap()]);
        setup(d);
    }
    let link = dirs[1].join("cp");
    symlink(util::mimeo().get_program(), &link).unwrap();
    // `-c SCRIPT` first: the programs run through `sh -c SCRIPT PROGRAM ARGS…`.
    let (cp, ours) = match args {
        ["-c", script, rest @ ..] => {
            let sh = Path::new("sh");
            let [cp_args, our_args] = ["/bin/cp", link.to_str().unwrap()].map(|program| {
                let mut all = vec!["-c", script, program];
                all.extend_from_slice(rest);
                all
            });
            (
                watch_while_written(sh, &dirs[0], &cp_args, watch),
                watch_while_written(sh, &dirs[1], &our_args, watch),
            )
        }
        _ => (
            watch_while_written(Path::new("/bin/cp"), &dirs[0], args, watch),
            watch_while_written(&link, &dirs[1], args, watch),
        ),
    };
    assert_eq!(cp.1, ours.1, "{case}: exit status differs");
    // How much was written depends on timing; mode, owner and ACL do not.
    let [cp_fin, fin] = [&dirs[0], &dirs[1]].map(|d| {
        let m = fs::symlink_metadata(d.join(watch)).unwrap();
        let seen = Seen {
            mode: m.mode() & 0o7777,
            uid: m.uid(),
            gid: m.gid(),
        };
        (seen, read_xattrs(&d.join(watch)).unwrap())
    });
    assert_eq!(cp_fin, fin, "{case}: results differ");
    let fin = fin.0;
    [cp.0, ours.0, fin]
}

/// Guarantee 4 for what was seen: no more access than the final mode, and none beyond the
/// owner unless the owner and group were already the final ones.
#[track_caller]
fn no_window(case: &str, seen: Seen, fin: Seen) {
    let (perm, final_perm) = (seen.mode & 0o777, fin.mode & 0o777);
    assert_eq!(
        perm & !final_perm,
        0,
        "{case}: {seen:?} gives more than {fin:?}"
    );
    if (seen.uid, seen.gid) != (fin.uid, fin.gid) {
        assert_eq!(perm & 0o077, 0, "{case}: {seen:?} before it became {fin:?}");
    }
}

fn setfacl(args: &[&str], path: &Path) {
    let mut all = args.to_vec();
    all.push(path.to_str().unwrap());
    run_ok("setfacl", &all);
}

#[test]
fn a_file_being_written_gives_only_its_owner_access_as_cp_does() {
    for kind in FsKind::ALL {
        let Some(fs) = util::scratch(kind) else {
            continue;
        };
        eprintln!("on {kind}");
        let base = fs.path();
        // GNU's file-perm-race.sh: `ls -l` shows `-???------` while the copy is written, under
        // several umasks and source modes. mimeo's copy shows what cp's does; what marks it
        // incomplete (guarantee 5) is an xattr, which `ls -l` does not show.
        for (i, (umask, fifo_mode)) in [(0o022, 0o644), (0o000, 0o666), (0o077, 0o600)]
            .into_iter()
            .enumerate()
        {
            let chmod = |d: &Path| {
                let fifo = d.join("fifo");
                fs::set_permissions(fifo, fs::Permissions::from_mode(fifo_mode)).unwrap();
            };
            let sh = format!("umask {umask:03o}; exec \"$0\" \"$@\"");
            let race = ["-c", &sh, "-p", "--copy-contents", "fifo", "fifo-copy"];
            let case = format!("race{i}");
            let [cp, ours, fin] = fifo_case(base, &case, &chmod, &race, "fifo-copy");
            assert_eq!(cp.mode, 0o600, "cp, file-perm-race, {case}");
            assert_eq!(ours.mode, 0o600, "mimeo, file-perm-race, {case}");
            assert_eq!(fin.mode, fifo_mode, "{case}");
            no_window(&case, ours, fin);
        }

        // A tree: the source's ACL gives the owning group less than the mode's group bits
        // (the mask) say. cp and mimeo both show only the owner's bits.
        let acl = |d: &Path| {
            fs::create_dir(d.join("t")).unwrap();
            fs::rename(d.join("fifo"), d.join("t/fifo")).unwrap();
            fs::set_permissions(d.join("t/fifo"), fs::Permissions::from_mode(0o600)).unwrap();
            setfacl(&["-m", "u:nobody:r"], &d.join("t/fifo"));
            symlink("t/fifo", d.join("fifo")).unwrap();
        };
        let tree = ["-pR", "--copy-contents", "t", "u"];
        let [cp, ours, fin] = fifo_case(base, "src-acl", &acl, &tree, "u/fifo");
        assert_eq!((cp.mode, ours.mode), (0o600, 0o600), "source ACL");
        no_window("source ACL", ours, fin);

        // A default ACL of the destination, which -p takes off the copy at the end.
        let default_acl = |d: &Path| {
            acl(d);
            fs::create_dir(d.join("u")).unwrap();
            setfacl(&["-d", "-m", "u:nobody:rw"], &d.join("u"));
        };
        let into = ["-pR", "--copy-contents", "t/.", "u"];
        let [cp, ours, fin] = fifo_case(base, "default-acl", &default_acl, &into, "u/fifo");
        assert_eq!((cp.mode, ours.mode), (0o600, 0o600), "default ACL");
        no_window("default ACL", ours, fin);

        // Replacing a file with another user's, owner kept: cp writes into the old file,
        // which its group may read; mimeo's temporary is the owner's alone until the chown.
        let foreign = |d: &Path| {
            chown(d.join("fifo"), Some(FOREIGN_UID), Some(FOREIGN_GID)).unwrap();
            fs::write(d.join("old"), "old\n").unwrap();
            fs::set_permissions(d.join("old"), fs::Permissions::from_mode(0o640)).unwrap();
        };
        let owner = ["--preserve=ownership", "--copy-contents", "fifo", "old"];
        let [_, ours, fin] = fifo_case(base, "owner", &foreign, &owner, "old");
        assert_eq!(ours.mode & 0o077, 0, "owner kept: {ours:?}");
        no_window("owner kept", ours, fin);
        let [_, ours, fin] = fifo_case(
            base,
            "owner-p",
            &foreign,
            &["-p", "--copy-contents", "fifo", "old"],
            "old",
        );
        no_window("owner kept, -p", ours, fin);
    }
}

/// Writing into an existing file (`--inplace`, mimeo's own option): the chmod that marks it
/// incomplete also takes away what its final owner will not allow.
#[test]
fn a_file_written_in_place_gives_only_its_owner_access_until_its_owner_is_final() {
    let Some(fs) = util::scratch(FsKind::Ext4) else {
        return;
    };
    let d = fs.path().join("inplace");
    fs::create_dir(&d).unwrap();
    run_ok("mkfifo", &["-m", "644", d.join("fifo").to_str().unwrap()]);
    chown(d.join("fifo"), Some(FOREIGN_UID), Some(FOREIGN_GID)).unwrap();
    fs::write(d.join("old"), "old\n").unwrap();
    fs::set_permissions(d.join("old"), fs::Permissions::from_mode(0o644)).unwrap();
    let args = ["-p", "--inplace", "--copy-contents", "fifo", "old"];
    let (seen, ok) = watch_while_written(util::mimeo().get_program().as_ref(), &d, &args, "old");
    assert!(ok);
    let m = fs::metadata(d.join("old")).unwrap();
    let fin = Seen {
        mode: m.mode() & 0o7777,
        uid: m.uid(),
        gid: m.gid(),
    };
    assert_eq!(
        fin,
        Seen {
            mode: 0o644,
            uid: FOREIGN_UID,
            gid: FOREIGN_GID
        }
    );
    assert_eq!(seen.mode, 0o1600, "{seen:?}");
}

/// Runs `program args` in `dir` as an unprivileged user: exit status and sorted messages
/// with the program's name taken off.
fn as_user(program: &Path, dir: &Path, args: &[&str]) -> (Option<i32>, Vec<String>) {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .uid(FOREIGN_UID)
        .gid(FOREIGN_GID)
        .output()
        .unwrap();
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(|l| l.split_once(": ").map_or(l, |(_, rest)| rest).to_owned())
        .collect();
    lines.sort();
    (out.status.code(), lines)
}

/// A source tree with directories we may not list (311, 000) or not search (600), owned by
/// the user who copies it and by root, under `d/src`; and top-level ones of each kind.
fn unlistable_sources(d: &Path) {
    let mk = |rel: &str, mode: u32, own: bool| {
        let p = d.join(rel);
        fs::create_dir_all(p.join("sub")).unwrap();
        fs::write(p.join("f"), "f\n").unwrap();
        if own {
            for q in [p.join("sub"), p.join("f"), p.clone()] {
                chown(&q, Some(FOREIGN_UID), Some(FOREIGN_GID)).unwrap();
            }
        }
        for q in [p.join("sub"), p.join("f"), p.clone()] {
            run_ok(
                "touch",
                &["-h", "-d", "2001-02-03 04:05:06", q.to_str().unwrap()],
            );
        }
        fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
    };
    for (mode, own) in [
        (0o311, true),
        (0o000, true),
        (0o600, true),
        (0o711, false),
        (0o700, false),
    ] {
        mk(&format!("src/d{mode:o}-{own}"), mode, own);
        mk(&format!("top{mode:o}-{own}"), mode, own);
    }
    mk("src/ok", 0o755, true);
    chown(d.join("src"), Some(FOREIGN_UID), Some(FOREIGN_GID)).unwrap();
    run_ok(
        "touch",
        &["-d", "2002-03-04 05:06:07", d.join("src").to_str().unwrap()],
    );
}

#[test]
fn unreadable_and_unsearchable_source_directories_are_copied_as_cp_copies_them() {
    for kind in FsKind::ALL {
        let Some(fs) = util::scratch(kind) else {
            continue;
        };
        eprintln!("on {kind}");
        let dirs: Vec<PathBuf> = ["cp", "mimeo"].iter().map(|n| fs.path().join(n)).collect();
        for d in &dirs {
            fs::create_dir(d).unwrap();
            unlistable_sources(d);
            // The user may write here, and nowhere above.
            chown(d, Some(FOREIGN_UID), Some(FOREIGN_GID)).unwrap();
        }
        let link = dirs[1].join("cp");
        symlink(util::mimeo().get_program(), &link).unwrap();
        let mut sources: Vec<String> = vec!["src".into()];
        for (mode, own) in [
            (0o311, true),
            (0o000, true),
            (0o600, true),
            (0o711, false),
            (0o700, false),
        ] {
            sources.push(format!("top{mode:o}-{own}"));
        }
        for flag in ["-a", "-r"] {
            for s in &sources {
                let out = format!("{s}{flag}");
                let args = [flag, s.as_str(), out.as_str()];
                let cp = as_user(Path::new("/bin/cp"), &dirs[0], &args);
                let ours = as_user(&link, &dirs[1], &args);
                assert_eq!(cp, ours, "{args:?} on {kind}");
                let opts = if flag == "-a" {
                    CompareOptions::archive()
                } else {
                    CompareOptions::content_and_mode()
                };
                let (l, r) = (dirs[0].join(&out), dirs[1].join(&out));
                assert_eq!(l.exists(), r.exists(), "{args:?} on {kind}");
                if l.exists() {
                    let c = compare_trees(&l, &r, &opts).unwrap();
                    assert!(c.is_equal(), "{args:?} on {kind}:\n{c}");
                }
            }
        }
    }
}

/// A destination directory the user may not list, merged into, is completed as cp completes
/// it by name: a source merged into itself (`-n -r src/. src/.`: cp cannot list it and says
/// so once), and a copy that gives an earlier copy its source's times and mode (`-rp`).
#[test]
fn unlistable_destination_directories_merged_into_are_completed_as_cp_completes_them() {
    let cases: [&[&str]; 3] = [
        &["-n", "-r", "src/.", "src/."],
        &["-rp", "src/.", "old"],
        &["-r", "--preserve=timestamps", "src/.", "old"],
    ];
    for kind in FsKind::ALL {
        let Some(fs) = util::scratch(kind) else {
            continue;
        };
        eprintln!("on {kind}");
        for (i, args) in cases.iter().enumerate() {
            let dirs: Vec<PathBuf> = ["cp", "mimeo"]
                .iter()
                .map(|n| fs.path().join(format!("{n}{i}")))
                .collect();
            for d in &dirs {
                fs::create_dir(d).unwrap();
                unlistable_sources(d);
                // An earlier copy, with other times, that the user owns.
                run_ok(
                    "/bin/cp",
                    &[
                        "-a",
                        d.join("src").to_str().unwrap(),
                        d.join("old").to_str().unwrap(),
                    ],
                );
                run_ok(
                    "chown",
                    &[
                        "-R",
                        &format!("{FOREIGN_UID}:{FOREIGN_GID}"),
                        d.join("old").to_str().unwrap(),
                    ],
                );
                run_ok(
                    "find",
                    &[
                        d.join("old").to_str().unwrap(),
                        "-exec",
                        "touch",
                        "-h",
                        "-d",
                        "2010-01-01",
                        "{}",
                        "+",
                    ],
                );
                chown(d, Some(FOREIGN_UID), Some(FOREIGN_GID)).unwrap();
            }
            let link = dirs[1].join("cp");
            symlink(util::mimeo().get_program(), &link).unwrap();
            let cp = as_user(Path::new("/bin/cp"), &dirs[0], args);
            let ours = as_user(&link, &dirs[1], args);
            assert_eq!(cp, ours, "{args:?} on {kind}");
            fs::remove_file(&link).unwrap();
            for out in ["src", "old"] {
                let (l, r) = (dirs[0].join(out), dirs[1].join(out));
                let c = compare_trees(&l, &r, &CompareOptions::archive()).unwrap();
                assert!(c.is_equal(), "{args:?} on {kind}, {out}:\n{c}");
            }
        }
    }
}
