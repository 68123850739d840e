//! cp's rules for a source named more than once, which the copy ([`super::exec`], also in
//! every process of a run spread over several) and the dry run ([`super::plan`]) apply
//! alike: a file named again is skipped with "source file ... specified more than once"; a
//! directory named again into the same place likewise, and into another place refused
//! ("will not create hard link"), also where a later source holds it. The record they read
//! and grow, [`Named`], is plain data in [`super::work`], sent to the other processes of a run.

use super::context::{Root, relative_symlink_elsewhere, same_name_paths};
use super::roots::{file_source_id, root_file_key};
use super::work::{Dest, Named, NamedDir};
use crate::data::meta::Process;
use crate::options::{Dereference, LinkInstead, Options, Overwrite};
use crate::place::decide::kernel_refuses_link;
use crate::report::{Error, Op, Refusal, Warning};
use crate::sys::{self, Meta};
use rustix::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

impl Named {
    /// Whether `root`, the `index`th root and not a directory, was named before (known by
    /// its [`FileKey`](super::work::FileKey)). Only with `several` sources, and not with backups, where cp copies it
    /// again.
    pub(crate) fn file_again(&mut self, opts: &Options, root: &Root, index: u32) -> bool {
        if opts.backup.is_some() {
            return false;
        }
        let Some(key) = root_file_key(root, &mut self.dir_seen) else {
            return false;
        };
        let again = self.files.contains(&key);
        if again {
            self.files_twice.push(index);
        } else {
            self.files.push(key);
        }
        again
    }

    /// [`Named::file_again`] for a source that failed before it had a root: cp counted it
    /// as named before it looked at the destination.
    pub(crate) fn failed_file_again(&mut self, opts: &Options, src: &Path) -> bool {
        if opts.backup.is_some() {
            return false;
        }
        let Some(key) = file_source_id(opts, src) else {
            return false;
        };
        let again = self.files.contains(&key);
        if !again {
            self.files.push(key);
        }
        again
    }

    /// What cp says of the directory root `root` (going to `dest`, known with several
    /// sources only) if it was named before, and records it otherwise, as the `index`th root.
    /// Named before to the same place: copied once, with a warning; to another place:
    /// refused, unless command-line symlinks are followed (`-H`, `-L`), where cp copies it
    /// again. A root refused as a copy into itself counts as named.
    pub(crate) fn dir_again(
        &mut self,
        opts: &Options,
        dest: Option<Dest>,
        root: &Root,
        index: u32,
    ) -> Option<Result<Warning, Error>> {
        let id = root.meta.id();
        // cp looks at the destination first (but at one it takes to be new): the source
        // itself, or not a directory, is reported as such later, and the root is not
        // counted. Under -n cp asks nothing about the source itself there: it goes on into
        // it, and counts it.
        let there = || sys::stat_at(root.dst_parent.as_fd(), &root.dst_name, false);
        let no_clobber = opts.overwrite == Overwrite::NoClobber;
        let left = |m: Meta| !m.is_dir() || m.id() == id && !no_clobber;
        if dest.is_some() && !root.taken_new && there().is_ok_and(left) {
            return None;
        }
        if let Some(e) = in_an_earlier_copys_way(opts, &self.dirs, root) {
            return Some(Err(e));
        }
        let same = self.dirs.iter().filter(|n| n.id == id);
        // The earlier one was copied onto this source's very name (itself, under -n): cp
        // takes this one as a copy into itself.
        let onto_src = |n: &NamedDir| {
            same_name_paths(
                root.src_path.as_os_str().as_bytes(),
                n.dst_path.as_os_str().as_bytes(),
            )
        };
        if same.clone().next().is_some_and(onto_src) {
            return Some(Err(root.refusal_into_itself()));
        }
        // cp remembers the first destination of a directory only: under -H and -L, one copied
        // again elsewhere is not counted there.
        if dest.is_some() && same.clone().next().is_some_and(|n| n.dest == dest) {
            let src = root.src_path.clone();
            return Some(Ok(Warning::SourceTwice {
                src,
                directory: true,
            }));
        }
        let elsewhere = same.map(|n| n.dst_path.clone()).next();
        if let Some(earlier) = elsewhere.filter(|_| opts.dereference == Dereference::Never) {
            let refusal = Refusal::DirectoryTwice { earlier };
            let dst = root.dst_path.clone();
            return Some(Err(Error::refused(Op::Refuse, dst, refusal)));
        }
        self.dirs.push(NamedDir {
            before: index,
            dest,
            id,
            dst_path: root.dst_path.clone(),
            src_path: root.src_path.clone(),
        });
        None
    }

