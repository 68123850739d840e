//! The overwrite decision on made-up entries: no filesystem, every branch that a test tree
//! would need a special setup for (another user, a sticky mark, a dangling symlink).

use super::*;
use crate::options::Preserve;

const REG: u32 = sys::S_IFREG;
const DIR: u32 = sys::S_IFDIR;
const LNK: u32 = sys::S_IFLNK;
const FIFO: u32 = sys::S_IFIFO;

fn meta(kind: u32, ino: u64, mtime: i64) -> Meta {
    Meta {
        mode: kind | 0o644,
        uid: 1000,
        gid: 1000,
        nlink: 1,
        ino,
        dev: 1,
        rdev: 0,
        size: 10,
        blocks: 8,
        atime: (mtime, 0),
        mtime: (mtime, 0),
    }
}

const USER: Process = Process {
    euid: 1000,
    egid: 1000,
    umask: 0o022,
};

/// Rules with nothing to ask, nothing made before, no backup and no suspect directory.
fn plain<'a>(opts: &'a Options, process: &'a Process, writable: &'a dyn Fn() -> bool) -> Rules<'a> {
    Rules {
        opts,
        process,
        follows: false,
        suspect: false,
        just_created: None,
        ask: None,
        writable,
        backup_is_source: None,
        changeable: None,
        read_node: false,
    }
}

/// The decision for `src` onto `dst` under `opts`, run by a user who may write everything;
/// symlinks point nowhere.
fn decide_as(opts: &Options, process: &Process, src: &Meta, dst: Option<&Meta>) -> Decision {
    let writable = || true;
    let rules = plain(opts, process, &writable);
    decided(&rules, src, dst, Err(Errno::NOENT))
}

/// [`decide`] where a source symlink points nowhere and a destination one to `dst_target`:
/// the one place that knows how the decision looks entries up.
fn decided(
    rules: &Rules<'_>,
    src: &Meta,
    dst: Option<&Meta>,
    dst_target: sys::Result<Meta>,
) -> Decision {
    let look = Lookups {
        src: &|_| None,
        dst_target: &|| dst_target,
        same_entry: &|| false,
    };
    decide(rules, src, dst, &look)
}

fn run(opts: &Options, src: &Meta, dst: Option<&Meta>) -> Decision {
    decide_as(opts, &USER, src, dst)
}

#[test]
fn nothing_there_is_created_and_the_same_inode_is_refused() {
    let o = Options::default();
    let src = meta(REG, 1, 100);
    assert_eq!(run(&o, &src, None), Decision::Create);
    assert_eq!(
        run(&o, &src, Some(&src)),
        Decision::Refuse(Conflict::SameFile)
    );
}

#[test]
fn directories_merge_and_refuse_other_types() {
    let o = Options::default();
    let (dir, reg) = (meta(DIR, 1, 100), meta(REG, 2, 100));
    assert_eq!(run(&o, &dir, Some(&meta(DIR, 3, 0))), Decision::Merge);
    assert_eq!(
        run(&o, &dir, Some(&reg)),
        Decision::Refuse(Conflict::NonDirectoryInTheWay)
    );
    assert_eq!(
        run(&o, &reg, Some(&meta(DIR, 3, 0))),
        Decision::Refuse(Conflict::DirectoryInTheWay)
    );
}

#[test]
fn the_options_choose_how_a_file_is_replaced() {
    let (src, dst) = (meta(REG, 1, 100), meta(REG, 2, 50));
    let mut o = Options::default();
    assert_eq!(run(&o, &src, Some(&dst)), Decision::Replace);
    o.inplace = true;
    assert_eq!(run(&o, &src, Some(&dst)), Decision::InPlace);
    o.remove_destination = true;
    assert_eq!(run(&o, &src, Some(&dst)), Decision::Recreate);
    let o = Options {
        backup: Some(Backup::Numbered),
        ..Options::default()
    };
    assert_eq!(run(&o, &src, Some(&dst)), Decision::Recreate);
    // A regular file is written into a FIFO, socket or device node.
    let o = Options::default();
    assert_eq!(run(&o, &src, Some(&meta(FIFO, 2, 0))), Decision::WriteInto);
    // A socket cannot be opened: -f replaces it, as cp removes what it cannot open.
    let sock = meta(sys::S_IFSOCK, 2, 0);
    assert_eq!(run(&o, &src, Some(&sock)), Decision::WriteInto);
    let forced = Options {
        force: true,
        ..Options::default()
    };
    assert_eq!(run(&forced, &src, Some(&sock)), Decision::Recreate);
    // A destination with other links is removed first when link groups are kept.
    let o = Options {
        preserve: Preserve {
            links: true,
            ..Preserve::default()
        },
        ..Options::default()
    };
    let linked = Meta { nlink: 2, ..dst };
    assert_eq!(run(&o, &src, Some(&linked)), Decision::Recreate);
}

