//! Tests of the testkit itself: the comparer must see each kind of
//! difference, the generator must be reproducible, and GNU `cp -a` (the
//! oracle) must compare equal on every loop filesystem.

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use mimeo_testkit::treegen::join_bytes;
use mimeo_testkit::{
    CompareOptions, Field, FsKind, GenOptions, LoopFs, compare_trees, generate, run_ok, sharing,
};
use rustix::fs::{AtFlags, CWD, Timespec, Timestamps, XattrFlags};

/// A small tree with a file, a hard-link pair, a symlink and a directory.
fn sample(root: &Path) {
    fs::create_dir_all(root.join("sub")).unwrap();
    fs::write(root.join("a"), b"hello").unwrap();
    fs::hard_link(root.join("a"), root.join("sub/a-link")).unwrap();
    fs::write(root.join("b"), b"world").unwrap();
    symlink("a", root.join("ln")).unwrap();
    fs::write(join_bytes(root, b"\xff\xfe name"), b"x").unwrap();
    let t = sample_times(8);
    // Every entry gets fixed times, or two samples made a clock tick apart would differ.
    let odd = join_bytes(root, b"\xff\xfe name");
    for p in ["a", "b", "ln", "sub", ""]
        .map(|p| root.join(p))
        .iter()
        .chain([&odd])
    {
        rustix::fs::utimensat(CWD, p, &t, AtFlags::SYMLINK_NOFOLLOW).unwrap();
    }
}

/// The atime (5 s + 6 ns) and mtime (7 s + `mtime_ns`) of the sample
/// entries.
fn sample_times(mtime_ns: i64) -> Timestamps {
    let at = |tv_sec, tv_nsec| Timespec { tv_sec, tv_nsec };
    Timestamps {
        last_access: at(5, 6),
        last_modification: at(7, mtime_ns),
    }
}

/// Two identical sample trees in a fresh temporary directory.
fn pair() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let (l, r) = (tmp.path().join("l"), tmp.path().join("r"));
    sample(&l);
    sample(&r);
    (tmp, l, r)
}

fn fields(l: &Path, r: &Path) -> Vec<(String, Field)> {
    let c = compare_trees(l, r, &CompareOptions::default()).unwrap();
    c.differences
        .iter()
        .map(|d| (d.path.to_string_lossy().into_owned(), d.field))
        .collect()
}

#[test]
fn equal_trees_compare_equal() {
    let (_tmp, l, r) = pair();
    let c = compare_trees(&l, &r, &CompareOptions::default()).unwrap();
    c.assert_equal();
    assert_eq!(c.entries, 7);
}

#[test]
fn reports_mtime_with_nanoseconds() {
    let (_tmp, l, r) = pair();
    let t = sample_times(9);
    rustix::fs::utimensat(CWD, r.join("b"), &t, AtFlags::empty()).unwrap();
    assert_eq!(fields(&l, &r), [("b".into(), Field::Mtime)]);
}

#[test]
fn reports_symlink_times_and_target() {
    let (_tmp, l, r) = pair();
    fs::remove_file(r.join("ln")).unwrap();
    symlink("b", r.join("ln")).unwrap();
    let f = fields(&l, &r);
    assert!(f.contains(&("ln".into(), Field::Target)), "{f:?}");
    assert!(f.contains(&("ln".into(), Field::Mtime)), "{f:?}");
}

#[test]
fn reports_mode_including_set_id_bits() {
    let (_tmp, l, r) = pair();
    fs::set_permissions(l.join("b"), fs::Permissions::from_mode(0o4755)).unwrap();
    fs::set_permissions(r.join("b"), fs::Permissions::from_mode(0o755)).unwrap();
    let c = compare_trees(&l, &r, &CompareOptions::default()).unwrap();
    let d = c.of(Field::Mode);
    assert_eq!(d.len(), 1, "{c}");
    assert_eq!((d[0].left.as_str(), d[0].right.as_str()), ("4755", "0755"));
}