    /// Whether a directory `id` going to `dest` was named before to that place: first, as
    /// cp remembers only a directory's first destination (under -H and -L one named again
    /// elsewhere and then here is copied again, see [`Named::dir_again`]).
    pub(crate) fn went(&self, id: (u64, u64), dest: &Option<Dest>) -> bool {
        let first = self.dirs.iter().find(|n| n.id == id);
        dest.is_some() && first.is_some_and(|n| n.dest == *dest)
    }

    /// Whether a directory `id` was named first to another place than `dest` (known).
    pub(crate) fn first_elsewhere(&self, id: (u64, u64), dest: &Option<Dest>) -> bool {
        let first = self.dirs.iter().find(|n| n.id == id);
        dest.is_some() && first.is_some_and(|n| n.dest != *dest)
    }

    /// Whether a directory `id` was named before to another place, where cp refuses it
    /// again before it makes anything (but copies it again where it follows command-line
    /// symlinks).
    pub(crate) fn refused_again(&self, opts: &Options, id: (u64, u64)) -> bool {
        opts.dereference == Dereference::Never && self.dirs.iter().any(|n| n.id == id)
    }

    /// How many directories are named so far: what [`Named::forget_since`] goes back to.
    pub(crate) fn mark(&self) -> usize {
        self.dirs.len()
    }

    /// cp forgets a directory it could not make: named again, it is tried again.
    pub(crate) fn forget_since(&mut self, mark: usize) {
        self.dirs.truncate(mark);
    }

    /// The directory root `root` that [`Named::dir_again`] counted (at `mark`), or cp's error
    /// for a copy into itself. cp finds that only once it has made the copy: where it cannot
    /// make it, it forgets the directory.
    pub(crate) fn refuse_into_itself(&mut self, root: &Root, mark: usize) -> Option<Error> {
        if !root.into_itself {
            return None;
        }
        let unmakeable = sys::stat_at(root.dst_parent.as_fd(), &root.dst_name, false).is_err()
            && !sys::may_write(root.dst_parent.as_fd(), c".");
        if unmakeable {
            self.forget_since(mark);
        } else if let Some(dest) = self.dirs.get(mark).and_then(|n| n.dest.clone()) {
            self.into_itself.push(dest);
        }
        Some(root.refusal_into_itself())
    }

    /// Whether cp, walking directory root `root`, meets the copy it made of an earlier root
    /// it refused as a copy into itself (a copy mimeo never makes): one made right in this
    /// root's source directory (`cp -lRn s/ s/. s/`). cp calls that a copy into itself too,
    /// naming this root, and copies the rest. It walks no directory onto itself but under -n.
    pub(crate) fn meets_a_copy_into_itself(&self, opts: &Options, root: &Root) -> bool {
        let id = root.meta.id();
        if !self.into_itself.iter().any(|(parent, _)| *parent == id) {
            return false;
        }
        match sys::stat_at(root.dst_parent.as_fd(), &root.dst_name, false) {
            Ok(m) => m.is_dir() && (m.id() != id || opts.overwrite == Overwrite::NoClobber),
            Err(_) => true,
        }
    }

    /// Whether `dir`, a `--parents` directory just made, is where cp made the copy of a
    /// directory root refused as a copy into itself: cp found it there, and took a later
    /// destination below it for one that was there (not new).
    pub(crate) fn copied_into_itself_at(&self, dir: &Path) -> bool {
        if self.into_itself.is_empty() {
            return false;
        }
        let Some(name) = dir.file_name() else {
            return false;
        };
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let parent = sys::cstring(parent.as_os_str().as_bytes());
        let Ok(meta) = sys::stat_at(sys::CWD, &parent, true) else {
            return false;
        };
        let dest = (meta.id(), name.as_bytes().to_vec());
        self.into_itself.contains(&dest)
    }
}