#[test]
fn no_clobber_and_update_skip_what_they_keep() {
    let src = meta(REG, 1, 100);
    let o = Options {
        overwrite: Overwrite::NoClobber,
        ..Options::default()
    };
    assert_eq!(run(&o, &src, Some(&meta(REG, 2, 0))), Decision::Skip);
    // The source itself too (cp 9.1 asks -n before it asks whether they are one file), and a
    // directory is merged into itself.
    assert_eq!(run(&o, &src, Some(&src)), Decision::Skip);
    let dir = meta(DIR, 3, 100);
    assert_eq!(run(&o, &dir, Some(&dir)), Decision::Merge);
    let o = Options {
        overwrite: Overwrite::Update,
        ..Options::default()
    };
    // Same size and not older: up to date. Older, another size, or marked incomplete: not.
    assert_eq!(run(&o, &src, Some(&meta(REG, 2, 100))), Decision::Skip);
    assert_eq!(run(&o, &src, Some(&meta(REG, 2, 99))), Decision::Replace);
    let shorter = Meta {
        size: 9,
        ..meta(REG, 2, 200)
    };
    assert_eq!(run(&o, &src, Some(&shorter)), Decision::Replace);
    let marked = Meta {
        mode: REG | sys::S_ISVTX | 0o600,
        ..meta(REG, 2, 200)
    };
    assert_eq!(run(&o, &src, Some(&marked)), Decision::Replace);
    // Another type is never a copy.
    assert_eq!(run(&o, &src, Some(&meta(LNK, 2, 200))), Decision::Replace);
    // But a symlink cp would write through is judged by what it points to, by cp's rule.
    let writable = || true;
    let rules = plain(&o, &USER, &writable);
    let link = meta(LNK, 2, 0);
    let newer = Ok(Meta {
        size: 1,
        ..meta(REG, 3, 100)
    });
    assert_eq!(decided(&rules, &src, Some(&link), newer), Decision::Skip);
    let older = Ok(meta(REG, 3, 99));
    assert_eq!(decided(&rules, &src, Some(&link), older), Decision::Replace);
}

#[test]
fn in_a_suspect_directory_update_keeps_only_a_provably_finished_copy() {
    let o = Options::archive();
    let o = Options {
        overwrite: Overwrite::Update,
        ..o
    };
    let src = meta(REG, 1, 100);
    let writable = || true;
    let rules = Rules {
        suspect: true,
        ..plain(&o, &USER, &writable)
    };
    let run = |d: &Meta| decided(&rules, &src, Some(d), Err(Errno::NOENT));
    // Newer is not enough: the times must be the source's.
    assert_eq!(run(&meta(REG, 2, 200)), Decision::Replace);
    assert_eq!(run(&meta(REG, 2, 100)), Decision::Skip);
    let other_mode = Meta {
        mode: REG | 0o600,
        ..meta(REG, 2, 100)
    };
    assert_eq!(run(&other_mode), Decision::Replace);
}

#[test]
fn a_file_this_user_may_not_write_is_refused_unless_forced() {
    let (src, dst) = (meta(REG, 1, 100), meta(REG, 2, 50));
    let mut o = Options::default();
    let read_only = || false;
    let rules = |o: &Options| -> Decision {
        let r = plain(o, &USER, &read_only);
        decided(&r, &src, Some(&dst), Err(Errno::NOENT))
    };
    assert_eq!(rules(&o), Decision::Refuse(Conflict::NotWritable));
    o.force = true;
    assert_eq!(rules(&o), Decision::Recreate);
    // -u: one not older (of another size) is skipped by cp's rule rather than refused; an
    // older one is refused as without -u.
    o.force = false;
    o.overwrite = Overwrite::Update;
    let newer = Meta {
        size: 9,
        ..meta(REG, 2, 200)
    };
    let r = plain(&o, &USER, &read_only);
    let run = |d: &Meta| decided(&r, &src, Some(d), Err(Errno::NOENT));
    assert_eq!(run(&newer), Decision::Skip);
    assert_eq!(run(&dst), Decision::Refuse(Conflict::NotWritable));
    // So is one it may write in a directory it may not change.
    let writable = || true;
    let fixed = || false;
    let r = Rules {
        writable: &writable,
        changeable: Some(&fixed),
        read_node: false,
        ..r
    };
    assert_eq!(
        decided(&r, &src, Some(&newer), Err(Errno::NOENT)),
        Decision::Skip
    );
    assert_eq!(
        decided(&r, &src, Some(&dst), Err(Errno::NOENT)),
        Decision::Replace
    );
}

