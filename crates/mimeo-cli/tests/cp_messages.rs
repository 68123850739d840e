//! cp 9.1's messages and `-v` lines, word for word and byte for byte, with GNU cp as the
//! oracle: how names are quoted (also in the C locale, and cp's quirks), how each failure is
//! worded, which option errors come first, and the lines `-v` prints.
//!
//! Each case builds the same entries in two directories, runs `/bin/cp` in one and mimeo
//! (through a link named `cp`) in the other, with `LC_ALL=C`, as root or as `nobody`, and
//! compares the exit status, stdout, stderr and both trees (the test kit's comparer).

mod util;

use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::time::Duration;

use mimeo_testkit::compare::{CompareOptions, compare_trees};
use mimeo_testkit::fuzz::exec::{Ran, Runner};
use mimeo_testkit::fuzz::{NOBODY, link_as, open_up};

/// A scratch directory every user can reach.
fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    open_up(dir.path()).unwrap();
    dir
}

/// Builds `setup` in `cp/` and `ours/` below `base`, runs cp and mimeo there with `args`
/// (as `user`), and asserts the same exit status, output and trees. Returns what mimeo did.
#[track_caller]
fn same_as_cp(base: &Path, setup: &dyn Fn(&Path), args: &[&OsStr], user: Option<u32>) -> Ran {
    let (cp, ours, what) = run_both(base, setup, args, user);
    same_output(&cp, &ours, &what);
    // Times are the clock's on both sides here; everything else must match.
    let opts = CompareOptions {
        atime: false,
        mtime: false,
        ..CompareOptions::default()
    };
    let diff = compare_trees(&base.join("cp"), &base.join("ours"), &opts).unwrap();
    assert!(diff.differences.is_empty(), "trees: {what}\n{diff:?}");
    ours
}

/// Runs each case as [`case_as_cp`] does (the same as cp's), and checks what mimeo said:
/// (arguments, stdout, stderr).
fn each_says(dir: &Path, setup: &dyn Fn(&Path), cases: &[(&[&str], String, String)]) {
    for (i, (args, stdout, stderr)) in cases.iter().enumerate() {
        let ours = case_as_cp(dir, i, setup, args, None);
        assert_eq!((&ours.stdout, &ours.stderr), (stdout, stderr), "{ours:?}");
    }
}

/// [`same_as_cp`] for case `i` of a test, in a directory of its own below `dir`.
#[track_caller]
fn case_as_cp(
    dir: &Path,
    i: usize,
    setup: &dyn Fn(&Path),
    args: &[&str],
    user: Option<u32>,
) -> Ran {
    let base = dir.join(i.to_string());
    fs::create_dir(&base).unwrap();
    let args: Vec<&OsStr> = args.iter().map(|a| os(a)).collect();
    same_as_cp(&base, setup, &args, user)
}

/// [`case_as_cp`] for each (arguments, user) in turn, numbered from 0.
#[track_caller]
fn cases_as_cp(dir: &Path, setup: &dyn Fn(&Path), cases: &[(&[&str], Option<u32>)]) {
    for (i, &(args, user)) in cases.iter().enumerate() {
        case_as_cp(dir, i, setup, args, user);
    }
}

/// Runs cp and mimeo as [`same_as_cp`] does; returns what each did, and a description.
fn run_both(
    base: &Path,
    setup: &dyn Fn(&Path),
    args: &[&OsStr],
    user: Option<u32>,
) -> (Ran, Ran, String) {
    let bin = link_as(base, util::mimeo().get_program().as_ref(), "cp").unwrap();
    let mut ours_path = OsString::from(&bin);
    ours_path.push(":/usr/bin:/bin");
    let args: Vec<OsString> = args.iter().map(|a| a.to_os_string()).collect();
    let mut ran = Vec::new();
    for (side, path) in [("cp", OsString::from("/usr/bin:/bin")), ("ours", ours_path)] {
        let place = base.join(side);
        fs::create_dir(&place).unwrap();
        fs::set_permissions(&place, fs::Permissions::from_mode(0o777)).unwrap();
        setup(&place);
        let runner = Runner {
            path: &path,
            user,
            timeout: Duration::from_secs(30),
        };
        ran.push(runner.run(&place, &args, &[]).unwrap());
    }
    let ours = ran.pop().unwrap();
    let cp = ran.pop().unwrap();
    let what = format!("`cp {args:?}` as {user:?}\ncp:    {cp:?}\nmimeo: {ours:?}");
    (cp, ours, what)
}

/// The same exit status, stdout (in any order of lines: -v lines come in completion order,
/// docs/cp.md) and stderr.
#[track_caller]
fn same_output(cp: &Ran, ours: &Ran, what: &str) {
    assert_eq!(cp.code, ours.code, "exit status: {what}");
    // -v lines come in completion order (docs/cp.md): the same lines, in any order.
    let sorted = |t: &str| {
        let mut l: Vec<&str> = t.split_inclusive('\n').collect();
        l.sort_unstable();
        l.concat()
    };
    assert_eq!(sorted(&cp.stdout), sorted(&ours.stdout), "stdout: {what}");
    assert_eq!(cp.stderr, ours.stderr, "stderr: {what}");
}

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

fn write(p: &Path, data: &str) {
    fs::write(p, data).unwrap();
}

/// A FIFO at `p`, mode 0644.
fn mkfifo(p: &Path) {
    let mode = rustix::fs::Mode::from_raw_mode(0o644);
    rustix::fs::mknodat(rustix::fs::CWD, p, rustix::fs::FileType::Fifo, mode, 0).unwrap();
}

/// Sets the access and modification times of `p` to `secs`.
fn set_times(p: &Path, secs: i64) {
    let t = rustix::fs::Timespec {
        tv_sec: secs,
        tv_nsec: 0,
    };
    let times = rustix::fs::Timestamps {
        last_access: t,
        last_modification: t,
    };
    rustix::fs::utimensat(rustix::fs::CWD, p, &times, rustix::fs::AtFlags::empty()).unwrap();
}

/// Gives the entries `names` of `d` (symlinks themselves) to `nobody`.
fn nobodys(d: &Path, names: &[&str]) {
    for name in names {
        let owner = Some(rustix::fs::Uid::from_raw(NOBODY));
        let flags = rustix::fs::AtFlags::SYMLINK_NOFOLLOW;
        rustix::fs::chownat(rustix::fs::CWD, d.join(name), owner, None, flags).unwrap();
    }
}

#[test]
fn names_are_quoted_byte_for_byte_as_cp_quotes_them() {
    let dir = scratch();
    // A name with a single quote that ends in an escaped byte (gnulib's second pass starts
    // in a `$'...'` part); a non-ASCII name (escaped in the C locale); a newline.
    let names: [&[u8]; 4] = [b"a'b\x01", "\u{e9}t\u{e9}".as_bytes(), b"x\ny", b"it's"];
    for (i, name) in names.into_iter().enumerate() {
        let base = dir.path().join(i.to_string());
        fs::create_dir(&base).unwrap();
        let name = OsStr::from_bytes(name);
        let setup = |d: &Path| write(&d.join(name), "x");
        // -v: the source's name is the first quoted in the line.
        same_as_cp(&base, &setup, &[os("-v"), name, os("plain")], None);
        // A message about a missing source.
        let missing = PathBuf::from(name).join("m");
        let base = dir.path().join(format!("{i}-missing"));
        fs::create_dir(&base).unwrap();
        same_as_cp(&base, &|_| {}, &[missing.as_os_str(), os("d")], None);
    }
}

/// cp names the destination of a relative symlink it cannot make with gnulib's `quotef`
/// (shell-escape): bare where nothing needs quoting, quoted in full otherwise.
#[test]
fn a_relative_symlink_outside_the_working_directory_is_named_as_cp_names_it() {
    let dir = scratch();
    let names: [&[u8]; 5] = [b"plain", b"x\ty\x01", b"it's", b"a:b", b"with space"];
    for (i, name) in names.into_iter().enumerate() {
        let base = dir.path().join(i.to_string());
        fs::create_dir(&base).unwrap();
        let name = OsStr::from_bytes(name);
        let setup = |d: &Path| {
            write(&d.join(name), "x");
            fs::create_dir(d.join("d")).unwrap();
        };
        same_as_cp(&base, &setup, &[os("-s"), name, os("d")], None);
    }
}

/// A relative `-s` link into a directory the user may not search: cp's look at "." there
/// fails, so it tries the link, and reports why making it failed.
#[test]
fn a_relative_symlink_into_a_directory_not_searchable_is_tried_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "x");
        fs::create_dir(d.join("d")).unwrap();
        fs::set_permissions(d.join("d"), fs::Permissions::from_mode(0o444)).unwrap();
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["-s", "f", "d"][..], Some(NOBODY)),
            (&["-s", "--parents", "f", "d"], Some(NOBODY)),
            (&["-s", "f", "d"], None),
        ],
    );
    // With --parents, after a directory that could not be made there, cp takes the next
    // destination to be new: it does not look at it, and tries the link.
    let setup = |d: &Path| {
        write(&d.join("f"), "x");
        symlink("f", d.join("lf")).unwrap();
        fs::create_dir_all(d.join("s/x")).unwrap();
        nobodys(d, &["f", "s", "s/x"]);
        fs::set_permissions(d.join("s/x"), fs::Permissions::from_mode(0o444)).unwrap();
    };
    let args: &[&str] = &["-sR", "--parents", "s/x", "lf", "s/x"];
    case_as_cp(dir.path(), 3, &setup, args, Some(NOBODY));
}

/// A file without a write bit that an earlier source of the same command made is refused a
/// later source of its name without `-f`, as cp refuses it (its open for writing fails):
/// the refusal mimeo meets where it replaced a destination symlink that cp writes through
/// (docs/cp.md, "A destination symlink is replaced, never written through").
#[test]
fn a_later_source_onto_the_read_only_copy_of_an_earlier_one_is_refused_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s")).unwrap();
        write(&d.join("s/x"), "");
        fs::set_permissions(d.join("s/x"), fs::Permissions::from_mode(0o444)).unwrap();
        write(&d.join("f"), "data");
        fs::create_dir(d.join("td")).unwrap();
        symlink("td", d.join("d")).unwrap();
        nobodys(d, &["s", "s/x", "f", "td", "d"]);
    };
    let args: &[&str] = &["-r", "s/x", "s/.", "f", "d"];
    let forced: &[&str] = &["-rf", "s/x", "s/.", "f", "d"];
    let refused = case_as_cp(dir.path(), 0, &setup, args, Some(NOBODY));
    assert_eq!(
        (refused.code, refused.stderr.as_str()),
        (
            Some(1),
            "cp: cannot create regular file 'd/./x': Permission denied\n"
        )
    );
    case_as_cp(dir.path(), 1, &setup, forced, Some(NOBODY));
    case_as_cp(dir.path(), 2, &setup, args, None);
    // The same file there before the command.
    let before = |d: &Path| {
        setup(d);
        write(&d.join("td/x"), "old");
        fs::set_permissions(d.join("td/x"), fs::Permissions::from_mode(0o444)).unwrap();
        nobodys(d, &["td/x"]);
    };
    case_as_cp(dir.path(), 3, &before, &["-r", "s/x", "d"], Some(NOBODY));
    case_as_cp(dir.path(), 4, &before, &["-rf", "s/x", "d"], Some(NOBODY));
}

/// A directory's mode kept with `--preserve=mode` onto one the user does not own: cp's
/// gnulib `copy_acl` fails, and names it in the locale's quoting style.
#[test]
fn a_mode_not_kept_is_worded_as_gnulibs_copy_acl_words_it() {
    let dir = scratch();
    let d = OsStr::from_bytes(b"d\xff");
    let setup = |b: &Path| {
        fs::create_dir(b.join("s")).unwrap();
        fs::set_permissions(b.join("s"), fs::Permissions::from_mode(0o700)).unwrap();
        nobodys(b, &["s"]);
        fs::create_dir_all(b.join(d).join("s")).unwrap();
        fs::set_permissions(b.join(d), fs::Permissions::from_mode(0o777)).unwrap();
    };
    let mut dst = d.to_os_string();
    dst.push("/");
    for (i, keep) in ["--preserve=mode", "--preserve=mode,xattr"]
        .iter()
        .enumerate()
    {
        let base = dir.path().join(i.to_string());
        fs::create_dir(&base).unwrap();
        let args = [os("-R"), os(keep), os("s"), &dst];
        same_as_cp(&base, &setup, &args, Some(NOBODY));
    }
}

/// A relative `-s` link named by a dangling symlink with a trailing slash, outside the
/// working directory: cp refuses the relative link before it makes it (which would find the
/// symlink there), with or without -f or a backup.
#[test]
fn a_relative_symlink_onto_a_dangling_one_with_a_slash_is_refused_first_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir(d.join("s")).unwrap();
        write(&d.join("s/f"), "x");
        symlink("dangling", d.join("s/l")).unwrap();
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["-s", "s/f", "s/l/"][..], None),
            (&["-sf", "s/f", "s/l/"], None),
            (&["-a", "-s", "-S", ".orig", "s/f", "s/l/"], None),
        ],
    );
}

/// A hard link replacing a dangling symlink named with a trailing slash: cp first links the
/// source under a temporary name beside it, then fails to rename that to "l/". Where the
/// kernel refuses the temporary link (protected_hardlinks: a file nobody does not own and
/// may not read and write; a directory nobody may not write), that error is cp's, not the
/// rename's "Not a directory". A symlink source is linked itself unless followed.
#[test]
fn a_hard_link_onto_a_dangling_symlink_with_a_slash_fails_as_cps_temporary_link() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir(d.join("s")).unwrap();
        write(&d.join("s/f"), "x");
        write(&d.join("s/n"), "x");
        symlink("f", d.join("s/nl")).unwrap();
        nobodys(d, &["s/n", "s/nl"]);
        symlink("dangling", d.join("l")).unwrap();
        fs::create_dir(d.join("ro")).unwrap();
        fs::set_permissions(d.join("ro"), fs::Permissions::from_mode(0o755)).unwrap();
        symlink("dangling", d.join("ro/l")).unwrap();
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["-l", "-T", "-a", "-f", "s/f", "l/"][..], Some(NOBODY)),
            (&["-lf", "s/f", "l/"], Some(NOBODY)),
            (&["-lf", "s/n", "l/"], Some(NOBODY)),
            (&["-lf", "s/n", "ro/l/"], Some(NOBODY)),
            (&["-lfP", "s/nl", "l/"], Some(NOBODY)),
            (&["-lfL", "s/nl", "l/"], Some(NOBODY)),
            (&["-l", "s/f", "l/"], Some(NOBODY)),
            (&["-sf", "s/f", "l/"], Some(NOBODY)),
            (&["-lf", "s/f", "l/"], None),
        ],
    );
}

/// A backup name longer than the filesystem takes (an explicit simple backup is never
/// shortened) is what fails first, as cp's rename to it: before a relative `-s` link is
/// refused, and before a source that cannot be read. A shortened one does not fail.
#[test]
fn a_backup_name_too_long_fails_first_as_cp() {
    let dir = scratch();
    let long = format!("s/{}", "n".repeat(255));
    let setup = |d: &Path| {
        for sub in ["s", "d"] {
            fs::create_dir(d.join(sub)).unwrap();
            fs::set_permissions(d.join(sub), fs::Permissions::from_mode(0o777)).unwrap();
        }
        write(&d.join(&long), "new");
        fs::set_permissions(d.join(&long), fs::Permissions::from_mode(0o200)).unwrap();
        let old = format!("d/{}", &long[2..]);
        write(&d.join(&old), "old");
        nobodys(d, &["d", &old]);
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["--backup=simple", "-s", &long, "d"][..], None),
            (&["-S", ".orig", "--backup=simple", "-s", &long, "d/"], None),
            (&["-b", "-s", &long, "d"], None),
            (&["--backup=simple", &long, "d"], Some(NOBODY)),
        ],
    );
    // A directory the user may not write: the name's length still fails first, for a copy
    // and for a hard link (fuzz seed 0x842e4e5e615e26ec).
    let locked = |d: &Path| {
        for sub in ["s", "d"] {
            fs::create_dir(d.join(sub)).unwrap();
            fs::set_permissions(d.join(sub), fs::Permissions::from_mode(0o755)).unwrap();
        }
        write(&d.join(&long), "new");
        write(&d.join(format!("d/{}", &long[2..])), "old");
    };
    let attrs = ["--backup=simple", "-a", "--attributes-only", &long, "d"];
    let dir = scratch();
    cases_as_cp(
        dir.path(),
        &locked,
        &[
            (&attrs[..], Some(NOBODY)),
            (
                &["--backup=simple", "-S", "-", &long, &long, "d"],
                Some(NOBODY),
            ),
            (&["--backup=simple", "-l", &long, "d"], Some(NOBODY)),
        ],
    );
}

/// On ext4, which cannot clone, a `--reflink=always` copy over a file whose backup name is
/// too long fails at the backup, as cp's rename to that name comes before its clone; the old
/// file stays (fuzz seed 0x3c9c689ceae5ca62).
#[test]
fn a_backup_name_too_long_fails_before_a_clone_as_cp() {
    let fs = mimeo_testkit::LoopFs::try_new(mimeo_testkit::FsKind::Ext4, 64)
        .expect("an ext4 loop mount");
    let long = format!("s/{}", "n".repeat(252));
    let setup = |d: &Path| {
        for sub in ["s", "d"] {
            fs::create_dir(d.join(sub)).unwrap();
            fs::set_permissions(d.join(sub), fs::Permissions::from_mode(0o777)).unwrap();
        }
        write(&d.join(&long), "new");
        write(&d.join(format!("d/{}", &long[2..])), "old");
    };
    let simple = ["--backup=simple", "-S", ".orig"];
    let plain = [&simple[..], &["--reflink", &long, "d"]].concat();
    let archive = [
        &simple[..],
        &["-a", "--remove-destination", "--reflink", &long, "d"],
    ]
    .concat();
    cases_as_cp(
        fs.path(),
        &setup,
        &[(&plain[..], None), (&archive[..], Some(NOBODY))],
    );
}