/// A directory root whose destination is an entry of an earlier directory root's copy
/// ("s/." then "s" or "s/up/", all into "d"): cp has copied the earlier one by then, which
/// made that entry from its source's entry of that name, and cp finds it there before
/// anything else. A symlink that leads to this root's source is the same file (but under
/// -n, -b, --remove-destination, -l, -s, -H and -L); anything else that is not a directory is
/// in the way. None otherwise, also where the user may not write into the destination.
fn in_an_earlier_copys_way(opts: &Options, dirs: &[NamedDir], root: &Root) -> Option<Error> {
    if dirs.is_empty() {
        return None;
    }
    let parent = sys::fstat(root.dst_parent.as_fd()).ok()?.id();
    let into_parent = |n: &&NamedDir| {
        let dst = sys::cstring(n.dst_path.as_os_str().as_bytes());
        sys::stat_at(sys::CWD, &dst, true).is_ok_and(|m| m.id() == parent)
    };
    // A destination taken to be new is made without a look, but one deeper in an earlier
    // copy: the directories `--parents` made on the way there, cp found made by that copy.
    let (earlier, between) = match dirs.iter().find(into_parent) {
        Some(n) if !root.taken_new => (n, None),
        Some(_) => return None,
        None if opts.parents => below_an_earlier_copy(opts, dirs, root)?,
        None => return None,
    };
    // Where the user may not write, cp made nothing there: the entry is not in the way.
    if !sys::may_write(root.dst_parent.as_fd(), c".") {
        return None;
    }
    let name = root.dst_name.to_bytes();
    let name = &name[..name.iter().rposition(|&c| c != b'/')? + 1];
    // A directory there already stays one: cp replaces no directory with the earlier copy's
    // non-directory (it asks first under -i, then refuses).
    let there = sys::stat_at(root.dst_parent.as_fd(), &sys::cstring(name), false);
    if there.is_ok_and(|m| m.is_dir()) {
        return None;
    }
    let mut entry = earlier.src_path.as_os_str().as_bytes().to_vec();
    if let Some(between) = between {
        entry.push(b'/');
        entry.extend_from_slice(between.as_os_str().as_bytes());
    }
    entry.push(b'/');
    entry.extend_from_slice(name);
    let entry = sys::cstring(&entry);
    let follow = opts.dereference == Dereference::Always;
    let made = sys::stat_at(sys::CWD, &entry, follow).ok()?;
    // Nor where the earlier copy made nothing: a directory, under -l what the kernel will
    // not link (another user's symlink, under fs.protected_hardlinks), or under -s a link to
    // a relative source name outside the working directory, which cp refused.
    let refused_relative = opts.link == Some(LinkInstead::Symbolic)
        && relative_symlink_elsewhere(entry.to_bytes(), root.dst_parent.as_fd());
    if made.is_dir() || kernel_refuses_link(opts, &Process::current(), &made) || refused_relative {
        return None;
    }
    let src = root.src_path.clone();
    let dst = root.dst_path.clone();
    // The copied symlink has the same target, read from the destination's directory. cp's
    // same-file rule looks through it only where it copies symlinks as symlinks and would
    // keep it: a backup, removal or link would not lose the source; under -H and -L it
    // compares the directory with the symlink itself.
    let keeps = opts.backup.is_none() && !opts.remove_destination && opts.link.is_none();
    let leads_here = made.is_symlink()
        && keeps
        && opts.overwrite != Overwrite::NoClobber
        && opts.dereference == Dereference::Never
        && sys::readlink(sys::CWD, &entry).is_ok_and(|target| {
            sys::stat_at(root.dst_parent.as_fd(), &target, true)
                .is_ok_and(|m| m.id() == root.meta.id())
        });
    Some(if leads_here {
        Error::refused(Op::Refuse, src, Refusal::SameFile { dst })
    } else {
        Error::refused(Op::CreateDir, dst, Refusal::NonDirectoryInTheWay { src })
    })
}