#[test]
fn links_instead_of_copies() {
    let src = meta(REG, 1, 100);
    let mut o = Options {
        link: Some(LinkInstead::Symbolic),
        ..Options::default()
    };
    assert_eq!(
        run(&o, &src, Some(&meta(REG, 2, 0))),
        Decision::Refuse(Conflict::LinkExists(LinkInstead::Symbolic))
    );
    o.force = true;
    assert_eq!(run(&o, &src, Some(&meta(REG, 2, 0))), Decision::Recreate);
    // A hard link onto another link of the same inode is there already.
    let o = Options {
        link: Some(LinkInstead::Hard),
        ..Options::default()
    };
    assert_eq!(run(&o, &src, Some(&src)), Decision::Skip);
}

#[test]
fn a_second_source_onto_what_the_first_made_is_refused_and_asking_can_skip() {
    let (src, dst) = (meta(REG, 1, 100), meta(REG, 2, 50));
    let o = Options::default();
    let writable = || true;
    let no = || false;
    let mut rules = Rules {
        just_created: Some(dst.id()),
        ..plain(&o, &USER, &writable)
    };
    let d = decided(&rules, &src, Some(&dst), Err(Errno::NOENT));
    assert_eq!(
        d,
        Decision::Refuse(Conflict::JustCreated { symlink: false })
    );
    let o = Options {
        interactive: true,
        ..Options::default()
    };
    rules.opts = &o;
    rules.just_created = None;
    rules.ask = Some(&no);
    let d = decided(&rules, &src, Some(&dst), Err(Errno::NOENT));
    assert_eq!(d, Decision::Skip);
}

#[test]
fn a_destination_symlink_that_cannot_be_looked_through_is_refused_a_dangling_one_replaced() {
    let (src, link) = (meta(REG, 1, 100), meta(LNK, 2, 50));
    let o = Options::default();
    let writable = || true;
    let rules = plain(&o, &USER, &writable);
    let denied = decided(&rules, &src, Some(&link), Err(Errno::ACCESS));
    assert_eq!(denied, Decision::Refuse(Conflict::CannotStat(libc::EACCES)));
    let dangling = decided(&rules, &src, Some(&link), Err(Errno::NOENT));
    assert_eq!(dangling, Decision::Replace);
    // Pointing to the source itself: the same file.
    let to_src = decided(&rules, &src, Some(&link), Ok(src));
    assert_eq!(to_src, Decision::Refuse(Conflict::SameFile));
}

#[test]
fn same_file_follows_one_symlink_never_two() {
    let (file, a, b) = (meta(REG, 1, 0), meta(LNK, 2, 0), meta(LNK, 3, 0));
    let o = Options::default();
    let writable = || true;
    let rules = plain(&o, &USER, &writable);
    // `src` symlink (pointing to `src_to`) or file onto `dst` (pointing to `dst_to`).
    let same = |src: &Meta, src_to: Option<Meta>, dst: &Meta, dst_to: Option<Meta>| {
        let look = Lookups {
            src: &|follow| if follow { src_to } else { Some(*src) },
            dst_target: &|| dst_to.ok_or(Errno::NOENT),
            same_entry: &|| false,
        };
        same_file(&rules, src, dst, dst, &look) == Same::Refused
    };
    assert!(same(&a, Some(file), &file, None));
    assert!(!same(&a, Some(file), &b, Some(file)));
    assert!(!same(&a, None, &file, None));
    assert!(same(&file, None, &b, Some(file)));
}

#[test]
fn dry_run_actions() {
    assert_eq!(Decision::Recreate.action(), Some(Action::Replace));
    assert_eq!(Decision::InPlace.action(), Some(Action::WriteInto));
    assert_eq!(Decision::Refuse(Conflict::SameFile).action(), None);
}