/// A link to a group's copy that fails names that copy, as cp names it: `f` skipped by -u
/// onto a directory in the way is the copy `lf` (the same file under -L) is linked to (fuzz
/// seed 0xfc3753ca1c586588).
#[test]
fn a_failed_link_to_a_groups_copy_names_the_copy_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "x");
        set_times(&d.join("f"), 1_500_000_000);
        std::os::unix::fs::symlink("f", d.join("lf")).unwrap();
        fs::create_dir_all(d.join("d/f")).unwrap();
    };
    let ours = case_as_cp(dir.path(), 0, &setup, &["-u", "-aL", "f", "lf", "d"], None);
    assert!(ours.stderr.contains("'d/lf' to 'd/f'"), "{ours:?}");
    case_as_cp(
        dir.path(),
        1,
        &setup,
        &["-u", "-L", "--preserve=links", "f", "lf", "d"],
        None,
    );
}

/// Under -u and --preserve=links, cp links a member it skips as up to date to the group's
/// copy, whatever is in the way: a copy that is a directory (`f` skipped onto the directory
/// `d/f`, named again with a backup, which cp does not take as named twice) cannot be linked,
/// nothing is renamed over a directory, and anything else is replaced by the link (fuzz seed
/// 0x35db77cc5ae03e8).
#[test]
fn an_up_to_date_member_is_linked_to_its_groups_copy_whatever_is_there_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "x");
        fs::hard_link(d.join("f"), d.join("g")).unwrap();
        fs::create_dir_all(d.join("d/f")).unwrap();
        write(&d.join("d/f/old"), "old");
        fs::create_dir_all(d.join("e/g")).unwrap();
        write(&d.join("e/f"), "y");
        mkfifo(&d.join("e/h"));
        write(&d.join("d/g"), "y");
        for p in ["f", "d/f", "d/g", "e/f", "e/g", "e/h"] {
            set_times(&d.join(p), 1_500_000_000);
        }
        fs::hard_link(d.join("f"), d.join("h")).unwrap();
        write(&d.join("a"), "x");
        set_times(&d.join("a"), 1_500_000_000);
        fs::create_dir(d.join("d/a")).unwrap();
        set_times(&d.join("d/a"), 1_500_000_000);
    };
    let ours = case_as_cp(
        dir.path(),
        0,
        &setup,
        &[
            "-ba",
            "-u",
            "--recursi",
            "--no-dereference",
            "f",
            "f",
            "-b",
            "d",
        ],
        None,
    );
    assert!(
        ours.stderr
            .contains("'d/f' to 'd/f': Operation not permitted"),
        "{ours:?}"
    );
    let ours = case_as_cp(
        dir.path(),
        1,
        &setup,
        &["-a", "-u", "-b", "f", "f", "g", "d"],
        None,
    );
    assert!(
        ours.stderr
            .contains("'d/g' to 'd/f': Operation not permitted"),
        "{ours:?}"
    );
    let ours = case_as_cp(
        dir.path(),
        2,
        &setup,
        &["-a", "-u", "f", "g", "h", "e"],
        None,
    );
    assert!(
        ours.stderr.contains("'e/g' to 'e/f': Is a directory"),
        "{ours:?}"
    );
    // A file of one link is remembered too (the fuzz seed's case).
    let ours = case_as_cp(dir.path(), 3, &setup, &["-ab", "-u", "a", "a", "d"], None);
    assert!(
        ours.stderr
            .contains("'d/a' to 'd/a': Operation not permitted"),
        "{ours:?}"
    );
    // Onto a file, the link to itself is nothing, as a user too.
    for (i, user) in [(4, None), (5, Some(NOBODY))] {
        case_as_cp(dir.path(), i, &setup, &["-ab", "-u", "f", "f", "e"], user);
    }
}

/// Under -u, a member skipped as up to date is linked to its group's copy over what is there
/// (cp's force_linkat), and -v says only "removed 'd/g'": not the copy's line, and also where
/// the entry is a link of that copy already. With a backup taking the name of an older entry
/// first, the link is made where nothing is, without "removed".
#[test]
fn an_up_to_date_member_linked_to_its_groups_copy_says_removed_as_cp() {
    let dir = scratch();
    let setup = |linked: bool, older: bool| {
        move |d: &Path| {
            fs::create_dir_all(d.join("s")).unwrap();
            write(&d.join("s/f"), "new");
            fs::hard_link(d.join("s/f"), d.join("s/g")).unwrap();
            set_times(&d.join("s/f"), 1_500_000_000);
            fs::create_dir(d.join("d")).unwrap();
            write(&d.join("d/f"), "old");
            if linked {
                fs::hard_link(d.join("d/f"), d.join("d/g")).unwrap();
            } else {
                write(&d.join("d/g"), "old");
            }
            let when = if older { 1_400_000_000 } else { 1_600_000_000 };
            set_times(&d.join("d/f"), when);
            set_times(&d.join("d/g"), when);
        }
    };
    let mut i = 0;
    for (linked, older) in [(false, false), (true, false), (false, true), (true, true)] {
        for args in [
            &["-a", "-u", "-v", "s/f", "s/g", "d"][..],
            &["-a", "-u", "-v", "s/g", "s/f", "d"],
            &["-u", "-v", "--preserve=links", "s/f", "s/g", "d"],
            &["-a", "-u", "-v", "s/.", "d"],
            &["-a", "-u", "-v", "-b", "s/f", "s/g", "d"],
            &["-a", "-v", "-b", "s/f", "s/g", "d"],
        ] {
            let base = dir.path().join(i.to_string());
            fs::create_dir(&base).unwrap();
            let args_os: Vec<&OsStr> = args.iter().map(|a| os(a)).collect();
            let (mut cp, ours, what) = run_both(&base, &setup(linked, older), &args_os, None);
            // -v does not name the backup (a deliberate difference, docs/cp.md).
            cp.stdout = cp
                .stdout
                .lines()
                .map(|l| l.split(" (backup: ").next().unwrap().to_owned() + "\n")
                .collect();
            same_output(&cp, &ours, &what);
            let opts = CompareOptions {
                atime: false,
                mtime: false,
                ..CompareOptions::default()
            };
            let diff = compare_trees(&base.join("cp"), &base.join("ours"), &opts).unwrap();
            assert!(diff.differences.is_empty(), "trees: {what}\n{diff:?}");
            i += 1;
            if !older && args.contains(&"-u") && !args.contains(&"-b") {
                assert!(ours.stdout.starts_with("removed '"), "{args:?}: {ours:?}");
            }
        }
    }
}

/// Under -u, cp remembers a symlink or FIFO it skips as up to date as it does a file (and
/// under -s a link it would make, and without --preserve=links any of them), and links the
/// same source named again with a backup (which cp does not take as named twice) to that
/// entry, its own destination: where that is a directory the link fails ("cannot create hard
/// link 'd/lf' to 'd/lf'"), else -v says "removed" (fuzz seed 0x3269eac6664b4d83).
#[test]
fn an_up_to_date_symlink_or_fifo_named_again_is_linked_to_itself_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "x");
        symlink("f", d.join("lf")).unwrap();
        mkfifo(&d.join("p"));
        // Made after the sources: not older than them.
        for n in ["d/lf", "d/p", "d/f"] {
            fs::create_dir_all(d.join(n)).unwrap();
        }
        fs::create_dir(d.join("e")).unwrap();
        symlink("../f", d.join("e/lf")).unwrap();
        write(&d.join("e/f"), "x");
    };
    let refused =
        |x: &str| format!("cp: cannot create hard link '{x}' to '{x}': Operation not permitted\n");
    let cases: [(&[&str], String, String); 8] = [
        (
            &["-a", "-u", "-S", ".~1~", "lf", "lf", "d"],
            String::new(),
            refused("d/lf"),
        ),
        (
            &["-a", "-u", "-b", "p", "p", "d"],
            String::new(),
            refused("d/p"),
        ),
        (
            &["-a", "-u", "-v", "-b", "lf", "lf", "e"],
            "removed 'e/lf'\n".into(),
            String::new(),
        ),
        // Under -s too, before cp would refuse the relative link.
        (
            &["-s", "-u", "-b", "--preserve=links", "f", "f", "d"],
            String::new(),
            refused("d/f"),
        ),
        (
            &["-s", "-u", "-v", "-b", "-a", "lf", "lf", "e"],
            "removed 'e/lf'\n".into(),
            String::new(),
        ),
        // Without --preserve=links too: cp remembers what -u skips all the same.
        (&["-u", "-b", "f", "f", "d"], String::new(), refused("d/f")),
        (
            &["-u", "-r", "-b", "p", "p", "d"],
            String::new(),
            refused("d/p"),
        ),
        (
            &["-u", "-v", "-b", "f", "f", "f", "e"],
            "removed 'e/f'\nremoved 'e/f'\n".into(),
            String::new(),
        ),
    ];
    each_says(dir.path(), &setup, &cases);
}

/// Under -u, the same source met again inside an overlapping root's walk (`s/f` then
/// `s/.`, or the reverse), which cp never takes as named twice, with or without backups
/// and --preserve=links, is linked to what -u skipped: its own destination by another name
/// ("cannot create hard link 'd/./f' to 'd/f'" onto a directory, "removed 'd/./g'" under
/// -v otherwise) (fuzz seed 0xf8a8c20f7182387b).
#[test]
fn an_up_to_date_entry_met_again_in_a_walk_is_linked_to_itself_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s/sub")).unwrap();
        write(&d.join("s/f"), "x");
        symlink("f", d.join("s/l")).unwrap();
        mkfifo(&d.join("s/p"));
        write(&d.join("s/sub/g"), "y");
        // Made after the sources: not older than them.
        for n in ["d/f", "d/l", "d/p"] {
            fs::create_dir_all(d.join(n)).unwrap();
        }
        write(&d.join("d/g"), "z");
    };
    let refused = |x: &str, y: &str| {
        format!("cp: cannot create hard link '{x}' to '{y}': Operation not permitted\n")
    };
    let cases: [(&[&str], String, String); 7] = [
        (
            &["-a", "-u", "--backup=existing", "s/f", "s/.", "d"],
            String::new(),
            refused("d/./f", "d/f"),
        ),
        (
            &["-a", "-u", "s/.", "s/f", "d"],
            String::new(),
            refused("d/f", "d/./f"),
        ),
        (
            &["-u", "-r", "s/f", "s/.", "d"],
            String::new(),
            refused("d/./f", "d/f"),
        ),
        (
            &["-a", "-u", "s/l", "s/.", "d"],
            String::new(),
            refused("d/./l", "d/l"),
        ),
        (
            &["-a", "-u", "-b", "s/.", "s/p", "d"],
            String::new(),
            refused("d/p", "d/./p"),
        ),
        (
            &["-v", "-a", "-u", "s/sub/g", "s/sub/.", "d"],
            "removed 'd/./g'\n".into(),
            String::new(),
        ),
        (
            &["-v", "-u", "-r", "s/sub/.", "s/sub/g", "d"],
            "removed 'd/g'\n".into(),
            String::new(),
        ),
    ];
    each_says(dir.path(), &setup, &cases);
}

/// As above for a source the user may not read: cp skips it as up to date, and remembers
/// it, before it opens it (fuzz seed 0xf8a8c20f7182387b as nobody).
#[test]
fn an_unreadable_up_to_date_entry_met_again_is_linked_to_itself_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir(d.join("s")).unwrap();
        write(&d.join("s/r"), "x");
        fs::set_permissions(d.join("s/r"), fs::Permissions::from_mode(0o600)).unwrap();
        // Made after the source: not older than it.
        fs::create_dir_all(d.join("d/r")).unwrap();
        nobodys(d, &["d"]);
    };
    let refused = |x: &str, y: &str| {
        format!("cp: cannot create hard link '{x}' to '{y}': Operation not permitted\n")
    };
    let cases: [(&[&str], String); 3] = [
        (&["-a", "-u", "s/r", "s/.", "d"], refused("d/./r", "d/r")),
        (&["-u", "-r", "s/.", "s/r", "d"], refused("d/r", "d/./r")),
        (&["-u", "-b", "s/r", "s/r", "d"], refused("d/r", "d/r")),
    ];
    for (i, (args, stderr)) in cases.iter().enumerate() {
        let ours = case_as_cp(dir.path(), i, &setup, args, Some(NOBODY));
        assert_eq!(
            (ours.stdout.as_str(), &ours.stderr),
            ("", stderr),
            "{ours:?}"
        );
    }
}

/// Under -u, cp links an entry it skips as up to date to its group's copy quietly: -v says
/// only "removed", with no line for the link (a file named twice or three times with
/// numbered backups onto a newer copy, and a tree's two links onto newer files). A file of
/// one link that -a copies (onto an older one) cp does not remember, so the next name is
/// copied or skipped on its own.
#[test]
fn an_up_to_date_entry_linked_to_its_groups_copy_is_told_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "x");
        set_times(&d.join("f"), 1_500_000_000);
        for (dst, secs) in [("d", 1_600_000_000), ("o", 1_400_000_000)] {
            fs::create_dir_all(d.join(dst)).unwrap();
            fs::set_permissions(d.join(dst), fs::Permissions::from_mode(0o777)).unwrap();
            write(&d.join(dst).join("f"), "y");
            set_times(&d.join(dst).join("f"), secs);
        }
        fs::create_dir_all(d.join("s")).unwrap();
        write(&d.join("s/a"), "x");
        fs::hard_link(d.join("s/a"), d.join("s/b")).unwrap();
        set_times(&d.join("s/a"), 1_500_000_000);
        fs::create_dir_all(d.join("e/s")).unwrap();
        write(&d.join("e/s/a"), "y");
        write(&d.join("e/s/b"), "z");
        for p in ["e/s/a", "e/s/b"] {
            set_times(&d.join(p), 1_600_000_000);
        }
    };
    // Each case, as whom, and how many "removed" lines cp says (None: as a user, the link to
    // another's file is refused, protected hard links).
    let cases: [(&[&str], Option<u32>, Option<usize>); 6] = [
        (
            &["-uv", "--preserve=links", "--backup=t", "f", "f", "d"],
            None,
            Some(1),
        ),
        (
            &["-uv", "--preserve=links", "--backup=t", "f", "f", "d"],
            Some(NOBODY),
            None,
        ),
        (
            &["-uv", "--preserve=links", "--backup=t", "f", "f", "f", "d"],
            None,
            Some(2),
        ),
        (&["-uvL", "-a", "--backup=t", "f", "f", "d"], None, Some(1)),
        (
            &["-uv", "-a", "--backup=t", "f", "f", "f", "d"],
            None,
            Some(2),
        ),
        (&["-uva", "s", "e"], None, Some(1)),
    ];
    for (i, &(args, user, removed)) in cases.iter().enumerate() {
        let ours = case_as_cp(dir.path(), i, &setup, args, user);
        let said = ours
            .stdout
            .lines()
            .filter(|l| l.starts_with("removed "))
            .count();
        match removed {
            Some(n) => assert_eq!(said, n, "{ours:?}"),
            None => assert!(
                ours.stderr.ends_with("Operation not permitted\n"),
                "{ours:?}"
            ),
        }
    }
    // Onto an older file: mimeo's -v line leaves out cp's "(backup: ...)" (docs/cp.md).
    let base = dir.path().join("older");
    fs::create_dir(&base).unwrap();
    let args: Vec<&OsStr> = ["-uv", "-a", "--backup=t", "f", "f", "o"].map(os).to_vec();
    let (cp, ours, what) = run_both(&base, &setup, &args, None);
    assert_eq!(cp.stdout, "'f' -> 'o/f' (backup: 'o/f.~1~')\n", "{what}");
    assert_eq!(ours.stdout, "'f' -> 'o/f'\n", "{what}");
    assert_eq!((cp.code, &cp.stderr), (ours.code, &ours.stderr), "{what}");
}

/// A directory copied onto itself under -n (`s/x` into `s`) and met again below a later
/// source (`s/.`) at that very entry is a copy into itself to cp, which names the later
/// source; where the later one goes elsewhere it is named twice (fuzz seed
/// 0xa0eb82589b478347, where `s/` into `s` made the entry met so in cp).
#[test]
fn a_directory_copied_onto_itself_and_met_again_is_a_copy_into_itself_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s/x")).unwrap();
        fs::create_dir(d.join("d")).unwrap();
        write(&d.join("s/a"), "a");
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["-R", "-n", "s/x", "s/.", "s/"], None),
            (&["-l", "-R", "-n", "s/x", "s/.", "s/"], Some(NOBODY)),
            (&["-R", "-n", "s/x/", "s/.", "s"], None),
            (&["-R", "-n", "s/x", "s/.", "d"], None),
        ],
    );
}

/// `--parents` with a directory root then one deeper in it, through a symlink of its tree
/// (`s` then `s/q/L/`, L a symlink to a directory): cp has copied L as a symlink by then, and
/// finds it at the later one's destination before it looks for the directory among those it
/// copied: not a directory in the way (fuzz seed 0x6677c390d0755002).
#[test]
fn parents_below_an_earlier_copy_finds_what_it_made_there_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s/q")).unwrap();
        fs::create_dir(d.join("d")).unwrap();
        write(&d.join("s/q/f"), "f");
        // To the copy of s where copied, to s itself in the source.
        std::os::unix::fs::symlink("../../s", d.join("s/q/L")).unwrap();
        nobodys(d, &["s", "s/q", "s/q/f", "d"]);
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["-a", "--parents", "s", "s/q/L/", "d"], None),
            (
                &["-a", "--backup", "--parents", "s", "s/q/L/", "d"],
                Some(NOBODY),
            ),
        ],
    );
}

/// An absolute source named twice under `--parents` with simple backups: cp 9.1 stops at its
/// lookup of the first copy, before its `-v` line for the second (fuzz seed
/// 0xc703cf659be55a3f).
#[test]
fn an_absolute_source_named_twice_with_backups_has_one_verbose_line_as_cp() {
    let dir = scratch();
    let src = dir.path().join("abs/s/x");
    fs::create_dir_all(src.parent().unwrap()).unwrap();
    write(&src, "x");
    let src = src.to_str().unwrap();
    let setup = |d: &Path| fs::create_dir(d.join("d")).unwrap();
    let ran = case_as_cp(
        dir.path(),
        0,
        &setup,
        &["-b", "--parents", "-v", src, src, "d"],
        None,
    );
    assert!(
        ran.stderr.ends_with(": No such file or directory\n"),
        "{ran:?}"
    );
}