#[test]
fn reports_xattr_value_and_absence() {
    let (_tmp, l, r) = pair();
    let set = |p: &Path, v: &[u8]| {
        rustix::fs::lsetxattr(p, "user.k", v, XattrFlags::empty()).unwrap();
    };
    set(&l.join("a"), b"1");
    set(&r.join("a"), b"2");
    set(&l.join("b"), b"only left");
    let f = fields(&l, &r);
    let want = [
        ("a".into(), Field::Xattr),
        ("b".into(), Field::Xattr),
        ("sub/a-link".into(), Field::Xattr), // the hard link to "a"
    ];
    assert_eq!(f, want);
}

#[test]
fn reports_broken_hard_link_group() {
    let (_tmp, l, r) = pair();
    // Same bytes and times, but no longer the same inode.
    let link = r.join("sub/a-link");
    fs::remove_file(&link).unwrap();
    fs::write(&link, b"hello").unwrap();
    let t = sample_times(8);
    for p in [&link, &r.join("sub")] {
        rustix::fs::utimensat(CWD, p, &t, AtFlags::empty()).unwrap();
    }
    let c = compare_trees(&l, &r, &CompareOptions::default()).unwrap();
    assert_eq!(c.differences.len(), 1, "{c}");
    assert_eq!(c.differences[0].field, Field::HardLinks);
}

#[test]
fn reports_content_presence_and_type() {
    let (_tmp, l, r) = pair();
    fs::write(r.join("a"), b"hellO").unwrap(); // also the hard link
    fs::remove_file(r.join("b")).unwrap();
    fs::create_dir(r.join("b")).unwrap();
    fs::write(l.join("only-left"), b"").unwrap();
    let f = fields(&l, &r);
    for want in [
        ("a", Field::Content),
        ("sub/a-link", Field::Content),
        ("b", Field::Type),
        ("only-left", Field::Presence),
    ] {
        assert!(
            f.contains(&(want.0.into(), want.1)),
            "{want:?} not in {f:?}"
        );
    }
}

#[test]
fn non_utf8_names_are_compared() {
    let (_tmp, l, r) = pair();
    fs::write(join_bytes(&r, b"\xff\xfe name"), b"y").unwrap();
    let c = compare_trees(&l, &r, &CompareOptions::default()).unwrap();
    assert_eq!(c.of(Field::Content).len(), 1, "{c}");
}

#[test]
fn generator_is_deterministic_for_a_seed() {
    let tmp = tempfile::tempdir().unwrap();
    let opts = GenOptions::new(42, 300);
    let a = generate(&tmp.path().join("a"), &opts).unwrap();
    let b = generate(&tmp.path().join("b"), &opts).unwrap();
    assert_eq!(a, b);
    assert!(
        a.files > 0 && a.dirs > 0 && a.symlinks > 0 && a.specials > 0,
        "{a:?}"
    );
    let c = compare_trees(
        &tmp.path().join("a"),
        &tmp.path().join("b"),
        &CompareOptions::default(),
    );
    c.unwrap().assert_equal();

    let other = generate(&tmp.path().join("c"), &GenOptions::new(43, 300)).unwrap();
    let c = compare_trees(
        &tmp.path().join("a"),
        &tmp.path().join("c"),
        &CompareOptions::default(),
    );
    assert!(
        !c.unwrap().is_equal(),
        "seeds 42 and 43 gave equal trees: {other:?}"
    );
}

/// GNU `cp -a` must reproduce a generated tree exactly; otherwise the
/// oracle (or the comparer) is broken, not mimeo.
#[test]
fn cp_archive_of_generated_tree_compares_equal() {
    for kind in FsKind::ALL {
        let Some(fs) = LoopFs::try_new(kind, 512) else {
            continue;
        };
        let (src, dst) = (fs.path().join("src"), fs.path().join("dst"));
        let stats = generate(&src, &GenOptions::new(7, 400)).unwrap();
        assert!(stats.hard_links > 0 && stats.specials > 0, "{stats:?}");
        run_ok("cp", &["-a".as_ref(), src.as_os_str(), dst.as_os_str()]);
        let opts = CompareOptions {
            blocks_le: true,
            ..CompareOptions::default()
        };
        let c = compare_trees(&src, &dst, &opts).unwrap();
        assert!(c.is_equal(), "{kind}: {c}");
        assert!(c.entries > 400, "{kind}: only {} entries", c.entries);
    }
}