/// `--parents`: the earlier directory root whose copy holds `root`'s destination directory
/// deeper down (`s` then `s/q/L/`, both into `d`: `d/s/q`), with the path from that copy to
/// it (`q`). cp has made the directories between by then, where the earlier source has
/// directories; None where it has something else on the way.
fn below_an_earlier_copy<'n>(
    opts: &Options,
    dirs: &'n [NamedDir],
    root: &Root,
) -> Option<(&'n NamedDir, Option<PathBuf>)> {
    let id_of = |p: &Path| {
        let p = sys::cstring(p.as_os_str().as_bytes());
        sys::stat_at(sys::CWD, &p, true).ok().map(|m| m.id())
    };
    let copies: Vec<_> = dirs
        .iter()
        .filter_map(|n| Some((id_of(&n.dst_path)?, n)))
        .collect();
    let dir = super::roots::trimmed(&root.dst_path).parent()?;
    let follow = opts.dereference == Dereference::Always;
    for above in dir.ancestors().skip(1) {
        if above.as_os_str().is_empty() {
            break;
        }
        let Some(id) = id_of(above) else { continue };
        let Some(&(_, earlier)) = copies.iter().find(|(d, _)| *d == id) else {
            continue;
        };
        let between = dir.strip_prefix(above).ok()?;
        let mut src = earlier.src_path.clone();
        for name in between.components() {
            src.push(name);
            let at = sys::cstring(src.as_os_str().as_bytes());
            if !sys::stat_at(sys::CWD, &at, follow).is_ok_and(|m| m.is_dir()) {
                return None;
            }
        }
        return Some((earlier, Some(between.to_path_buf())));
    }
    None
}

/// What cp says of a directory `id` (the entry `src` of the source) met below root `root`
/// (whose source and destination are `root_paths`) if it is a directory root named before:
/// where that one went to this very entry (itself, under -n: `s/x` then `s/.`, both into
/// `s`), cp calls the later root a copy into itself; going where that one went (`dest`;
/// `s/sub` and `s/.` into one directory), the later root is named twice, with a warning;
/// elsewhere (at `dst`), it is refused (but copied again where cp follows every symlink, as
/// under `-L`).
pub(crate) fn met_below(
    opts: &Options,
    dirs: &[NamedDir],
    (root, root_paths): (u32, (&Path, &Path)),
    (id, src): ((u64, u64), Option<Dest>),
    dest: Option<Dest>,
    dst: impl FnOnce() -> PathBuf,
) -> Option<Result<Warning, Error>> {
    let (root_src, root_dst) = root_paths;
    let earlier = dirs.iter().find(|n| n.before <= root && n.id == id)?;
    if src.is_some() && src == earlier.dest {
        let refusal = Refusal::IntoItself {
            dst: root_dst.to_path_buf(),
        };
        return Some(Err(Error::refused(
            Op::Refuse,
            root_src.to_path_buf(),
            refusal,
        )));
    }
    if dest.is_some() && dest == earlier.dest {
        return Some(Ok(Warning::SourceTwice {
            src: root_src.to_path_buf(),
            directory: true,
        }));
    }
    if opts.dereference == Dereference::Always {
        return None;
    }
    let refusal = Refusal::DirectoryTwice {
        earlier: earlier.dst_path.clone(),
    };
    Some(Err(Error::refused(Op::Refuse, dst(), refusal)))
}

/// Whether a directory met below root `root` may be one named before ([`met_below`]): only a
/// root named before it, or itself met again through a symlink followed below it (`-L`). A
/// single directory root looks at nothing more.
pub(crate) fn may_meet(opts: &Options, dirs: &[NamedDir], root: u32) -> bool {
    let follows = opts.dereference == Dereference::Always;
    dirs.iter()
        .any(|n| n.before < root || n.before == root && follows)
}