/// `--parents` as a user, below an earlier directory source whose walk could not read one of
/// its directories (`s` then `s/u/z/f`): cp's walk has made the copy of `s/u`, empty, with its
/// source's mode. Mode 0300: cp makes `z` in it, and gives it its source's attributes again
/// by name, which needs no read permission on it. Mode 0100: cp cannot make `z` in it. Mode
/// 0600: cp cannot look at `s/u/z`. The failure of the later source is named before the
/// walk's (docs/cp.md, "`-v` lines come in completion order"): lines are compared in any
/// order (fuzz seed 0x848af28f365180d5).
#[test]
fn parents_in_a_directory_an_earlier_walk_left_unreadable_as_cp() {
    let dir = scratch();
    let runs: [&[&str]; 4] = [
        &["--preserve", "-R", "--parents", "s", "s/u/z/f", "d"],
        &["--preserve=mode", "-R", "--parents", "s", "s/u/z/f", "d"],
        &["-R", "--parents", "s", "s/u/z/f", "d"],
        &["-Rv", "--parents", "s", "s/u/z/f", "d"],
    ];
    let mut i = 0;
    for mode in [0o300, 0o100, 0o600] {
        let setup = |d: &Path| {
            fs::create_dir_all(d.join("s/u/z")).unwrap();
            fs::create_dir(d.join("d")).unwrap();
            write(&d.join("s/u/z/f"), "f");
            nobodys(d, &["s", "s/u", "s/u/z", "s/u/z/f", "d"]);
            fs::set_permissions(d.join("s/u"), fs::Permissions::from_mode(mode)).unwrap();
        };
        for args in runs {
            let base = dir.path().join(i.to_string());
            i += 1;
            fs::create_dir(&base).unwrap();
            let args: Vec<&OsStr> = args.iter().map(|a| os(a)).collect();
            let (cp, ours, what) = run_both(&base, &setup, &args, Some(NOBODY));
            let lines = |t: &str| {
                let mut l: Vec<String> = t.lines().map(str::to_string).collect();
                l.sort_unstable();
                l
            };
            assert_eq!(cp.code, ours.code, "exit status: {what}");
            assert_eq!(lines(&cp.stdout), lines(&ours.stdout), "stdout: {what}");
            assert_eq!(lines(&cp.stderr), lines(&ours.stderr), "stderr: {what}");
            let opts = CompareOptions {
                atime: false,
                mtime: false,
                ..CompareOptions::default()
            };
            let diff = compare_trees(&base.join("cp"), &base.join("ours"), &opts).unwrap();
            assert!(diff.differences.is_empty(), "trees: {what}\n{diff:?}");
        }
    }
}

/// `-l` as a user: an earlier root's symlink the kernel would not link (another user's, under
/// `fs.protected_hardlinks`) was not made, so a later `--parents` root through it (`s` then
/// `s/x/`) finds nothing in its way and is made, as cp makes it (fuzz seed
/// 0x72dceec9e821d871).
#[test]
fn parents_below_a_symlink_an_earlier_copy_could_not_link_are_made_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s/t")).unwrap();
        fs::create_dir(d.join("d")).unwrap();
        write(&d.join("s/t/f"), "f");
        std::os::unix::fs::symlink("t", d.join("s/x")).unwrap();
        // The user's own file links, so the symlink's failure is the only line.
        nobodys(d, &["d", "s/t/f"]);
    };
    let args: &[&str] = &["-d", "--parents", "-r", "-l", "s", "s/x/", "d"];
    let backups: &[&str] = &["-d", "--parents", "-r", "-l", "-b", "s", "s/x/", "d"];
    cases_as_cp(
        dir.path(),
        &setup,
        &[(args, Some(NOBODY)), (backups, Some(NOBODY)), (args, None)],
    );
}

/// A later source whose walk meets the copy cp made of an earlier one it then refused as a
/// copy into itself (`-lRn s/ s/. s/`: cp makes `s/s` and meets it below `s/.`) is a copy
/// into itself too, with cp's words; mimeo makes no such copy (docs/cp.md, "A copy into
/// itself makes nothing"), so only the messages and status are compared (fuzz seed
/// 0xa0eb82589b478347).
#[test]
fn a_later_source_meeting_a_copy_into_itself_is_one_too_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s/x")).unwrap();
        write(&d.join("s/a"), "a");
    };
    for (i, args) in [
        &["-l", "-R", "-n", "s/", "s/.", "s/"][..],
        &["-l", "-R", "-n", "s", "s/.", "s"],
        &["-l", "-R", "s/", "s/.", "s/"],
        &["-R", "-n", "s/", "s/.", "s/"],
    ]
    .into_iter()
    .enumerate()
    {
        let base = dir.path().join(i.to_string());
        fs::create_dir(&base).unwrap();
        let args: Vec<&OsStr> = args.iter().map(|a| os(a)).collect();
        let (cp, ours, what) = run_both(&base, &setup, &args, None);
        same_output(&cp, &ours, &what);
    }
}

/// `cp -ri f s/a/ d` with `s/a` a symlink to `..` (so the copy `d/a` is in the source) and
/// `d/f` in the way, no answer: cp asks about `d/f` once, then copies into itself; mimeo
/// asks the same once (and refuses the copy into itself first, docs/cp.md, "A copy into
/// itself makes nothing", so only the status, the questions and the refusals are compared;
/// fuzz seed 0xd2660c6cc608f70b).
#[test]
fn a_question_before_a_copy_into_itself_is_asked_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s")).unwrap();
        symlink("..", d.join("s/a")).unwrap();
        write(&d.join("f"), "f");
        fs::create_dir(d.join("d")).unwrap();
        write(&d.join("d/f"), "in the way");
        write(&d.join("s/l"), "l");
        nobodys(d, &["f", "s", "s/a", "s/l", "d", "d/f"]);
    };
    // The questions (each ends in "? ", with no newline) and refusals, in sorted order.
    let said = |t: &str| {
        let mut l: Vec<String> = t
            .split_inclusive('\n')
            .flat_map(|l| l.split_inclusive("? "))
            .filter(|l| l.ends_with("? ") || l.contains(", into itself, "))
            .map(str::to_string)
            .collect();
        l.sort_unstable();
        l
    };
    for (i, user) in [None, Some(NOBODY)].into_iter().enumerate() {
        let base = dir.path().join(i.to_string());
        fs::create_dir(&base).unwrap();
        let args = [os("-ri"), os("f"), os("s/a/"), os("s/l"), os("d")];
        let (cp, ours, what) = run_both(&base, &setup, &args, user);
        assert_eq!(cp.code, ours.code, "exit status: {what}");
        let asked = "cp: overwrite 'd/f'? ";
        assert!(cp.stderr.contains(asked), "{what}");
        assert_eq!(said(&cp.stderr), said(&ours.stderr), "stderr: {what}");
        assert_eq!(fs::read(base.join("ours/d/f")).unwrap(), b"in the way");
        assert_eq!(fs::read(base.join("ours/d/l")).unwrap(), b"l");
    }
}

/// `cp -ri s/. s d` with `d/s` a directory already and `s/s` a file: the first source leaves
/// the directory there (cp asks about it first under -i, and without an answer keeps it;
/// without -i it refuses to overwrite it), so the second finds a directory at `d/s`, not
/// the first one's copy of `s/s`: cp refuses it as a directory named again ("will not create
/// hard link"), not as one onto a non-directory. The target is a symlink to a directory, as
/// in fuzz seed 0x4556abbb7563389. A later source's refusal comes before the walk's questions
/// (docs/cp.md, "`-v` lines come in completion order"), so the questions and messages are
/// compared in sorted order.
#[test]
fn a_directory_named_again_onto_a_directory_an_earlier_source_kept_is_refused_as_cp() {
    let dir = scratch();
    let in_the_way = |dir_there: bool| {
        move |d: &Path| {
            fs::create_dir_all(d.join("s")).unwrap();
            write(&d.join("s/s"), "s");
            fs::create_dir(d.join("td")).unwrap();
            symlink("td", d.join("d")).unwrap();
            if dir_there {
                fs::create_dir(d.join("td/s")).unwrap();
            } else {
                write(&d.join("td/s"), "in the way");
            }
        }
    };
    let said = |t: &str| {
        let mut l: Vec<String> = t
            .split_inclusive('\n')
            .flat_map(|l| l.split_inclusive("? "))
            .map(str::to_string)
            .collect();
        l.sort_unstable();
        l
    };
    let opts = CompareOptions {
        atime: false,
        mtime: false,
        ..CompareOptions::default()
    };
    let cases: [(&[&str], bool); 4] = [
        (&["-i", "s/.", "-R", "s", "d"], true),
        (&["-R", "s/.", "s", "d"], true),
        (&["-i", "s/.", "-R", "s", "d"], false),
        (&["-R", "s/.", "s", "d"], false),
    ];
    for (i, (args, dir_there)) in cases.into_iter().enumerate() {
        let base = dir.path().join(i.to_string());
        fs::create_dir(&base).unwrap();
        let args: Vec<&OsStr> = args.iter().map(|a| os(a)).collect();
        let (cp, ours, what) = run_both(&base, &in_the_way(dir_there), &args, None);
        assert_eq!(cp.code, ours.code, "exit status: {what}");
        if dir_there {
            assert!(cp.stderr.contains("will not create hard link"), "{what}");
        }
        assert_eq!(said(&cp.stderr), said(&ours.stderr), "stderr: {what}");
        let diff = compare_trees(&base.join("cp"), &base.join("ours"), &opts).unwrap();
        assert!(diff.differences.is_empty(), "trees: {what}\n{diff:?}");
    }
}

#[test]
fn an_unreadable_source_is_reported_as_cp_reports_it() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("secret"), "x");
        fs::set_permissions(d.join("secret"), fs::Permissions::from_mode(0o200)).unwrap();
    };
    let ours = same_as_cp(
        dir.path(),
        &setup,
        &[os("secret"), os("copy")],
        Some(NOBODY),
    );
    assert!(ours.stderr.contains("for reading"), "{ours:?}");
}

/// A FIFO read as a file (`--copy-contents`) under -P onto a file in a directory the user
/// may not write: cp removes the destination first, as for any source that is not a regular
/// file, and fails there ("cannot remove"), before its -v line and before it opens the FIFO
/// (fuzz seed 0x93cc783e171b8941). mimeo opens the FIFO first, which here only waits for a
/// writer.
#[test]
fn a_fifo_read_as_a_file_fails_at_its_removal_first_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir(d.join("s")).unwrap();
        write(&d.join("s/x"), "old");
        mkfifo(&d.join("p"));
        fs::set_permissions(d.join("p"), fs::Permissions::from_mode(0o666)).unwrap();
        // mimeo waits for the FIFO's writer before it looks at the destination (it opened
        // the FIFO first): one comes, and goes after a while where nothing reads.
        if d.ends_with("ours") {
            let p = d.join("p");
            std::thread::spawn(move || {
                std::process::Command::new("timeout")
                    .args(["10", "sh", "-c", "echo data > \"$0\""])
                    .arg(p)
                    .status()
            });
        }
    };
    let verbose: &[&str] = &["-a", "--verbose", "--copy-contents", "p", "s/x"];
    let plain: &[&str] = &["-R", "--copy-contents", "p", "s/x"];
    cases_as_cp(
        dir.path(),
        &setup,
        &[(verbose, Some(NOBODY)), (plain, Some(NOBODY))],
    );
}

/// A FIFO named twice (read as a file, without -r): cp copies what its one writer writes,
/// then refuses the second as "just-created" before it opens the FIFO again, which no writer
/// would open (fuzz seed 0x7ce10d520042f460: mimeo waited for one until killed).
#[test]
fn a_fifo_named_twice_is_refused_before_it_is_opened_again_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        mkfifo(&d.join("p"));
        fs::create_dir(d.join("d")).unwrap();
        let p = d.join("p");
        std::thread::spawn(move || {
            std::process::Command::new("timeout")
                .args(["10", "sh", "-c", "echo data > \"$0\""])
                .arg(p)
                .status()
        });
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["p", "p", "d"], None),
            (&["-f", "-S", "", "p", "p", "d"], None),
        ],
    );
}

/// `-v -f` onto a symlink to a file the user may not write, from a source the user may not
/// read: cp fails to open the source first, so it never opens (and then removes) the
/// destination, and says no "removed" (fuzz seed 0x5914b36daa76e1cd).
#[test]
fn an_unreadable_source_says_no_removal_cp_never_reached() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir(d.join("s")).unwrap();
        write(&d.join("s/x"), "x");
        fs::set_permissions(d.join("s/x"), fs::Permissions::from_mode(0o600)).unwrap();
        write(&d.join("t"), "t");
        std::os::unix::fs::symlink("t", d.join("d")).unwrap();
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[(&["-v", "-f", "s/x", "d"], Some(NOBODY))],
    );
}

#[test]
fn fifo_and_parent_failures_are_worded_as_cp_words_them() {
    let dir = scratch();
    // A FIFO into a directory nobody may write.
    let base = dir.path().join("fifo");
    fs::create_dir(&base).unwrap();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s")).unwrap();
        mkfifo(&d.join("s/p"));
        fs::create_dir_all(d.join("d/s")).unwrap();
        fs::set_permissions(d.join("d/s"), fs::Permissions::from_mode(0o555)).unwrap();
        fs::set_permissions(d.join("d"), fs::Permissions::from_mode(0o777)).unwrap();
    };
    let ours = same_as_cp(&base, &setup, &[os("-r"), os("s"), os("d")], Some(NOBODY));
    assert!(ours.stderr.contains("cannot create fifo"), "{ours:?}");
    // A --parents directory that cannot be made.
    let base = dir.path().join("parents");
    fs::create_dir(&base).unwrap();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("a")).unwrap();
        write(&d.join("a/f"), "x");
        fs::create_dir(d.join("d")).unwrap();
        fs::set_permissions(d.join("d"), fs::Permissions::from_mode(0o555)).unwrap();
    };
    let args = [os("--parents"), os("a/f"), os("d")];
    let ours = same_as_cp(&base, &setup, &args, Some(NOBODY));
    assert!(ours.stderr.contains("cannot make directory"), "{ours:?}");
}

#[test]
fn option_errors_come_in_cps_order_and_words() {
    let dir = scratch();
    let setup = |d: &Path| write(&d.join("f"), "x");
    for (i, args) in [
        // cp requires SELinux for --preserve=context by name (not for `all`), and copies nothing.
        &["--preserve=context", "f", "g"][..],
        &["--preserve=con", "--preserve=all", "f", "g"],
        &["--preserve=context", "--no-preserve=context", "f", "g"],
        &["-a", "f", "g"],
        // An invalid --backup value is not dropped by a later bare --backup or -b ...
        &["--backup=bogus", "--backup", "f", "g"],
        &["--backup=bogus", "--backup=", "f", "g"],
        // ... and -n with a backup is refused before the value is read.
        &["--backup=bogus", "-n", "f", "g"],
        &["--preserve=context", "--backup=bogus", "f", "g"],
        // cp warns about --context=CTX as it reads it, so before an option it stops at, and
        // lists a bad --sparse value's choices in its own order.
        &["--context=x", "--sparse=bogus", "f", "g"],
        &["--cont=x", "--context=y", "--reflink=a", "f", "g"],
        &["--context=x", "--bogus", "f", "g"],
        &["--sparse=a", "--context=x", "f", "g"],
        // A bad --preserve or --no-preserve value is refused where it is read: before a
        // later --help, and before a later --context is warned about.
        &["--preserve=links,bogus", "--help", "f", "g"],
        &["--no-preserve=", "--version", "f", "g"],
        &["--preserve=bogus", "--context=x", "f", "g"],
        &["-p", "--no-preserve=mode,x", "--context=x", "f", "g"],
    ]
    .into_iter()
    .enumerate()
    {
        case_as_cp(dir.path(), i, &setup, args, None);
    }
}

/// No operand besides `-t`'s directory is a usage error in cp's words, with and without
/// `--parents` (which panicked on it: fuzz seed 0x351850f499495f02).
#[test]
fn no_source_after_a_target_directory_is_a_usage_error_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| fs::create_dir(d.join("d")).unwrap();
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["-R", "--pa", "-t", "d", "-S", "s/", "-d"][..], None),
            (&["--parents", "-t", "d"], None),
            (&["--parents", "-t", "absent"], None),
            (&["--parents"], None),
            (&["-t", "d"], None),
        ],
    );
}

/// An empty operand is a name like any other to cp, one that does not exist: as a source, a
/// destination, a `-t` directory, or among others (where the missing target is reported).
#[test]
fn empty_operands_are_names_that_do_not_exist_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "x");
        fs::create_dir(d.join("s")).unwrap();
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["", "g"][..], None),
            (&["f", ""], None),
            (&["-T", "f", ""], None),
            (&["-t", "", "f"], None),
            (&["-r", "", "f", "s"], None),
            // `-S -S` takes `-S` as the suffix: the empty argument after it is an operand.
            (&["-r", "-S", "-S", "", "f", "absent"], Some(NOBODY)),
        ],
    );
}