/// FIEMAP sees a reflink copy as shared and a plain copy as not.
#[test]
fn fiemap_detects_shared_extents() {
    for kind in [FsKind::Btrfs, FsKind::Xfs] {
        let Some(fs) = LoopFs::try_new(kind, 300) else {
            continue;
        };
        let src = fs.path().join("src");
        fs::write(&src, vec![7u8; 1 << 20]).unwrap();
        for (flag, shared) in [("--reflink=always", true), ("--reflink=never", false)] {
            let dst = fs.path().join(flag);
            run_ok("cp", &[flag.as_ref(), src.as_os_str(), dst.as_os_str()]);
            let s = sharing(&dst).unwrap();
            assert!(s.extents > 0, "{kind} {flag}: no extents");
            assert_eq!(s.fully_shared(), shared, "{kind} {flag}: {s:?}");
            assert_eq!(s.shared == 0, !shared, "{kind} {flag}: {s:?}");
        }
    }
}

/// The fd-relative walk compares trees far deeper than `PATH_MAX`.
#[test]
fn trees_deeper_than_path_max_are_compared() {
    let tmp = tempfile::tempdir().unwrap();
    let (l, r, s) = (
        tmp.path().join("l"),
        tmp.path().join("r"),
        tmp.path().join("s"),
    );
    mimeo_testkit::gen_deep(&l, 3000, "dd").unwrap();
    mimeo_testkit::gen_deep(&r, 3000, "dd").unwrap();
    mimeo_testkit::gen_deep(&s, 3001, "dd").unwrap();
    // Created at different moments: compare everything but the times.
    let opts = CompareOptions {
        atime: false,
        mtime: false,
        ..CompareOptions::default()
    };
    let c = compare_trees(&l, &r, &opts).unwrap();
    c.assert_equal();
    assert!(c.entries > 3000 + 3000 / 64, "{c}");
    let c = compare_trees(&l, &s, &opts).unwrap();
    // Level 3000 holds `f` and `up` on the left and `dd` on the right.
    let found: Vec<(usize, Field)> = c
        .differences
        .iter()
        .map(|d| (d.path.components().count(), d.field))
        .collect();
    assert_eq!(
        found,
        vec![(3001, Field::Presence); 3],
        "{}",
        c.differences.len()
    );
}

/// The fuzzer's judges find the destination where options follow it on the command line
/// (GNU getopt permutes), not in the last argument.
#[test]
fn the_destination_is_found_where_options_follow_it() {
    use mimeo_testkit::compare::{Difference, Field};
    use mimeo_testkit::fuzz::case::{DestState, Plan};
    use mimeo_testkit::fuzz::{Outcome, allow, exec::Ran};
    let args = ["-R", "f", "s/x", "--reflink=never"];
    let plan = Plan {
        tool: "cp",
        seed: 0,
        args: args.iter().map(Into::into).collect(),
        env: Vec::new(),
        opts: vec!["recursive", "reflink"],
        dest: DestState::InsideSource,
        target: "s/x".into(),
        sources: vec!["f".into()],
        feed: None,
        drains: Vec::new(),
        odd_dirs: false,
        place: "/p/case".into(),
    };
    let (old, now) = ("1709407231.595617531", "1795736438.181929316");
    let diff = |path: &str, field| Difference {
        path: path.into(),
        field,
        left: old.into(),
        right: now.into(),
    };
    let ran = Ran {
        code: Some(0),
        ..Ran::default()
    };
    let mut o = Outcome {
        plan,
        cp: ran.clone(),
        ours: ran,
        tree: vec![diff("s", Field::Mtime), diff("s/x", Field::Atime)],
        through: Vec::new(),
        regular: Vec::new(),
        target_leads: None,
        source_leads: Vec::new(),
    };
    let entry = allow::ALLOWLIST
        .iter()
        .find(|a| a.name == "replaced-file-times")
        .unwrap();
    assert!((entry.apply)(&mut o));
    assert_eq!(o.tree, Vec::new());
}