/// A backup type given in bytes that are not UTF-8 is refused in cp's words, the value quoted
/// with backslash escapes, whether from `--backup=CONTROL` or from `$VERSION_CONTROL`.
#[test]
fn a_backup_type_that_is_not_utf8_is_refused_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| write(&d.join("f"), "x");
    for (i, control) in [&b"--backup=\xff"[..], b"--backup=nu\xff\x01a'b\"\\"]
        .into_iter()
        .enumerate()
    {
        let base = dir.path().join(i.to_string());
        fs::create_dir(&base).unwrap();
        let args = [OsStr::from_bytes(control), os("--backup"), os("f"), os("g")];
        let ours = same_as_cp(&base, &setup, &args, None);
        assert!(ours.stderr.contains("for 'backup type'"), "{ours:?}");
    }
    // $VERSION_CONTROL, read where no CONTROL is given.
    let base = dir.path().join("env");
    fs::create_dir(&base).unwrap();
    let bin = link_as(&base, util::mimeo().get_program().as_ref(), "cp").unwrap();
    let run = |path: &OsStr| {
        let out = std::process::Command::new("cp")
            .args(["-b", "f", "g"])
            .current_dir(&base)
            .env_clear()
            .env("PATH", path)
            .env("LC_ALL", "C")
            .env("VERSION_CONTROL", OsStr::from_bytes(b"nu\xff"))
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let cp = run(os("/usr/bin:/bin"));
    let mut ours_path = OsString::from(&bin);
    ours_path.push(":/usr/bin:/bin");
    assert_eq!(cp, run(&ours_path));
    assert!(
        cp.1.starts_with("cp: invalid argument 'nu\\377' for '$VERSION_CONTROL'\n"),
        "{cp:?}"
    );
}

/// An unknown option is named as cp names it; one with a control character is escaped where
/// cp's getopt prints it raw (a documented difference, "Names are quoted in full").
#[test]
fn unknown_options_are_named_as_cp_names_them_with_control_characters_escaped() {
    let dir = scratch();
    let setup = |d: &Path| write(&d.join("f"), "x");
    for (i, (option, escaped)) in [
        ("--bogus=3", None),
        ("-k", None),
        ("--re", None),
        ("--x\x1b]0;pwned\x07", Some("'--x\\033]0;pwned\\a'")),
        ("-\x1b", Some("'\\033'")),
    ]
    .into_iter()
    .enumerate()
    {
        let base = dir.path().join(i.to_string());
        fs::create_dir(&base).unwrap();
        let args = [os(option), os("f"), os("g")];
        let Some(escaped) = escaped else {
            same_as_cp(&base, &setup, &args, None);
            continue;
        };
        let (cp, ours, what) = run_both(&base, &setup, &args, None);
        assert_eq!(cp.code, ours.code, "{what}");
        // cp names a long option whole, a short one by its letter.
        let raw = if option.starts_with("--") {
            format!("'{option}'")
        } else {
            format!("'{}'", &option[1..])
        };
        assert_eq!(cp.stderr.replace(&raw, escaped), ours.stderr, "{what}");
        assert!(
            !ours.stderr.contains(|c: char| c.is_control() && c != '\n'),
            "{what}"
        );
    }
}

/// `--attributes-only` with the mode kept gives an existing file the source's ACL, or none,
/// as cp's `copy_acl` does: the file's own ACL (a named user's read and execute) does not
/// stay, which would let that user read it (fuzz seed 0x1f3bba387a962c00).
#[test]
fn attributes_only_with_the_mode_kept_replaces_the_destinations_acl_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("s"), "src");
        fs::set_permissions(d.join("s"), fs::Permissions::from_mode(0o640)).unwrap();
        write(&d.join("d"), "dst");
        mimeo_testkit::run_ok(
            "setfacl",
            &["-m", "u:1234:rx", d.join("d").to_str().unwrap()],
        );
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["-f", "--attributes-only", "-p", "s", "d"][..], None),
            (&["--attributes-only", "--preserve=mode", "s", "d"], None),
            (&["--attributes-only", "-a", "s", "d"], None),
            (&["--attributes-only", "s", "d"], None),
        ],
    );
}

/// A bad value of any option with fixed choices is quoted as cp quotes it: control
/// characters, quotes and bytes that are not UTF-8 escaped, none of them raw on the terminal.
#[test]
fn bad_option_values_are_escaped_as_cp_escapes_them() {
    let dir = scratch();
    let setup = |d: &Path| write(&d.join("f"), "x");
    for (i, value) in [
        &b"--sparse=x\x1b]0;pwned\x07"[..],
        b"--reflink=\xff",
        b"--preserve=mo\nde",
        b"--no-preserve=mode,\xfe",
        b"--sparse=a'b\\",
    ]
    .into_iter()
    .enumerate()
    {
        let base = dir.path().join(i.to_string());
        fs::create_dir(&base).unwrap();
        let args = [OsStr::from_bytes(value), os("f"), os("g")];
        let ours = same_as_cp(&base, &setup, &args, None);
        let raw = |c: char| c.is_control() && c != '\n';
        assert!(!ours.stderr.contains(raw), "{ours:?}");
    }
}

#[test]
fn verbose_parents_lines_are_cps() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("a/b")).unwrap();
        write(&d.join("a/b/f"), "x");
        fs::create_dir(d.join("d")).unwrap();
        symlink("f", d.join("a/b/l")).unwrap();
    };
    for (i, args) in [
        &["-v", "--parents", "a/b/f", "d"][..],
        // A directory named as a source is quoted, also where a later source's parent is it.
        &["-v", "--parents", "-r", "a/b", "a/b/f", "d"],
    ]
    .into_iter()
    .enumerate()
    {
        case_as_cp(dir.path(), i, &setup, args, None);
    }
}

#[test]
fn links_with_attributes_only_fail_as_links() {
    let dir = scratch();
    for (i, flag) in ["-s", "-l"].into_iter().enumerate() {
        let base = dir.path().join(i.to_string());
        fs::create_dir(&base).unwrap();
        let setup = |d: &Path| {
            write(&d.join("f"), "x");
            symlink("nowhere", d.join("ls")).unwrap();
            symlink("gone", d.join("dangling")).unwrap();
            write(&d.join("g"), "old");
        };
        for dst in ["dangling", "g"] {
            let args = [
                os("--attributes-only"),
                os(flag),
                os("-P"),
                os("ls"),
                os(dst),
            ];
            let sub = base.join(dst);
            fs::create_dir(&sub).unwrap();
            let ours = same_as_cp(&sub, &setup, &args, None);
            assert!(ours.stderr.contains(" link "), "{ours:?}");
        }
    }
}

#[test]
fn another_users_file_is_backed_up_as_cp_backs_it_up() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "new");
        fs::create_dir(d.join("d")).unwrap();
        fs::set_permissions(d.join("d"), fs::Permissions::from_mode(0o777)).unwrap();
        // Root's file: the kernel lets nobody rename it here, not link it.
        write(&d.join("d/g"), "old");
        fs::set_permissions(d.join("d/g"), fs::Permissions::from_mode(0o644)).unwrap();
    };
    for (i, how) in ["-b", "--backup=numbered"].into_iter().enumerate() {
        let base = dir.path().join(i.to_string());
        fs::create_dir(&base).unwrap();
        let args = [os(how), os("f"), os("d/g")];
        let ours = same_as_cp(&base, &setup, &args, Some(NOBODY));
        assert_eq!(ours.code, Some(0), "{ours:?}");
    }
}

#[test]
fn verbose_says_removed_where_cp_removes_a_destination() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "new");
        symlink("f", d.join("l")).unwrap();
        fs::create_dir(d.join("d")).unwrap();
        fs::set_permissions(d.join("d"), fs::Permissions::from_mode(0o777)).unwrap();
        write(&d.join("d/g"), "old");
        fs::set_permissions(d.join("d/g"), fs::Permissions::from_mode(0o644)).unwrap();
        // A directory nobody may not change: cp's removal there fails.
        fs::create_dir(d.join("ro")).unwrap();
        symlink("f", d.join("ro/l")).unwrap();
        // A symlink to a file nobody may not write: cp cannot open it, and removes it.
        symlink("g", d.join("d/lg")).unwrap();
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["-v", "--remove-destination", "f", "d/g"][..], None),
            (&["-v", "-P", "l", "d/g"], None),
            (&["-v", "-a", "l", "d/g"], None),
            (&["-v", "-f", "f", "d/g"], Some(NOBODY)),
            (&["-v", "-f", "f", "d/g"], None),
            (&["-v", "-d", "-f", "l", "ro/l"], Some(NOBODY)),
            (&["-v", "-f", "f", "d/lg"], Some(NOBODY)),
            (
                &["--attributes-only", "-v", "-f", "-P", "f", "d/lg"],
                Some(NOBODY),
            ),
            // One failure per case: two sources' messages come in the workers' order
            // (message-order in docs/cp.md).
            (&["-v", "-d", "-f", "l", "ro"], Some(NOBODY)),
            (&["-v", "-f", "f", "ro"], Some(NOBODY)),
        ],
    );
}

/// A link to a group's copy made over an existing entry is cp's force_linkat, which says
/// "removed" after the copy's line, also where the entry was already a link of that copy
/// (`s/f s/. d`: `d/./f` is `d/f`); where cp removed it first, it says so once, before the
/// line (fuzz seed 0x5c0e21678ecee016).
#[test]
fn verbose_says_removed_for_a_link_made_over_an_entry_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir(d.join("s")).unwrap();
        write(&d.join("s/f"), "new");
        fs::hard_link(d.join("s/f"), d.join("s/g")).unwrap();
        fs::create_dir_all(d.join("d/s")).unwrap();
        write(&d.join("d/g"), "old");
        write(&d.join("d/s/g"), "old");
    };
    // The file named first is in the tree named after it, so the two are copied in
    // command-line order, as by cp (sources that do not overlap run in parallel: which is
    // linked to which is theirs to settle). The lines come in completion order (docs/cp.md)
    // and are compared as sets; each case has its one "removed".
    let cases: [(&[&str], &str); 4] = [
        (&["-v", "-a", "s/f", "s", "d"], "removed 'd/s/g'\n"),
        (&["-v", "-a", "s/f", "s/.", "d"], "removed 'd/./f'\n"),
        (
            &["-v", "-a", "--remove-destination", "s/f", "s", "d"],
            "removed 'd/s/g'\n",
        ),
        (&["-v", "-a", "-f", "s/f", "s", "d"], "removed 'd/s/g'\n"),
    ];
    for (i, (args, said)) in cases.into_iter().enumerate() {
        let ours = case_as_cp(dir.path(), i, &setup, args, None);
        assert_eq!(ours.stdout.matches(said).count(), 1, "{args:?}: {ours:?}");
    }
}

/// cp's "removed" comes before the copy's `-v` line where it removes the destination first
/// (`--remove-destination`), and after it where it removes what it could not open for
/// writing (`-f`: a file this user may not write, a symlink to one, a symlink loop). One
/// source each, so the order is cp's line for line.
#[test]
fn verbose_says_removed_in_cps_order() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "new");
        fs::create_dir(d.join("d")).unwrap();
        fs::set_permissions(d.join("d"), fs::Permissions::from_mode(0o777)).unwrap();
        write(&d.join("d/g"), "old");
        fs::set_permissions(d.join("d/g"), fs::Permissions::from_mode(0o644)).unwrap();
        symlink("g", d.join("d/lg")).unwrap();
        symlink("loop", d.join("d/loop")).unwrap();
    };
    for (i, (args, user)) in [
        (&["-v", "--remove-destination", "f", "d/g"][..], None),
        (&["-v", "-f", "f", "d/g"], Some(NOBODY)),
        (&["-v", "-f", "f", "d/lg"], Some(NOBODY)),
        (&["-v", "-f", "f", "d/loop"], None),
    ]
    .into_iter()
    .enumerate()
    {
        let base = dir.path().join(i.to_string());
        fs::create_dir(&base).unwrap();
        let args: Vec<&OsStr> = args.iter().map(|a| os(a)).collect();
        let (cp, ours, what) = run_both(&base, &setup, &args, user);
        assert_eq!(cp.code, ours.code, "exit status: {what}");
        assert_eq!(cp.stdout, ours.stdout, "stdout, in order: {what}");
        assert_eq!(cp.stderr, ours.stderr, "stderr: {what}");
    }
}

/// A symlink below a directory copied under -H replaces an existing entry as under -P: cp
/// follows only the command line's symlinks, so below it removes the entry first and says
/// "removed" before the copy's line (fuzz seed 0xc2b905df25c9e79d). One entry, so the order
/// is cp's line for line.
#[test]
fn verbose_says_removed_for_a_symlink_below_a_command_line_one_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir(d.join("s")).unwrap();
        symlink("a", d.join("s/w")).unwrap();
        fs::create_dir_all(d.join("d/s")).unwrap();
        symlink("b", d.join("d/s/w")).unwrap();
    };
    for (i, args) in [&["-v", "-H", "-R", "s", "d"][..], &["-v", "-R", "s", "d"]]
        .into_iter()
        .enumerate()
    {
        let base = dir.path().join(i.to_string());
        fs::create_dir(&base).unwrap();
        let args: Vec<&OsStr> = args.iter().map(|a| os(a)).collect();
        let (cp, ours, what) = run_both(&base, &setup, &args, None);
        assert_eq!(cp.code, ours.code, "exit status: {what}");
        assert!(cp.stdout.contains("removed 'd/s/w'\n"), "{what}");
        assert_eq!(cp.stdout, ours.stdout, "stdout, in order: {what}");
        assert_eq!(cp.stderr, ours.stderr, "stderr: {what}");
    }
}

/// A symlink in a directory this user may not write, to a file it may write: cp writes
/// through it, and says so once (mimeo said it also for the removal it did not do; fuzz seed
/// 0x3f385d34190636f0).
#[test]
fn verbose_says_once_a_copy_written_through_a_symlink_it_may_not_replace() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "new");
        write(&d.join("g"), "old");
        nobodys(d, &["f", "g"]);
        // Root's directory, which nobody may not write.
        fs::create_dir(d.join("ro")).unwrap();
        symlink("../g", d.join("ro/l")).unwrap();
        symlink("../g", d.join("ro/f")).unwrap();
    };
    let nobody = Some(NOBODY);
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["-v", "-f", "f", "ro/l"][..], nobody),
            (&["-v", "-f", "-p", "f", "ro/l"], nobody),
            (&["-v", "-r", "-f", "f", "ro"], nobody),
        ],
    );
}

/// cp prints an entry's `-v` line once its destination is decided, before it opens, makes or
/// writes anything: a copy that then fails (a hard link onto an entry, a source it may not
/// read, a directory it may not write into, a dangling symlink) has its line, one refused by
/// the checks (the same file, a directory in the way, `-n`) has none.
#[test]
fn verbose_names_a_copy_that_then_fails_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "new");
        write(&d.join("g"), "old");
        write(&d.join("secret"), "x");
        fs::set_permissions(d.join("secret"), fs::Permissions::from_mode(0o600)).unwrap();
        fs::create_dir(d.join("ro")).unwrap();
        fs::create_dir(d.join("dir")).unwrap();
        fs::create_dir(d.join("into")).unwrap();
        fs::create_dir(d.join("into/f")).unwrap();
        fs::set_permissions(d.join("into"), fs::Permissions::from_mode(0o777)).unwrap();
        symlink("nowhere", d.join("dangling")).unwrap();
        symlink("f", d.join("lf")).unwrap();
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["-v", "-l", "f", "g"][..], None),
            (&["-v", "-s", "f", "g"], None),
            (&["-v", "secret", "copy"], Some(NOBODY)),
            (&["-v", "f", "ro/f"], Some(NOBODY)),
            (&["-v", "-P", "lf", "ro/lf"], Some(NOBODY)),
            (&["-v", "f", "dangling"], None),
            (&["-v", "f", "f"], None),
            (&["-v", "f", "into"], None),
            (&["-v", "-n", "f", "g"], None),
            (&["-v", "-r", "dir", "g"], None),
            // A copy onto "d/" naming a dangling symlink, or into a missing directory, is named
            // before the call that makes it fails; a directory is not.
            (&["-v", "-d", "--force", "lf", "dangling/"], None),
            (&["-v", "-d", "lf", "dangling/"], None),
            (&["-v", "-l", "f", "dangling/"], None),
            (&["-v", "f", "missing/f"], None),
            (&["-v", "-s", "f", "missing/f"], None),
            (&["-v", "-r", "dir", "dangling/"], None),
            (&["-v", "-r", "dir", "missing/dir"], None),
        ],
    );
}

/// Under --parents, a source of one name after one whose parents cp made is taken to go to a
/// new destination, made without a look: what is there fails to be made ("File exists"), and
/// a non-directory has its -v line first, a file named again under -b too; a directory none.
#[test]
fn verbose_names_a_source_made_over_after_new_parents_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s/t")).unwrap();
        write(&d.join("s/x"), "x");
        write(&d.join("f"), "f");
        write(&d.join("g"), "g");
        symlink("f", d.join("l")).unwrap();
        fs::create_dir_all(d.join("d/t")).unwrap();
        write(&d.join("d/g"), "old");
        symlink("g", d.join("d/l")).unwrap();
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["-v", "--parents", "f", "-b", "s/x", "f", "d"][..], None),
            (&["-v", "--parents", "s/x", "g", "d"], None),
            (&["-v", "--parents", "-P", "s/x", "l", "d"], None),
            (&["-v", "--parents", "-r", "s/x", "s/t", "t", "d"], None),
        ],
    );
}

/// As a user other than root: where cp removes the destination before it copies (a symlink
/// or FIFO copied as one), it never opens it, so a file of another user's that it may not
/// write is replaced all the same (also one with other links).
#[test]
fn a_file_removed_first_need_not_be_writable() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "new");
        symlink("f", d.join("l")).unwrap();
        mkfifo(&d.join("p"));
        fs::create_dir(d.join("d")).unwrap();
        fs::set_permissions(d.join("d"), fs::Permissions::from_mode(0o777)).unwrap();
        // Root's files, which nobody may not write.
        write(&d.join("d/g"), "old");
        fs::set_permissions(d.join("d/g"), fs::Permissions::from_mode(0o644)).unwrap();
        fs::hard_link(d.join("d/g"), d.join("d/h")).unwrap();
    };
    for (i, args) in [
        &["-v", "-P", "l", "d/g"][..],
        &["-v", "-R", "l", "d/g"],
        &["-v", "-R", "--copy-contents", "l", "d/g"],
        &["-v", "-a", "l", "d/g"],
        &["-v", "-R", "p", "d/g"],
        &["-v", "-a", "l", "d/h"],
    ]
    .into_iter()
    .enumerate()
    {
        let ours = case_as_cp(dir.path(), i, &setup, args, Some(NOBODY));
        assert_eq!(ours.code, Some(0), "{args:?}: {ours:?}");
    }
}

/// Without -r a FIFO or device is read as a file, yet under -P (`-d`) cp still removes the
/// destination first, as for any source that is no regular file: a node there is replaced by
/// a new file, never opened (so one this user may not write is no failure).
#[test]
fn a_node_read_as_a_file_under_no_dereference_replaces_the_destination_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        for (name, mode) in [("null", 0o644), ("n", 0o666)] {
            rustix::fs::mknodat(
                rustix::fs::CWD,
                d.join(name),
                rustix::fs::FileType::CharacterDevice,
                rustix::fs::Mode::from_raw_mode(mode),
                rustix::fs::makedev(1, 3),
            )
            .unwrap();
        }
        // Root's FIFO, which nobody may not open for writing.
        mkfifo(&d.join("p"));
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["-d", "null", "n"], None),
            (&["-P", "null", "n"], None),
            (&["-d", "null", "p"], Some(NOBODY)),
            (&["-v", "-d", "null", "p"], Some(NOBODY)),
        ],
    );
}

/// A FIFO or socket copied as one under `-L` is made by one call, which finds a file there
/// that this user may not write: cp never opens that file, so it fails with "File exists"
/// (also under `-f`) and leaves it, rather than "Permission denied" or a replacement.
#[test]
fn a_node_made_where_an_unwritable_file_is_fails_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        mkfifo(&d.join("p"));
        drop(std::os::unix::net::UnixListener::bind(d.join("sock")).unwrap());
        // Root's file, which nobody may not write.
        write(&d.join("f"), "old");
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["-R", "-L", "p", "f"], Some(NOBODY)),
            (&["-R", "-L", "-f", "p", "f"], Some(NOBODY)),
            (&["-a", "-L", "-f", "sock", "f"], Some(NOBODY)),
            (&["-R", "-L", "sock", "f"], Some(NOBODY)),
        ],
    );
}

/// As a user other than root, `-u` skips a file of another size that is not older and that
/// this user may not write, as cp skips it, rather than fail to replace it (docs/cp.md, "`-u`
/// also compares sizes").
#[test]
fn update_skips_a_file_it_may_not_write_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "new data");
        symlink("f", d.join("l")).unwrap();
        fs::create_dir(d.join("d")).unwrap();
        fs::set_permissions(d.join("d"), fs::Permissions::from_mode(0o777)).unwrap();
        // Root's file, newer than the source, which nobody may not write.
        write(&d.join("d/g"), "old");
        let later = fs::FileTimes::new()
            .set_modified(std::time::SystemTime::now() + Duration::from_secs(60));
        fs::File::options()
            .write(true)
            .open(d.join("d/g"))
            .unwrap()
            .set_times(later)
            .unwrap();
    };
    for (i, args) in [
        &["-u", "-v", "f", "d/g"][..],
        &["-u", "l", "d/g"],
        &["-R", "-u", "--preserve", "f", "d/g"],
    ]
    .into_iter()
    .enumerate()
    {
        let ours = case_as_cp(dir.path(), i, &setup, args, Some(NOBODY));
        assert_eq!(ours.code, Some(0), "{args:?}: {ours:?}");
    }
}

/// As a user other than root, `-u` with a source it may not read onto a destination symlink:
/// cp compares the source with what the symlink leads to (an older file is no reason to
/// skip), and with nothing where it cannot look (a loop under -f), so it goes on to open the
/// source and fails; the symlink's own newer time does not count.
#[test]
fn update_onto_a_symlink_compares_what_cp_compares_before_an_unreadable_source() {
    let dir = scratch();
    let old = |p: &Path, secs: u64| {
        let at = std::time::UNIX_EPOCH + Duration::from_secs(secs);
        let times = fs::FileTimes::new().set_modified(at);
        let file = fs::File::options().write(true).open(p).unwrap();
        file.set_times(times).unwrap();
    };
    let setup = |d: &Path| {
        // Root's file, which nobody may not read, older than the symlinks.
        write(&d.join("s"), "new");
        fs::set_permissions(d.join("s"), fs::Permissions::from_mode(0o600)).unwrap();
        old(&d.join("s"), 1_300_000_000);
        write(&d.join("t"), "old");
        old(&d.join("t"), 1_200_000_000);
        symlink("t", d.join("l")).unwrap();
        symlink("loop", d.join("loop")).unwrap();
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["-u", "-f", "s", "loop"], Some(NOBODY)),
            (&["-d", "-R", "-u", "-f", "s", "loop"], Some(NOBODY)),
            (&["-u", "s", "l"], Some(NOBODY)),
        ],
    );
}

/// As a user other than root, `-u` keeps what is not older in a directory the user may not
/// change, as cp keeps it, rather than fail to replace it (or write into it) where its sizes
/// or types differ.
#[test]
fn update_keeps_what_it_may_not_replace_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "new data");
        symlink("f", d.join("l")).unwrap();
        mkfifo(&d.join("p"));
        nobodys(d, &["f", "l", "p"]);
        // Root's directory, with a file the user may write, newer than the sources.
        fs::create_dir(d.join("ro")).unwrap();
        write(&d.join("ro/g"), "old");
        fs::set_permissions(d.join("ro/g"), fs::Permissions::from_mode(0o666)).unwrap();
        let later = fs::FileTimes::new()
            .set_modified(std::time::SystemTime::now() + Duration::from_secs(60));
        fs::File::options()
            .write(true)
            .open(d.join("ro/g"))
            .unwrap()
            .set_times(later)
            .unwrap();
    };
    for (i, args) in [
        &["-u", "-v", "f", "ro/g"][..],
        &["-u", "-l", "-f", "f", "ro/g"],
        &["-u", "-d", "l", "ro/g"],
        &["-u", "-R", "p", "ro/g"],
    ]
    .into_iter()
    .enumerate()
    {
        let ours = case_as_cp(dir.path(), i, &setup, args, Some(NOBODY));
        assert_eq!(ours.code, Some(0), "{args:?}: {ours:?}");
    }
}

/// As a user other than root, a source it may not read: cp looks at the destination first, so
/// `-u` skips one that is not older (of another size too), and a backup it cannot make fails
/// first.
#[test]
fn an_unreadable_source_after_update_and_backup_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        // Root's, which nobody may not read.
        write(&d.join("f"), "secret data");
        fs::set_permissions(d.join("f"), fs::Permissions::from_mode(0o600)).unwrap();
        fs::create_dir(d.join("d")).unwrap();
        fs::set_permissions(d.join("d"), fs::Permissions::from_mode(0o777)).unwrap();
        // Root's directory, which nobody may not write.
        fs::create_dir(d.join("ro")).unwrap();
        // Files the user may write, newer than the source.
        for g in ["d/g", "ro/g"] {
            write(&d.join(g), "old");
            fs::set_permissions(d.join(g), fs::Permissions::from_mode(0o666)).unwrap();
            let later = fs::FileTimes::new()
                .set_modified(std::time::SystemTime::now() + Duration::from_secs(60));
            fs::File::options()
                .write(true)
                .open(d.join(g))
                .unwrap()
                .set_times(later)
                .unwrap();
        }
    };
    for (i, (args, code)) in [
        (&["-u", "f", "d/g"][..], 0),
        (&["-u", "-v", "-p", "f", "ro/g"], 0),
        (&["-b", "f", "ro/g"], 1),
        (&["-a", "--backup=numbered", "f", "ro/g"], 1),
    ]
    .into_iter()
    .enumerate()
    {
        let ours = case_as_cp(dir.path(), i, &setup, args, Some(NOBODY));
        assert_eq!(ours.code, Some(code), "{args:?}: {ours:?}");
    }
}

/// As a user other than root, in a directory it may not write: cp renames the old entry to
/// its backup name before it makes a symlink, FIFO or link there, and fails at that.
#[test]
fn a_backup_that_cannot_be_made_fails_first() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "new");
        write(&d.join("g"), "root's");
        symlink("f", d.join("l")).unwrap();
        mkfifo(&d.join("p"));
        // The user's own sources, and root's g (a hard link to which the kernel refuses
        // before it looks at the directory).
        nobodys(d, &["f", "l", "p"]);
        // Root's directory, which nobody may not write, with what is in the way.
        fs::create_dir(d.join("d")).unwrap();
        for name in ["f", "g", "l", "p"] {
            write(&d.join("d").join(name), "old");
        }
    };
    for (i, args) in [
        &["-d", "-b", "l", "d"][..],
        &["-a", "--backup=numbered", "l", "d"],
        &["-R", "-b", "p", "d"],
        &["-l", "-b", "f", "d"],
        &["-l", "-b", "g", "d"],
        &["-pRlL", "--parents", "-b", "g", "d"],
        &["-s", "-b", "/dev/null", "d/f"],
        // A relative link is refused after the backup.
        &["-s", "-b", "f", "d/f"],
    ]
    .into_iter()
    .enumerate()
    {
        let ours = case_as_cp(dir.path(), i, &setup, args, Some(NOBODY));
        assert!(ours.stderr.contains("cannot backup"), "{args:?}: {ours:?}");
    }
}

/// As a user other than root, whose group the source's is not: cp drops the set-id bits of a
/// file it cannot give the source's group, but keeps those of a FIFO.
#[test]
fn set_id_bits_as_cp_keeps_them_without_the_group() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir(d.join("s")).unwrap();
        write(&d.join("s/f"), "x");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            d.join("s/p"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o755),
            0,
        )
        .unwrap();
        fs::create_dir(d.join("d")).unwrap();
        for p in ["s", "s/f", "s/p", "d"] {
            std::os::unix::fs::chown(d.join(p), Some(NOBODY), Some(0)).unwrap();
        }
        for p in ["s/f", "s/p"] {
            fs::set_permissions(d.join(p), fs::Permissions::from_mode(0o4755)).unwrap();
        }
    };
    let args = [os("-a"), os("s/f"), os("s/p"), os("d")];
    same_as_cp(dir.path(), &setup, &args, Some(NOBODY));
}

/// With the mode and owner kept, cp first narrows an existing entry whose owner or group is
/// not the source's to the permission bits both modes share; another user's entry it may not
/// change fails there without a word (after its times, which fail first and are named), and
/// gets no mode and no owner.
#[test]
fn another_users_existing_entry_fails_silently_where_its_mode_cannot_be_narrowed_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s")).unwrap();
        write(&d.join("s/f"), "new");
        nobodys(d, &["s", "s/f"]);
        // Root's directories and file, which nobody may not chmod; the file it may write.
        fs::create_dir_all(d.join("td/s")).unwrap();
        fs::create_dir(d.join("t")).unwrap();
        write(&d.join("t/f"), "old");
        fs::set_permissions(d.join("t/f"), fs::Permissions::from_mode(0o666)).unwrap();
        fs::set_permissions(d.join("td"), fs::Permissions::from_mode(0o777)).unwrap();
        symlink("td", d.join("d")).unwrap();
    };
    let nobody = Some(NOBODY);
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (
                &["-pR", "--no-preserve=timestamps", "-t", "d", "s"][..],
                nobody,
            ),
            (
                &["-R", "--preserve=mode,ownership", "-T", "s", "td/s"],
                nobody,
            ),
            (&["-a", "-T", "s", "td/s"], nobody),
            (&["--preserve=mode,ownership", "s/f", "t/f"], nobody),
            (&["-p", "--no-preserve=timestamps", "s/f", "t/f"], nobody),
            (
                &["-R", "--preserve=mode,ownership", "-T", "s", "td/s"],
                None,
            ),
        ],
    );
}

/// cp words the failures of the attributes it gives the `--parents` directories at the end
/// its own way ("failed to preserve times for", "preserving permissions for", with an ACL to
/// copy or without), and gives them their owner without narrowing their mode first: here
/// root's directories on the way, as nobody.
#[test]
fn parents_attributes_fail_in_cps_words() {
    let dir = scratch();
    let setup = |d: &Path| {
        for top in ["s", "t"] {
            fs::create_dir_all(d.join(top).join("a")).unwrap();
            write(&d.join(top).join("a/f"), "new");
            nobodys(d, &[top, &format!("{top}/a"), &format!("{top}/a/f")]);
            let there = d.join("D").join(top);
            fs::create_dir_all(&there).unwrap();
            fs::set_permissions(&there, fs::Permissions::from_mode(0o777)).unwrap();
        }
        let s = d.join("s");
        mimeo_testkit::run_ok("setfacl", &["-m", "u:1:rx", s.to_str().unwrap()]);
    };
    // One source at a time: the messages of sources copied side by side come in the order
    // they finish.
    let mut cases: Vec<Vec<&str>> = Vec::new();
    for src in ["s/a/f", "t/a/f"] {
        for opts in [
            &["--preserve=mode,ownership"][..],
            &["-a"],
            &["-p", "--no-preserve=timestamps"],
            &["--preserve=ownership"],
        ] {
            cases.push([opts, &["--parents", src, "D"]].concat());
        }
    }
    let nobody = Some(NOBODY);
    let cases: Vec<(&[&str], Option<u32>)> = cases.iter().map(|c| (&c[..], nobody)).collect();
    cases_as_cp(dir.path(), &setup, &cases);
}

/// With -a, cp copies the ACL of each directory `--parents` makes from the source's name
/// without its leading slash, so an absolute source fails there; gnulib's `copy_acl` names
/// that directory in the locale style (`'a\033]0;x\a'`), not in cp's own.
#[test]
fn parents_acl_failures_are_quoted_in_the_locale_style_as_cp() {
    let dir = scratch();
    // One source for both sides, so both name the same absolute path.
    let src = dir.path().join("src");
    let odd = src.join("a\u{1b}]0;x\u{7}b\\'c");
    fs::create_dir_all(&odd).unwrap();
    write(&odd.join("f"), "x");
    open_up(&src).unwrap();
    let setup = |d: &Path| fs::create_dir(d.join("d")).unwrap();
    let file = odd.join("f");
    let args = [os("-a"), os("--parents"), file.as_os_str(), os("d")];
    let ours = same_as_cp(dir.path(), &setup, &args, None);
    assert!(
        ours.stderr.contains(r"\033]0;x\ab\\\'c'"),
        "{}",
        ours.stderr
    );
}

/// A file copied to a name longer than the filesystem takes: cp looks at it first and fails
/// there ("cannot stat"), also where `-f --backup=simple` copies a file to its own backup
/// name, made too long by the suffix.
#[test]
fn a_destination_name_too_long_cannot_be_looked_at_as_cp() {
    let dir = scratch();
    let long = "N".repeat(256);
    let full = "N".repeat(255);
    let setup = |d: &Path| {
        write(&d.join("f"), "x");
        fs::create_dir(d.join("w")).unwrap();
        write(&d.join(&full), "y");
    };
    let in_w = format!("w/{long}");
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["f", &long][..], None),
            (&["f", &in_w], None),
            (&["-f", "--backup=simple", "-S-", &full, &full], None),
        ],
    );
}

/// A directory named again after `--parents` made the way to its first copy (so cp takes
/// the next destination to be new): cp refuses it as a hard link to the first copy before it
/// makes anything, rather than failing to make what is there.
#[test]
fn a_directory_named_again_after_new_parents_is_refused_first_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s")).unwrap();
        write(&d.join("s/f"), "x");
        fs::create_dir_all(d.join("d/s")).unwrap();
        symlink(".", d.join("here")).unwrap();
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["-a", "--parents", "here/s", "s", "d"][..], None),
            (&["-r", "--parents", "here/s", "s", "d"], None),
        ],
    );
}

/// On ext4, which cannot clone: cp names both files of the failed clone, and fails on an
/// empty file too, which it tries to clone all the same. (cp leaves an empty file behind,
/// where a failed copy of mimeo's leaves none: docs/cp.md, "An existing file is replaced
/// atomically".)
#[test]
fn a_failed_clone_names_its_source() {
    let Some(fs) = mimeo_testkit::LoopFs::try_new(mimeo_testkit::FsKind::Ext4, 64) else {
        return;
    };
    let setup = |d: &Path| {
        write(&d.join("f"), "data");
        write(&d.join("empty"), "");
    };
    for (i, src) in ["f", "empty"].into_iter().enumerate() {
        let base = fs.path().join(format!("clone{i}"));
        open_up(&base).unwrap();
        let args = [os("--reflink=always"), os(src), os("g")];
        let (cp, ours, what) = run_both(&base, &setup, &args, None);
        same_output(&cp, &ours, &what);
        assert!(ours.stderr.contains(&format!("from '{src}'")), "{what}");
    }
}

/// Onto a symlink to a file this user may not write, cp fails to open that file before it
/// would clone: where mimeo's copy that replaces the symlink fails too (ext4 cannot clone),
/// cp's failure is the one reported, and the symlink and its file are left as they were.
#[test]
fn a_failed_copy_onto_a_symlink_cp_could_not_write_through_fails_as_cp() {
    let fs = mimeo_testkit::LoopFs::try_new(mimeo_testkit::FsKind::Ext4, 64)
        .expect("an ext4 loop mount");
    let setup = |d: &Path| {
        write(&d.join("s"), "new");
        // Root's file, which nobody may not write.
        write(&d.join("f"), "old");
        symlink("f", d.join("l")).unwrap();
    };
    cases_as_cp(
        fs.path(),
        &setup,
        &[
            (&["--reflink=always", "s", "l"], Some(NOBODY)),
            (&["-a", "--reflink=always", "s", "l"], Some(NOBODY)),
        ],
    );
}