/// cp 9.1's simple backup in the working directory, against mimeo's beside the file: the
/// allowlist takes out the pair and the working directory's time, and nothing else.
#[test]
fn a_simple_backup_in_the_working_directory_is_allowed() {
    use mimeo_testkit::compare::{Difference, Field};
    use mimeo_testkit::fuzz::case::{DestState, Plan};
    use mimeo_testkit::fuzz::{Outcome, allow, exec::Ran};
    let plan = Plan {
        tool: "cp",
        seed: 0,
        args: ["--backup=never", "s/x", "d"]
            .iter()
            .map(Into::into)
            .collect(),
        env: Vec::new(),
        opts: vec!["backup"],
        dest: DestState::Dir,
        target: "d".into(),
        sources: vec!["s/x".into()],
        feed: None,
        drains: Vec::new(),
        odd_dirs: false,
        place: "/p/case".into(),
    };
    let diff = |path: &str, field, left: &str, right: &str| Difference {
        path: path.into(),
        field,
        left: left.into(),
        right: right.into(),
    };
    let ran = Ran {
        code: Some(0),
        ..Ran::default()
    };
    let other = diff("d/x", Field::Content, "a", "b");
    let mut o = Outcome {
        plan,
        cp: ran.clone(),
        ours: ran,
        tree: vec![
            diff(
                "",
                Field::Mtime,
                "1795738240.278606006",
                "1500000000.000000000",
            ),
            diff("d/x~", Field::Presence, "absent", "file"),
            diff("x~", Field::Presence, "file", "absent"),
            other.clone(),
        ],
        through: Vec::new(),
        regular: Vec::new(),
        target_leads: None,
        source_leads: Vec::new(),
    };
    let entry = allow::ALLOWLIST
        .iter()
        .find(|a| a.name == "simple-backup-in-place")
        .unwrap();
    assert!((entry.apply)(&mut o));
    assert_eq!(o.tree, vec![other]);
}

/// `-S` makes backups in cp as `-b` does: a refused relative `-s` link under `-S` gives the
/// directory cp's new time (its backup and back), which the allowlist takes out.
#[test]
fn a_refused_relative_link_with_a_suffix_alone_is_allowed() {
    use mimeo_testkit::compare::{Difference, Field};
    use mimeo_testkit::fuzz::case::{DestState, Plan};
    use mimeo_testkit::fuzz::{Outcome, allow, exec::Ran};
    let plan = Plan {
        tool: "cp",
        seed: 0,
        args: ["-S", ".x", "-s", "-R", "lf", "d"]
            .iter()
            .map(Into::into)
            .collect(),
        env: Vec::new(),
        opts: vec!["suffix", "symbolic-link", "R"],
        dest: DestState::Dir,
        target: "d".into(),
        sources: vec!["lf".into()],
        feed: None,
        drains: Vec::new(),
        odd_dirs: false,
        place: "/p/case".into(),
    };
    let ran = Ran {
        code: Some(1),
        stderr: "cp: d/lf: can make relative symbolic links only in current directory\n".into(),
        ..Ran::default()
    };
    let mut o = Outcome {
        plan,
        cp: ran.clone(),
        ours: ran,
        tree: vec![Difference {
            path: "d".into(),
            field: Field::Mtime,
            left: "1795749932.680892034".into(),
            right: "1500000000.000000000".into(),
        }],
        through: Vec::new(),
        regular: Vec::new(),
        target_leads: None,
        source_leads: Vec::new(),
    };
    let entry = allow::ALLOWLIST
        .iter()
        .find(|a| a.name == "relative-symlink-backup")
        .unwrap();
    assert!((entry.apply)(&mut o));
    assert_eq!(o.tree, Vec::new());
}