/// `--reflink=always` clones whatever cp copies, also into a device node it writes into and
/// from one it reads as a file, which the kernel refuses: cp fails with "failed to clone ...:
/// Invalid argument" before it writes anything, and so does mimeo. With --attributes-only
/// there is nothing to clone.
#[test]
fn reflink_always_into_or_from_a_node_fails_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "data");
        for name in ["null", "src-null"] {
            rustix::fs::mknodat(
                rustix::fs::CWD,
                d.join(name),
                rustix::fs::FileType::CharacterDevice,
                rustix::fs::Mode::from_raw_mode(0o666),
                rustix::fs::makedev(1, 3),
            )
            .unwrap();
        }
    };
    let ours = case_as_cp(
        dir.path(),
        0,
        &setup,
        &["--reflink=always", "f", "null"],
        None,
    );
    assert!(ours.stderr.contains("failed to clone"), "{ours:?}");
    // Read as a file: cp leaves the empty file it made, mimeo none (docs/cp.md, "A failed
    // clone").
    for (i, args) in [
        &[
            "--reflink=always",
            "-R",
            "--copy-contents",
            "src-null",
            "out",
        ][..],
        &["--reflink=always", "src-null", "out"],
    ]
    .into_iter()
    .enumerate()
    {
        let base = dir.path().join(format!("contents{i}"));
        fs::create_dir(&base).unwrap();
        let args: Vec<&OsStr> = args.iter().map(|a| os(a)).collect();
        let (cp, ours, what) = run_both(&base, &setup, &args, None);
        same_output(&cp, &ours, &what);
        assert!(ours.stderr.contains("failed to clone"), "{what}");
        assert!(!base.join("ours/out").exists(), "{what}");
    }
    // --attributes-only copies no data into the node it opens, so nothing is cloned either.
    let ours = case_as_cp(
        dir.path(),
        1,
        &setup,
        &["-a", "--attributes-only", "--reflink=always", "f", "null"],
        None,
    );
    assert_eq!(ours.code, Some(0), "{ours:?}");
}

/// As a user other than root, -a (and --preserve=all) skips the xattrs the kernel will not
/// let it set on an entry of another user's, as cp does: an existing directory, and the
/// directories --parents makes below one.
#[test]
fn xattrs_that_cannot_be_set_are_skipped_as_cp_skips_them() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s/a")).unwrap();
        write(&d.join("s/a/f"), "x");
        for p in ["s", "s/a", "s/a/f"] {
            rustix::fs::setxattr(
                d.join(p),
                "user.note",
                b"1",
                rustix::fs::XattrFlags::empty(),
            )
            .unwrap();
            std::os::unix::fs::chown(d.join(p), Some(NOBODY), None).unwrap();
        }
        // Root's directories, which nobody may not write: `d` itself may.
        fs::create_dir_all(d.join("d/s/a")).unwrap();
        fs::set_permissions(d.join("d"), fs::Permissions::from_mode(0o777)).unwrap();
    };
    for (i, args) in [
        &["-a", "s", "d"][..],
        &["-r", "--preserve=all", "s", "d"],
        &["-a", "--parents", "s/a/f", "d"],
    ]
    .into_iter()
    .enumerate()
    {
        case_as_cp(dir.path(), i, &setup, args, Some(NOBODY));
    }
}

/// Issue 23 item 12, as `nobody`: a source directory it may search but not list, named
/// through another such directory (with a trailing slash too), is copied with its mode and
/// times and reported as cp reports it.
#[test]
fn unreadable_source_directories_as_cp_copies_them() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s/p/x/in")).unwrap();
        write(&d.join("s/p/x/in/f"), "y");
        fs::create_dir(d.join("d")).unwrap();
        for p in ["s", "s/p", "s/p/x", "s/p/x/in", "s/p/x/in/f", "d"] {
            std::os::unix::fs::chown(d.join(p), Some(NOBODY), None).unwrap();
        }
        for p in ["s/p/x", "s/p"] {
            fs::set_permissions(d.join(p), fs::Permissions::from_mode(0o311)).unwrap();
        }
    };
    for (i, args) in [
        &["-r", "s/p/x/", "d/"][..],
        &["-a", "s/p/x", "d"],
        &["-a", "s", "d"],
    ]
    .into_iter()
    .enumerate()
    {
        case_as_cp(dir.path(), i, &setup, args, Some(NOBODY));
    }
}

/// A destination below a symlink loop: cp cannot stat it, and under -f goes on to replace
/// it, so the making fails for the loop, and for a file the removal -f then tries.
#[test]
fn forced_below_a_symlink_loop_fails_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s/sub")).unwrap();
        write(&d.join("f"), "x");
        mkfifo(&d.join("p"));
        symlink("f", d.join("l")).unwrap();
        symlink("jn", d.join("s/jn")).unwrap();
    };
    for (i, args) in [
        &["-f", "f", "s/jn/d"][..],
        &["-f", "-n", "f", "s/jn/d"],
        &["-f", "-r", "p", "s/jn/d"],
        &["-f", "-P", "l", "s/jn/d"],
        &["-f", "-l", "f", "s/jn/d"],
        &["-f", "-r", "s/.", "s/jn/d"],
        &["--attributes-only", "-f", "-r", "s", "s/jn/d"],
        &["-r", "s", "s/jn/d"],
    ]
    .into_iter()
    .enumerate()
    {
        case_as_cp(dir.path(), i, &setup, args, None);
    }
}

/// As `nobody`, a destination directory it may write and search but not list takes the
/// copies, and a file named twice in a directory it may only search is the same file, as
/// cp says (not a failed stat of the directory).
#[test]
fn destinations_in_directories_that_cannot_be_listed_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s/in")).unwrap();
        write(&d.join("s/f"), "x");
        write(&d.join("s/in/g"), "y");
        fs::create_dir(d.join("w")).unwrap();
        fs::create_dir(d.join("x")).unwrap();
        write(&d.join("x/f"), "z");
        fs::set_permissions(d.join("w"), fs::Permissions::from_mode(0o333)).unwrap();
        fs::set_permissions(d.join("x"), fs::Permissions::from_mode(0o111)).unwrap();
    };
    for (i, args) in [
        &["s/f", "w/n"][..],
        &["s/f", "w/"],
        &["-r", "s", "w"],
        &["-a", "s/in", "w/"],
        &["x/f", "x/f"],
        &["-f", "x/f", "x/./f"],
    ]
    .into_iter()
    .enumerate()
    {
        case_as_cp(dir.path(), i, &setup, args, Some(NOBODY));
    }
}

/// As `nobody`, into a destination directory it may list and write but not search, cp's
/// look at each destination fails first ("cannot stat"), not the making of it: for a file,
/// a FIFO, a link, a symlink and a directory, named or met in a tree.
#[test]
fn destinations_in_directories_that_cannot_be_searched_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s/in/sub")).unwrap();
        write(&d.join("s/in/f"), "x");
        mkfifo(&d.join("s/in/p"));
        symlink("f", d.join("s/in/l")).unwrap();
        fs::create_dir_all(d.join("t/in/sub")).unwrap();
        fs::create_dir_all(d.join("u/in")).unwrap();
        write(&d.join("u/in/g"), "y");
        fs::create_dir_all(d.join("d/t/in")).unwrap();
        fs::create_dir_all(d.join("d/u/in")).unwrap();
        fs::create_dir(d.join("w")).unwrap();
        for p in ["w", "d/t/in", "d/u/in"] {
            fs::set_permissions(d.join(p), fs::Permissions::from_mode(0o666)).unwrap();
        }
    };
    // One failure a case: the failures of a tree are reported as they happen, in no fixed order.
    for (i, args) in [
        &["s/in/f", "w/n"][..],
        &["-R", "s/in/p", "w"],
        &["-R", "s/in/l", "w"],
        &["-l", "s/in/f", "w"],
        &["-r", "s/in/sub", "w"],
        &["-r", "t", "d"],
        &["-r", "u", "d"],
    ]
    .into_iter()
    .enumerate()
    {
        case_as_cp(dir.path(), i, &setup, args, Some(NOBODY));
    }
}

/// As a user other than root, the xattrs of a read-only file are copied as cp copies them
/// (it gives the owner write permission for the time it takes).
#[test]
fn xattrs_of_a_read_only_file_are_copied_as_cp_copies_them() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s")).unwrap();
        fs::create_dir(d.join("d")).unwrap();
        write(&d.join("s/f"), "x");
        rustix::fs::setxattr(
            d.join("s/f"),
            "user.note",
            b"1",
            rustix::fs::XattrFlags::empty(),
        )
        .unwrap();
        for p in ["s", "s/f", "d"] {
            std::os::unix::fs::chown(d.join(p), Some(NOBODY), None).unwrap();
        }
        fs::set_permissions(d.join("s/f"), fs::Permissions::from_mode(0o444)).unwrap();
    };
    let args = [os("-a"), os("s/f"), os("d")];
    same_as_cp(dir.path(), &setup, &args, Some(NOBODY));
}

/// Sets the xattrs `names` (value "1") on `p`.
fn xattrs(p: &Path, names: &[&str]) {
    for name in names {
        rustix::fs::setxattr(p, *name, b"1", rustix::fs::XattrFlags::empty()).unwrap();
    }
}

/// Drains the FIFO `p` once a writer opens it, so that a copy written into it never blocks.
fn drained(p: &Path) {
    let p = p.to_path_buf();
    std::thread::spawn(move || {
        use std::io::Read;
        let mut sink = Vec::new();
        fs::File::open(p).and_then(|mut f| f.read_to_end(&mut sink))
    });
}

/// xattrs the destination will not take (user.* on a FIFO written into, or on a symlink `-s`
/// makes) are named in cp's words, the attribute's name twice (cp quotes both names into one
/// buffer): every one with --attributes-only or --preserve=xattr, none with -a, all but an
/// ENOTSUP with --preserve=all; only --preserve=xattr fails the copy, and then the times and
/// a node's mode are still set.
#[test]
fn xattrs_the_destination_will_not_take_are_named_as_cp_names_them() {
    let dir = scratch();
    let fifo = |d: &Path| {
        write(&d.join("f"), "x");
        fs::set_permissions(d.join("f"), fs::Permissions::from_mode(0o640)).unwrap();
        xattrs(&d.join("f"), &["user.a", "user.b"]);
        util::tree::fixed_times(&d.join("f"));
        mkfifo(&d.join("d"));
        drained(&d.join("d"));
    };
    // With whether the source's times are kept.
    let cases: [(&[&str], bool); 7] = [
        (&["--preserve=xattr", "f", "d"], false),
        (&["--preserve=all", "f", "d"], true),
        (&["-a", "f", "d"], true),
        (&["-a", "--attributes-only", "f", "d"], true),
        (&["--preserve=xattr,all", "f", "d"], true),
        (&["--preserve=xattr", "-a", "f", "d"], true),
        (&["-p", "--preserve=xattr", "f", "d"], true),
    ];
    for (i, (args, times)) in cases.into_iter().enumerate() {
        let ours = case_as_cp(dir.path(), i, &fifo, args, None);
        let named = ours
            .stderr
            .contains("setting attribute 'user.a' for 'user.a'");
        assert_eq!(
            named,
            args[0] != "-a" || args[1] != "f",
            "{args:?}: {ours:?}"
        );
        // The times are set before the xattrs fail.
        let base = dir.path().join(i.to_string());
        let mtime = |side: &str| fs::metadata(base.join(side).join("d")).unwrap().modified();
        if times {
            assert_eq!(mtime("cp").unwrap(), mtime("ours").unwrap(), "{args:?}");
        }
    }
    let link = |d: &Path| {
        write(&d.join("f"), "x");
        xattrs(&d.join("f"), &["user.a"]);
    };
    let cases: [&[&str]; 4] = [
        &["-s", "--preserve=xattr", "f", "l"],
        &["-s", "--preserve=all", "f", "l"],
        &["-s", "-a", "f", "l"],
        &["-s", "-a", "--attributes-only", "f", "l"],
    ];
    for (i, args) in cases.into_iter().enumerate() {
        let ours = case_as_cp(dir.path(), 10 + i, &link, args, None);
        let named = ours
            .stderr
            .contains("setting attribute 'user.a' for 'user.a'");
        assert_eq!(
            named,
            args[1] != "-a" || args.len() == 5,
            "{args:?}: {ours:?}"
        );
    }
}

/// As `nobody`, the xattrs of a source directory it may not read (nor list) are named as cp
/// names them ("getting attribute"), where cp names them; under -L too, where cp reads them
/// by the name met without following it (a symlink's own, none).
#[test]
fn xattrs_of_an_unreadable_directory_are_named_as_cp_names_them() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s/x")).unwrap();
        write(&d.join("s/f"), "y");
        symlink("x", d.join("s/lx")).unwrap();
        fs::create_dir_all(d.join("t/x")).unwrap();
        for x in ["s/x", "t/x"] {
            xattrs(&d.join(x), &["user.k", "user.j"]);
        }
        for p in ["s", "s/x", "s/f", "t", "t/x"] {
            std::os::unix::fs::chown(d.join(p), Some(NOBODY), None).unwrap();
        }
        for x in ["s/x", "t/x"] {
            fs::set_permissions(d.join(x), fs::Permissions::from_mode(0o311)).unwrap();
        }
    };
    let cases: [&[&str]; 5] = [
        &["-a", "--attributes-only", "s", "d"],
        &["-a", "s", "d"],
        &["-r", "--preserve=all", "s", "d"],
        &["-r", "-L", "--preserve=all", "t", "d"],
        &["-r", "-L", "--preserve=xattr", "s/lx", "d"],
    ];
    for (i, args) in cases.into_iter().enumerate() {
        let ours = case_as_cp(dir.path(), i, &setup, args, Some(NOBODY));
        let named = ours
            .stderr
            .contains("getting attribute 'user.k' of 'user.k'");
        assert_eq!(named, i != 1 && i != 4, "{args:?}: {ours:?}");
    }
}

/// `-l` and `-s` failures name what the link would point to, and a relative `-s` outside the
/// working directory names the link quoted only where it must be (gnulib's `quotef`); `-v`
/// says "removed" only where cp removes first (not with `--attributes-only`).
#[test]
fn link_failures_are_worded_as_cp_words_them() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "new");
        write(&d.join("d"), "old");
        fs::hard_link(d.join("d"), d.join("d2")).unwrap();
        symlink("f", d.join("lf")).unwrap();
        for sub in ["sub", "x y", "it's", "a:b"] {
            fs::create_dir(d.join(sub)).unwrap();
        }
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["-s", "f", "sub/"][..], None),
            (&["-s", "f", "x y/"], None),
            (&["-s", "f", "it's/"], None),
            (&["-s", "f", "a:b/"], None),
            (&["-l", "-a", "lf", "d"], Some(NOBODY)),
            (&["-v", "-a", "--attributes-only", "f", "d2"], None),
            (&["-v", "-l", "-a", "lf", "d2"], None),
        ],
    );
}

/// `--parents` with a source ending in "." or "..": cp makes the directory that holds it as a
/// parent too ("s/a" for "s/a/."), and where it has just made that one, fails to make the
/// copy as new ("cannot create directory 'd/s/a/.': File exists"); where it was there, it
/// copies into it. Without `-r` the directory is omitted first.
#[test]
fn parents_of_a_source_ending_in_a_dot_as_cp() {
    let dir = scratch();
    for (i, there) in ["d", "d/s", "d/s/a"].into_iter().enumerate() {
        let setup = |d: &Path| {
            fs::create_dir_all(d.join("s/a/b")).unwrap();
            write(&d.join("s/a/b/f"), "x");
            fs::create_dir_all(d.join(there)).unwrap();
        };
        for (j, src) in ["s/a/.", "s/a/..", "s/.", "s/a/./", "s/a/.//."]
            .into_iter()
            .enumerate()
        {
            let base = dir.path().join(format!("{i}-{j}"));
            fs::create_dir(&base).unwrap();
            let args = [os("--parents"), os("-R"), os("-v"), os(src), os("d")];
            same_as_cp(&base, &setup, &args, None);
        }
        // Without -r, cp omits the directory before it looks at the destination.
        let base = dir.path().join(format!("{i}-not-recursive"));
        fs::create_dir(&base).unwrap();
        same_as_cp(
            &base,
            &setup,
            &[os("--parents"), os("s/a/."), os("d")],
            None,
        );
    }
}

#[test]
fn parents_sources_lose_their_trailing_slashes_as_cp_strips_them() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("a/b")).unwrap();
        fs::create_dir(d.join("d")).unwrap();
    };
    for (i, args) in [
        &["--strip-trailing-slashes", "--parents", "a/b/", "d"][..],
        &[
            "--strip-trailing-slashes",
            "--parents",
            "-v",
            "-r",
            "a//",
            "d",
        ],
        // Without the option, the copy is named without them still.
        &["--parents", "-v", "-r", "a/b//", "d"],
        &["--parents", "-r", "a/b/", "a/", "d"],
    ]
    .into_iter()
    .enumerate()
    {
        case_as_cp(dir.path(), i, &setup, args, None);
    }
    // And in a refusal of a copy into itself (which cp makes in part: the trees differ).
    let base = dir.path().join("into");
    fs::create_dir(&base).unwrap();
    let args = [os("--parents"), os("-r"), os("a/"), os("a")];
    let (cp, ours, what) = run_both(&base, &setup, &args, None);
    same_output(&cp, &ours, &what);
}

/// A `--parents` source whose parent is where an earlier directory was refused as a copy
/// into itself (`s/` then `s/.`, into `s`): cp made that copy, and finds it there (not new):
/// the later one is named twice, or under -l copied into itself too. (cp fills the copy in
/// part: the trees differ.)
#[test]
fn a_parent_where_a_copy_into_itself_went_is_found_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s/x")).unwrap();
        write(&d.join("s/f"), "f\n");
    };
    for (i, args) in [
        &["--parents", "-R", "s/", "s/.", "s/"][..],
        &["--parents", "-Rb", "s/", "s/.", "s/"],
        &["--parents", "-Rl", "s/", "s/.", "s/"],
        &["--parents", "-Rlb", "--attributes-only", "s/", "s/.", "s/"],
    ]
    .into_iter()
    .enumerate()
    {
        let base = dir.path().join(i.to_string());
        fs::create_dir(&base).unwrap();
        let args: Vec<&OsStr> = args.iter().map(|a| os(a)).collect();
        let (cp, ours, what) = run_both(&base, &setup, &args, None);
        same_output(&cp, &ours, &what);
    }
}

/// cp keeps its flag that a --parents destination is new from one source to the next: a
/// source without a directory in its path, after one whose parent cp made, is made without a
/// look at what is there ("File exists"), unless it was named before (without -b), also where
/// an earlier source of that name made it.
#[test]
fn a_source_after_new_parents_finds_its_destination_there_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("a/b")).unwrap();
        fs::create_dir_all(d.join("s")).unwrap();
        fs::create_dir_all(d.join("d/s")).unwrap();
        write(&d.join("a/b/f"), "f\n");
        write(&d.join("g"), "g\n");
        write(&d.join("d/g"), "old\n");
        symlink("g", d.join("l")).unwrap();
        symlink("x", d.join("d/l")).unwrap();
        write(&d.join("h"), "h\n");
        write(&d.join("e"), "e\n");
        fs::create_dir_all(d.join("d/e")).unwrap();
    };
    for (i, args) in [
        &["-r", "--parents", "a/b/f", "s", "d"][..],
        &["-r", "--parents", "a/b/f", "s/", "d"],
        &["--parents", "a/b/f", "s", "d"],
        &["-f", "--parents", "a/b/f", "g", "d"],
        &["-b", "--parents", "a/b/f", "g", "d"],
        &["-P", "--parents", "a/b/f", "l", "d"],
        &["-r", "--parents", "s", "a/b/f", "g", "d"],
        &["-r", "--parents", "g", "a/b/f", "g", "d"],
        &["-r", "--parents", "s", "a/b/f", "s", "d"],
        &["-r", "--parents", "a/b/f", "./s", "d"],
        // A file named again under -b, after the flag was set: what the earlier copy made,
        // or the directory it failed to replace, is found there all the same.
        &["-b", "--parents", "a/b/f", "h", "h", "d"],
        &["-b", "--parents", "a/b/f", "h", "h", "h", "d"],
        &["-b", "--parents", "g", "a/b/f", "g", "d"],
        &["-rb", "--parents", "e", "a/b/f", "e", "d"],
    ]
    .into_iter()
    .enumerate()
    {
        case_as_cp(dir.path(), i, &setup, args, None);
    }
    // A parent that cannot be made (`d` is root's) sets the flag all the same: cp sets it
    // once it has looked at the source directory, before it tries to make the copy. (The
    // parent's failure may come first: messages keep no order, docs/cp.md.)
    let base = dir.path().join("nobody");
    fs::create_dir(&base).unwrap();
    let args = ["-rb", "--parents", "e", "a/b/f", "e", "d"].map(os);
    let (cp, ours, what) = run_both(&base, &setup, &args, Some(NOBODY));
    assert_eq!(cp.code, ours.code, "exit status: {what}");
    let lines = |t: &str| {
        let mut l: Vec<String> = t.lines().map(str::to_owned).collect();
        l.sort_unstable();
        l
    };
    assert_eq!(lines(&cp.stderr), lines(&ours.stderr), "stderr: {what}");
    assert!(cp.stderr.contains("'d/e': File exists"), "{what}");
}

/// Without --strip-trailing-slashes too, cp names the destination of a `--parents` source
/// after the source less its trailing slashes (`'a/b/' -> 'd/a/b'`).
#[test]
fn parents_destinations_are_named_without_the_sources_trailing_slashes_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("a/b/c")).unwrap();
        fs::create_dir(d.join("d")).unwrap();
    };
    for (i, args) in [
        &["--parents", "-v", "-r", "a/b/", "d"][..],
        &["--parents", "-v", "-r", "a/", "d"],
    ]
    .into_iter()
    .enumerate()
    {
        case_as_cp(dir.path(), i, &setup, args, None);
    }
}

/// cp joins a target directory and a name with one slash, whatever slashes end the
/// directory (`d//` and `f` make `d/f`), in `-v` lines and messages alike.
#[test]
fn a_target_directory_with_trailing_slashes_is_joined_as_cp_joins_it() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "f\n");
        fs::create_dir_all(d.join("a/b")).unwrap();
        fs::create_dir(d.join("d")).unwrap();
    };
    for (i, args) in [
        &["-v", "f", "d//"][..],
        &["-rv", "a", "d//"],
        &["-v", "-t", "d///", "f"],
        &["--parents", "-rv", "a/b", "d//"],
    ]
    .into_iter()
    .enumerate()
    {
        case_as_cp(dir.path(), i, &setup, args, None);
    }
}

/// A later source that an earlier one copies too, to the same place (`s/.` and `s/x/` into
/// `d`): cp makes its directories in the earlier copy, and names them there under -v; the
/// later one merges into them (and into the directories `--parents` makes on the way), and
/// names only its files. Not where the earlier copy refused it as a cyclic symlink (-L).
#[test]
fn verbose_names_a_directory_in_the_copy_that_cp_makes_it_in() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s/x/y/z")).unwrap();
        write(&d.join("s/x/f"), "f\n");
        write(&d.join("s/x/y/g"), "g\n");
        write(&d.join("s/h"), "h\n");
        write(&d.join("f"), "f\n");
        fs::create_dir(d.join("d")).unwrap();
        symlink("d", d.join("dl")).unwrap();
        symlink(".", d.join("s/c")).unwrap();
    };
    for (i, args) in [
        // -L: the earlier copy refuses s/./c, a symlink to its own source, as cyclic, so the
        // later one makes d/c and names it.
        &["-rvL", "s/.", "s/c", "d"][..],
        &["-rvL", "s/.", "s/c/", "d"],
        &["-rv", "s/.", "s/x/", "d"],
        &["-rv", "s/.", "s/x", "s/x/y/", "d"],
        &["-rv", "s/.", "-L", "f", "s/x/", "dl"],
        &["-av", "s/.", "s/x", "d"],
        // --parents: what the later one makes on the way, the earlier one's copy makes.
        &["-rv", "--parents", "s", "s/./x/y", "d"],
        &["-rv", "--parents", "s", "s/./x/y/z", "d"],
        &["-rv", "--parents", "s/x", "s/./x/y", "d"],
    ]
    .into_iter()
    .enumerate()
    {
        case_as_cp(dir.path(), i, &setup, args, None);
    }
}

/// Below a source or destination that ends in slashes, cp joins names with one slash (`a//`
/// and `b` make `a/b`), and keeps the slashes inside it (`a//b/` and `f` make `a//b/f`).
#[test]
fn names_below_a_root_that_ends_in_slashes_are_joined_as_cp_joins_them() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("a/b")).unwrap();
        write(&d.join("a/b/f"), "f\n");
        write(&d.join("a/g"), "g\n");
        fs::create_dir(d.join("d")).unwrap();
    };
    for (i, args) in [
        &["-rv", "a//", "new"][..],
        &["-rv", "a//b/", "new"],
        &["-rv", "a", "new//"],
        &["-rv", "a///", "d"],
        &["-r", "-v", "--parents", "a//b//", "d"],
        &["-rv", "--no-preserve=mode", "a//", "d///"],
    ]
    .into_iter()
    .enumerate()
    {
        case_as_cp(dir.path(), i, &setup, args, None);
    }
}

/// A FIFO read as a file keeps cp waiting in its open until a writer comes, before it looks
/// at the destination: a writer that comes later still meets a reader, also where the
/// destination is then refused (a dangling symlink).
#[test]
fn a_fifo_source_waits_for_its_writer_before_the_destination_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        mkfifo(&d.join("p"));
        symlink("nowhere", d.join("d")).unwrap();
    };
    let bin = link_as(dir.path(), util::mimeo().get_program().as_ref(), "cp").unwrap();
    let mut ours_path = OsString::from(&bin);
    ours_path.push(":/usr/bin:/bin");
    let mut ran = Vec::new();
    for (side, path) in [("cp", OsString::from("/usr/bin:/bin")), ("ours", ours_path)] {
        let place = dir.path().join(side);
        fs::create_dir(&place).unwrap();
        setup(&place);
        // The writer comes once the copy has had time to open the FIFO and go on. A
        // non-blocking open for writing fails (ENXIO) until a reader has it open: it is tried
        // again for a while, as a loaded machine may start the copy late.
        let fifo = place.join("p");
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            let flags = rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::NONBLOCK;
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            loop {
                match rustix::fs::open(&fifo, flags, rustix::fs::Mode::empty()) {
                    // Open: the copy has the FIFO open for reading. It may be gone by the
                    // write (it then fails on the destination), which proves nothing more.
                    Ok(fd) => {
                        let _ = rustix::io::write(&fd, b"data\n");
                        return true;
                    }
                    Err(rustix::io::Errno::NXIO) if std::time::Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    Err(_) => return false,
                }
            }
        });
        let runner = Runner {
            path: &path,
            user: None,
            timeout: Duration::from_secs(30),
        };
        let args = [OsString::from("-T"), "p".into(), "d".into()];
        let out = runner.run(&place, &args, &[]).unwrap();
        ran.push((out, writer.join().unwrap()));
    }
    let (ours, ours_fed) = ran.pop().unwrap();
    let (cp, cp_fed) = ran.pop().unwrap();
    same_output(&cp, &ours, &format!("cp: {cp:?}\nmimeo: {ours:?}"));
    assert!(
        cp.stderr.contains("not writing through dangling symlink"),
        "{cp:?}"
    );
    assert!(cp_fed, "cp's open waits for the writer");
    assert!(ours_fed, "mimeo waits for the writer as cp does");
}

/// A FIFO read as a file whose destination cannot be made (its parent is missing, or under -f
/// a symlink loop): cp opens the source (waiting for its writer) before it fails on the
/// destination, so a writer that comes later still meets a reader, and its write changes the
/// FIFO's mtime as under cp.
#[test]
fn a_fifo_source_is_opened_before_a_missing_parent_fails_as_cp() {
    let dir = scratch();
    let bin = link_as(dir.path(), util::mimeo().get_program().as_ref(), "cp").unwrap();
    let mut ours_path = OsString::from(&bin);
    ours_path.push(":/usr/bin:/bin");
    let cases = [
        (
            &["--reflink", "p", "s/x/d"][..],
            "cannot create regular file 's/x/d'",
        ),
        (&["-f", "p", "lp/d"], "cannot remove 'lp/d'"),
    ];
    for (i, (args, message)) in cases.into_iter().enumerate() {
        fifo_source_before_its_destination(dir.path(), i, &ours_path, args, message);
    }
}

/// One case of the test above: `args` run by cp and by mimeo in a place of their own with
/// the FIFO `p` and the symlink loop `lp`; cp's messages contain `message`.
fn fifo_source_before_its_destination(
    dir: &Path,
    i: usize,
    ours_path: &OsString,
    args: &[&str],
    message: &str,
) {
    let mut ran = Vec::new();
    for (side, path) in [
        ("cp", OsString::from("/usr/bin:/bin")),
        ("ours", ours_path.clone()),
    ] {
        let place = dir.join(format!("{side}{i}"));
        fs::create_dir(&place).unwrap();
        mkfifo(&place.join("p"));
        symlink("lp", place.join("lp")).unwrap();
        // As in the test above: a non-blocking open for writing fails (ENXIO) until the copy
        // has the FIFO open for reading; one that never opens it leaves the writer to give up
        // after its deadline, so the test fails rather than hangs.
        let fifo = place.join("p");
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            let flags = rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::NONBLOCK;
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            loop {
                match rustix::fs::open(&fifo, flags, rustix::fs::Mode::empty()) {
                    Ok(fd) => {
                        let _ = rustix::io::write(&fd, b"data\n");
                        return true;
                    }
                    Err(rustix::io::Errno::NXIO) if std::time::Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    Err(_) => return false,
                }
            }
        });
        let runner = Runner {
            path: &path,
            user: None,
            timeout: Duration::from_secs(30),
        };
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        let out = runner.run(&place, &args, &[]).unwrap();
        ran.push((out, writer.join().unwrap()));
    }
    let (ours, ours_fed) = ran.pop().unwrap();
    let (cp, cp_fed) = ran.pop().unwrap();
    same_output(
        &cp,
        &ours,
        &format!("{args:?}\ncp: {cp:?}\nmimeo: {ours:?}"),
    );
    assert!(cp.stderr.contains(message), "{args:?}: {cp:?}");
    assert!(cp_fed, "{args:?}: cp's open waits for the writer");
    assert!(
        ours_fed,
        "{args:?}: mimeo opens the FIFO before the destination as cp does"
    );
}

/// -f removes a destination cp cannot open (a socket, another user's read-only file), and
/// --remove-destination any: in a directory the user may not write, cp fails at that removal
/// ("cannot remove"), before it makes anything.
#[test]
fn a_destination_removed_first_in_a_closed_directory_fails_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "new\n");
        fs::create_dir(d.join("z")).unwrap();
        drop(std::os::unix::net::UnixListener::bind(d.join("z/sk")).unwrap());
        fs::set_permissions(d.join("z/sk"), fs::Permissions::from_mode(0o777)).unwrap();
        write(&d.join("z/ro"), "old\n");
        fs::set_permissions(d.join("z/ro"), fs::Permissions::from_mode(0o444)).unwrap();
        fs::set_permissions(d.join("z"), fs::Permissions::from_mode(0o755)).unwrap();
    };
    for (i, args) in [
        &["-f", "f", "z/sk"][..],
        &["--remove-destination", "f", "z/sk"],
        &["-f", "f", "z/ro"],
        &["--remove-destination", "f", "z/ro"],
    ]
    .iter()
    .enumerate()
    {
        let ours = case_as_cp(dir.path(), i, &setup, args, Some(NOBODY));
        assert!(ours.stderr.contains("cannot remove"), "{args:?}: {ours:?}");
    }
}

/// A user's own file, in a directory it may not write, is written in place; its final mode
/// (0400 here) leaves the owner no write, yet the copy completes as cp's does.
#[test]
fn a_file_written_in_place_ends_read_only_for_its_owner_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        for sub in ["s", "d"] {
            fs::create_dir(d.join(sub)).unwrap();
        }
        write(&d.join("s/f"), "new\n");
        fs::set_permissions(d.join("s/f"), fs::Permissions::from_mode(0o400)).unwrap();
        write(&d.join("d/f"), "old\n");
        nobodys(d, &["s", "s/f", "d/f"]);
    };
    for (i, args) in [&["-a", "s/f", "d/f"][..], &["-p", "s/f", "d"]]
        .into_iter()
        .enumerate()
    {
        let ours = case_as_cp(dir.path(), i, &setup, args, Some(NOBODY));
        assert_eq!(ours.code, Some(0), "{args:?}: {ours:?}");
    }
}

/// cp takes any bytes as a suffix, as it takes them in names: a suffix that is not UTF-8
/// names the backup, and one that swallowed the destination leaves the operand missing.
#[test]
fn a_suffix_of_any_bytes_is_taken_as_cp_takes_it() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "new");
        write(&d.join("g"), "old");
    };
    let bad = OsStr::from_bytes(b"s/41ls3\xd7");
    for (i, args) in [
        vec![
            os("-b"),
            os("-S"),
            OsStr::from_bytes(b"\xd7"),
            os("f"),
            os("g"),
        ],
        vec![os("-R"), os("-S"), os("~"), os("-S"), bad, os("d")],
        vec![
            OsStr::from_bytes(b"--suffix=.\xff"),
            os("--backup=simple"),
            os("f"),
            os("g"),
        ],
    ]
    .into_iter()
    .enumerate()
    {
        let base = dir.path().join(i.to_string());
        fs::create_dir(&base).unwrap();
        same_as_cp(&base, &setup, &args, None);
    }
}

/// cp counts a file named again before it looks at the destination: where the first copy
/// fails there (a destination directory nobody may not search), the later ones are skipped
/// with a warning all the same.
#[test]
fn a_file_named_again_after_a_failed_copy_is_warned_about_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "x");
        fs::create_dir(d.join("ro")).unwrap();
        fs::set_permissions(d.join("ro"), fs::Permissions::from_mode(0o700)).unwrap();
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["f", "f", "./f", "ro"][..], Some(NOBODY)),
            (&["-a", "f", "f", "ro"], Some(NOBODY)),
            // With a backup, each is tried.
            (&["-b", "f", "f", "ro"], Some(NOBODY)),
        ],
    );
}

/// `-i` as a user who may not write the destination: cp words its question by what it will
/// do (replace, under `-f` or `--remove-destination`; try anyway, otherwise), for any entry
/// but a symlink, a directory or FIFO too, and where it writes through a symlink, for what
/// the symlink leads to. No answer is a no.
#[test]
fn questions_about_an_unwritable_destination_are_worded_as_cps() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "new");
        write(&d.join("g"), "old");
        fs::create_dir(d.join("e")).unwrap();
        fs::set_permissions(d.join("e"), fs::Permissions::from_mode(0o755)).unwrap();
        mkfifo(&d.join("p"));
        symlink("g", d.join("lg")).unwrap();
    };
    for (i, args) in [
        // A regular file is written through a symlink: cp asks about what it leads to,
        // except where it would not write through it (a backup, -s, -l).
        &["-i", "-P", "f", "lg"][..],
        &["-i", "-R", "f", "lg"],
        &["-i", "-b", "f", "lg"],
        &["-i", "-P", "lg", "g"],
        &["-i", "f", "g"],
        &["-i", "--remove-destination", "f", "g"],
        &["-i", "-s", "-T", "f", "e"],
        &["-i", "-f", "-s", "-T", "f", "e"],
        &["-i", "-r", "f", "p"],
    ]
    .into_iter()
    .enumerate()
    {
        case_as_cp(dir.path(), i, &setup, args, Some(NOBODY));
    }
}

/// cp stops at `--help` or `--version` as it reads it: each `--context=CTX` before it has
/// been warned about, none after it. (What they print differs, help-and-version.)
#[test]
fn context_warnings_come_before_help_and_version_as_cps() {
    let dir = scratch();
    let setup = |d: &Path| write(&d.join("f"), "x");
    for (i, args) in [
        &["--context=x", "--version", "--context=y", "f", "g"][..],
        &["--cont=x", "-a", "--help", "--context=y"],
        &["-a", "--context=x", "--context=y", "--vers"],
    ]
    .into_iter()
    .enumerate()
    {
        let base = dir.path().join(i.to_string());
        fs::create_dir(&base).unwrap();
        let args: Vec<&OsStr> = args.iter().map(|a| os(a)).collect();
        let (cp, ours, what) = run_both(&base, &setup, &args, None);
        assert_eq!(cp.code, ours.code, "exit status: {what}");
        assert_eq!(cp.stderr, ours.stderr, "stderr: {what}");
    }
}

/// cp opens the source of a file copy before it makes or opens the destination: an
/// unreadable file, or a socket (which cannot be opened), fails there first, also where the
/// destination's directory is missing or the destination may not be written.
#[test]
fn a_source_that_cannot_be_opened_fails_before_its_destination_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("secret"), "x");
        fs::set_permissions(d.join("secret"), fs::Permissions::from_mode(0o600)).unwrap();
        write(&d.join("ro"), "old");
        fs::set_permissions(d.join("ro"), fs::Permissions::from_mode(0o444)).unwrap();
        drop(std::os::unix::net::UnixListener::bind(d.join("sock")).unwrap());
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["-v", "secret", "missing/x"][..], Some(NOBODY)),
            (&["-v", "sock", "missing/x"], None),
            (&["-v", "sock", "ro"], Some(NOBODY)),
            (&["-v", "-T", "secret", "ro"], Some(NOBODY)),
        ],
    );
}

/// A file nobody may not write, in a directory nobody may not change: under -f (after its
/// -v line) or --remove-destination (before it) cp fails to remove it; without them, to
/// open it. A writable one is written in place.
#[test]
fn a_destination_that_cannot_be_removed_is_reported_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "new");
        fs::create_dir(d.join("ro")).unwrap();
        write(&d.join("ro/g"), "old");
        fs::set_permissions(d.join("ro/g"), fs::Permissions::from_mode(0o444)).unwrap();
        write(&d.join("ro/w"), "old");
        fs::set_permissions(d.join("ro/w"), fs::Permissions::from_mode(0o666)).unwrap();
        symlink("g", d.join("ro/l")).unwrap();
    };
    for (i, args) in [
        &["-v", "-f", "f", "ro/g"][..],
        &["-v", "--remove-destination", "f", "ro/g"],
        &["-v", "-f", "f", "ro/l"],
        &["-v", "f", "ro/g"],
        &["-v", "-f", "f", "ro/w"],
        &["-v", "-R", "-f", "f", "ro/g"],
    ]
    .into_iter()
    .enumerate()
    {
        case_as_cp(dir.path(), i, &setup, args, Some(NOBODY));
    }
}

/// Another user's file in a sticky, world-writable directory: where cp removes it first
/// (`--remove-destination`, or `-f` where it cannot open it) the kernel refuses, and cp says
/// "cannot remove", with its -v line under -f only; mimeo's temporary, made there all the
/// same, is not what fails (nor its clone under `--reflink=always`). One it may write is
/// written in place. A symlink copied as one is refused the same way (cp removes first); one
/// made under `-s -f` fails at cp's rename of the link it made under a temporary name.
#[test]
fn another_users_file_in_a_sticky_directory_is_not_removed_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "new");
        fs::create_dir(d.join("t")).unwrap();
        fs::set_permissions(d.join("t"), fs::Permissions::from_mode(0o1777)).unwrap();
        write(&d.join("t/g"), "old");
        fs::set_permissions(d.join("t/g"), fs::Permissions::from_mode(0o644)).unwrap();
        write(&d.join("t/w"), "old");
        fs::set_permissions(d.join("t/w"), fs::Permissions::from_mode(0o666)).unwrap();
        symlink("f", d.join("l")).unwrap();
    };
    let nobody = Some(NOBODY);
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["-f", "f", "t/g"][..], nobody),
            (&["--remove-destination", "f", "t/g"], nobody),
            (&["-v", "-f", "f", "t/g"], nobody),
            (&["-v", "--remove-destination", "f", "t/g"], nobody),
            (&["--reflink=always", "-f", "f", "t/g"], nobody),
            (
                &["-v", "--reflink=always", "--remove-destination", "f", "t/g"],
                nobody,
            ),
            (&["-f", "-a", "f", "t/g"], nobody),
            (&["-v", "-f", "f", "t/w"], nobody),
            (&["-v", "-f", "-R", "f", "t/g"], nobody),
            (&["-P", "--remove-destination", "l", "t/g"], nobody),
            (&["-v", "-a", "-f", "l", "t/g"], nobody),
            (&["-v", "-f", "-s", "/dev/null", "t/g"], nobody),
            (&["--remove-destination", "-s", "/dev/null", "t/g"], nobody),
        ],
    );
}

/// Under -i, cp asks about a file before it goes on to the next source: a later source that
/// is omitted or missing is reported after the question, also where a source after that goes
/// to the same name (asked about again, or refused as just made).
#[test]
fn questions_come_before_a_later_sources_failure_as_in_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        write(&d.join("f"), "new");
        write(&d.join("g"), "new");
        fs::create_dir(d.join("dir")).unwrap();
        fs::create_dir(d.join("d")).unwrap();
        write(&d.join("d/f"), "old");
        write(&d.join("d/g"), "old");
        for p in ["a", "b", "e"] {
            fs::create_dir(d.join(p)).unwrap();
        }
        write(&d.join("a/f"), "1");
        write(&d.join("b/f"), "2");
    };
    for (i, args) in [
        &["-i", "f", "dir", "missing", "d"][..],
        &["-i", "f", "missing", "g", "dir", "d"],
        &["-i", "-b", "f", "dir", "f", "d"],
        &["-i", "-bl", "f", "dir", "f", "d/"],
        &["-i", "a/f", "dir", "b/f", "e"],
        &["-i", "-b", "a/f", "missing", "a/f", "e"],
    ]
    .into_iter()
    .enumerate()
    {
        case_as_cp(dir.path(), i, &setup, args, None);
    }
}

/// Two sources for one destination name under -i: cp asks about the file the first made
/// before it refuses to overwrite it, so no answer skips it without a word (also with
/// backups, which let the second copy replace the first).
#[test]
fn just_created_files_are_asked_about_first_as_in_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        for p in ["a", "b", "d"] {
            fs::create_dir(d.join(p)).unwrap();
        }
        write(&d.join("a/f"), "1");
        write(&d.join("b/f"), "2");
    };
    for (i, args) in [
        &["-i", "a/f", "b/f", "d"][..],
        &["-i", "--backup=simple", "a/f", "a/f", "d"],
        &["-i", "--backup=numbered", "a/f", "b/f", "d"],
        &["a/f", "b/f", "d"],
    ]
    .into_iter()
    .enumerate()
    {
        case_as_cp(dir.path(), i, &setup, args, None);
    }
}

/// A file named twice (by the same name in one directory, however that directory is named)
/// is copied once, wherever the second would go, and the second is skipped with cp's warning
/// in its turn: after the questions of the sources before it, after a failed source between
/// them (the first asked about before that failure). Another name of it (a hard link, or
/// through a symlink to its directory) is another source, a source whose --parents could not
/// be made is not counted, and backups copy it again.
#[test]
fn a_file_named_twice_is_copied_once_wherever_it_goes_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        for sub in ["s", "d", "e", "p"] {
            fs::create_dir(d.join(sub)).unwrap();
        }
        write(&d.join("s/f"), "f");
        std::os::unix::fs::symlink("s", d.join("l")).unwrap();
        fs::hard_link(d.join("s/f"), d.join("s/g")).unwrap();
        write(&d.join("d/f"), "old");
        write(&d.join("e/s"), "not a directory");
    };
    for (i, args) in [
        &["--parents", "s/f", "l/f", "p"][..],
        &["-r", "s/f", "-t", "p", "missing", "s/f"],
        &["-ri", "s/f", "s/.", "s/f", "d"],
        &["s/f", "s/g", "l/f", "p"],
        &["--parents", "s/f", "s/f", "e"],
        &["-b", "s/f", "l/f", "d"],
        &["-i", "s/f", "s/.", "./s/f", "d"],
    ]
    .iter()
    .enumerate()
    {
        case_as_cp(dir.path(), i, &setup, args, None);
    }
}

/// `--parents` with `-s` or `-l`: a directory source whose destination cp takes to be new
/// (its name was just made as a parent of an earlier source) is made as a directory all the
/// same, which fails with "cannot create directory" and copies nothing below it; the earlier
/// file's own failure comes first.
#[test]
fn a_directory_made_over_under_links_fails_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        for sub in ["s", "s/p", "d"] {
            fs::create_dir(d.join(sub)).unwrap();
        }
        write(&d.join("s/a"), "a");
        write(&d.join("s/p/b"), "b");
    };
    for (i, args) in [
        &["--parents", "-r", "s/a", "s", "-s", "d"][..],
        &["--parents", "-r", "s/a", "s", "-l", "d"],
        &["--parents", "-r", "s/p", "s", "-l", "d"],
    ]
    .iter()
    .enumerate()
    {
        case_as_cp(dir.path(), i, &setup, args, None);
    }
}

/// A file named twice around a source that fails (a directory without -r): the second is
/// still the same source named again, warned about and skipped, with -i too.
#[test]
fn a_file_named_twice_around_a_failure_is_named_twice_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s")).unwrap();
        fs::create_dir(d.join("d")).unwrap();
        write(&d.join("s/f"), "f\n");
    };
    for (i, args) in [
        &["-l", "s/f", "s/.", "s/f", "d/"][..],
        &["-i", "-l", "s/f", "s/.", "s/f", "d/"],
        &["-i", "s/f", "s/.", "s/f", "d"],
    ]
    .into_iter()
    .enumerate()
    {
        case_as_cp(dir.path(), i, &setup, args, None);
    }
}

/// Under -f, cp goes on past a destination "d/" it cannot look at for a symlink loop: a
/// non-directory's copy fails as onto a dangling symlink ("cannot create symbolic link 'd/':
/// Not a directory", "cannot create fifo 'd/': File exists"), and a file's, whose source it
/// opens first, at the removal of what it could not open, after its -v line (mimeo said
/// "cannot stat 'd/'"; fuzz seed 0x4c1b98dc3210399d). So does a file's copy into a loop
/// ("d/x"), whose -v line was missing. A symlink that cannot be made beside "d/" (a directory
/// nobody may not write) fails there, onto a loop or a dangling symlink.
#[test]
fn forced_onto_a_looping_slash_makes_a_non_directory_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir(d.join("s")).unwrap();
        write(&d.join("s/x"), "x");
        symlink("54", d.join("s/54")).unwrap();
        symlink("s", d.join("ls")).unwrap();
        write(&d.join("f"), "new");
        symlink("f", d.join("lf")).unwrap();
        mkfifo(&d.join("p"));
        symlink("d", d.join("d")).unwrap();
        nobodys(d, &["s", "s/x", "s/54", "ls", "f", "lf", "p", "d"]);
        // Root's directory, where nobody cannot make the symlink cp renames over "d/".
        fs::create_dir(d.join("ro")).unwrap();
        symlink("54", d.join("ro/54")).unwrap();
        symlink("nowhere", d.join("ro/dd")).unwrap();
    };
    let seed = ["--strip-trailing-slashes", "-f", "--rec", "ls", "s/54/"];
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&seed[..], Some(NOBODY)),
            (&seed, None),
            (&["-fv", "-r", "ls", "d/"], None),
            (&["-fb", "-d", "lf", "d/"], None),
            (&["-fn", "-r", "lf", "s/54/"], None),
            (&["-fv", "f", "d/"], None),
            (&["-fu", "lf", "s/54/"], Some(NOBODY)),
            (&["-fv", "-l", "f", "d/"], None),
            (&["-fv", "-s", "f", "d/"], None),
            (&["-fv", "-r", "p", "s/54/"], None),
            (&["-fv", "f", "d/x"], None),
            (&["-f", "-r", "lf", "ro/54/"], Some(NOBODY)),
            (&["-f", "-r", "lf", "ro/dd/"], Some(NOBODY)),
            // Without -f cp stops at the look.
            (&["-r", "ls", "d/"], None),
        ],
    );
}

/// A directory source named through a symlink (`s/t/`, `t` leading to `../s`) after that
/// symlink itself (`s/t`), into `d` (a symlink to a directory): cp copies the symlink first,
/// and then finds it at the destination before it looks for the directory among those it
/// copied, so the symlink leading to the source is the same file (not "will not create hard
/// link", where the first source `s` was that directory); one leading elsewhere is a
/// non-directory in the way (fuzz seed 0xc6f2ed3a5b4eb16e).
#[test]
fn a_symlink_a_source_made_is_met_before_a_directory_named_twice_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s/x")).unwrap();
        fs::create_dir(d.join("td")).unwrap();
        write(&d.join("s/f"), "f");
        symlink("../s", d.join("s/t")).unwrap();
        symlink("x", d.join("s/u")).unwrap();
        symlink("td", d.join("d")).unwrap();
    };
    cases_as_cp(
        dir.path(),
        &setup,
        &[
            (&["-r", "s", "s/t", "s/t/", "d"], None),
            (&["-r", "s", "s/t", "s/t/", "d"], Some(NOBODY)),
            (&["-r", "s/t", "s/t/", "d"], None),
            (&["-r", "-n", "s", "s/t", "s/t/", "d"], None),
            (&["-r", "--backup", "s", "s/t", "s/t/", "d"], None),
            (&["-r", "s/x", "s/u", "s/u/", "d"], None),
            (&["-r", "s/x", "s/u", "s/u/", "d"], Some(NOBODY)),
        ],
    );
}

/// Under -i, a source that fails after a directory's walk (`cp -i -b -t d s/. s/e missing`)
/// does not let the files named after the walk run ahead of it: the walk meets `d/./e` first
/// and the later `s/e` asks about the copy the walk made, as in cp. Its failure is said
/// before the walk's questions (mimeo takes the walk up once the sources are all looked at);
/// the questions come in cp's order (fuzz seed 0x691f276a199ac9f0).
#[test]
fn a_failure_after_a_walk_under_i_lets_no_later_file_run_ahead_as_cp() {
    let dir = scratch();
    let setup = |d: &Path| {
        fs::create_dir_all(d.join("s")).unwrap();
        fs::create_dir_all(d.join("d")).unwrap();
        write(&d.join("s/e"), "new");
        write(&d.join("s/g"), "new");
        write(&d.join("d/g"), "old");
    };
    let questions = |t: &str| -> Vec<String> {
        t.split_inclusive("? ")
            .filter(|p| p.ends_with("? "))
            .map(|p| p.rsplit('\n').next().unwrap_or(p).to_owned())
            .collect()
    };
    let pieces = |t: &str| {
        let mut v: Vec<String> = t.split_inclusive(['\n', ' ']).map(str::to_owned).collect();
        v.sort();
        v
    };
    for (i, a) in [
        &["-i", "-a", "-b", "-t", "d", "s/.", "s/e", "missing"][..],
        &["-i", "-r", "-t", "d", "s/.", "s/g", "s/e", "missing"][..],
    ]
    .iter()
    .enumerate()
    {
        let base = dir.path().join(i.to_string());
        fs::create_dir(&base).unwrap();
        let args: Vec<&OsStr> = a.iter().map(|a| os(a)).collect();
        let (cp, ours, what) = run_both(&base, &setup, &args, None);
        assert_eq!(cp.code, ours.code, "exit status: {what}");
        assert!(!questions(&cp.stderr).is_empty(), "{what}");
        assert_eq!(questions(&cp.stderr), questions(&ours.stderr), "{what}");
        assert_eq!(pieces(&cp.stderr), pieces(&ours.stderr), "{what}");
        let opts = CompareOptions {
            atime: false,
            mtime: false,
            ..CompareOptions::default()
        };
        let diff = compare_trees(&base.join("cp"), &base.join("ours"), &opts).unwrap();
        assert!(diff.differences.is_empty(), "trees: {what}\n{diff:?}");
    }
}

/// A directory copied into a destination directory the user may not search or list (made
/// so by an earlier `--parents` source's walk, or merged into from an earlier run): cp copies
/// into it by name, so its source is looked at first ("cannot access" one it may not list)
/// and only the entries fail, never the destination directory itself ("cannot open ... for
/// reading").
#[test]
fn a_destination_directory_the_user_may_not_search_fails_on_its_entries_as_cp() {
    let dir = scratch();
    // The source `s/z` with mode `src`; `d/z` already there with mode `dst`, if given. One
    // entry only: the order in which cp meets several is the file system's.
    let setup = |src: u32, dst: Option<u32>| {
        move |d: &Path| {
            fs::create_dir_all(d.join("s/z")).unwrap();
            fs::create_dir_all(d.join("d")).unwrap();
            write(&d.join("s/z/va"), "x");
            if dst.is_some() {
                fs::create_dir(d.join("d/z")).unwrap();
            }
            for p in ["s", "s/z", "s/z/va", "d", "d/z"] {
                if d.join(p).exists() {
                    std::os::unix::fs::chown(d.join(p), Some(NOBODY), Some(NOBODY)).unwrap();
                }
            }
            let mode = |p: &str, m| fs::set_permissions(d.join(p), fs::Permissions::from_mode(m));
            if let Some(m) = dst {
                mode("d/z", m).unwrap();
            }
            mode("s/z", src).unwrap();
        }
    };
    let parents: &[&str] = &["-r", "--parents", "s/z/va", "s/z", "d", "-p"];
    let cases: &[(u32, Option<u32>, &[&str])] = &[
        (0o000, None, parents),
        (0o644, None, parents),
        (0o644, None, &["-pr", "--parents", "s/z/va", "s/z", "d"]),
        (0o755, Some(0o644), &["-r", "s/z", "d"]),
        (0o755, Some(0o000), &["-a", "s/z", "d"]),
        (0o644, Some(0o644), &["-a", "s/z/", "d/"]),
        (0o000, Some(0o000), &["-pr", "s/z", "d"]),
    ];
    for (i, &(src, dst, args)) in cases.iter().enumerate() {
        case_as_cp(dir.path(), i, &setup(src, dst), args, Some(NOBODY));
    }
    // A source it may search but not list: the second root gives `d/s/z` that mode, which
    // may come before the first root gives its `--parents` directories theirs (a race, hence
    // the repeats); cp changes them by name, so neither fails.
    for i in 0..20 {
        let setup = setup(0o311, None);
        case_as_cp(dir.path(), cases.len() + i, &setup, parents, Some(NOBODY));
    }
}
