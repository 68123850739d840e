//! Symlinks, FIFOs, sockets and device nodes: created by name, metadata set without ever
//! following a link.

use crate::error::{Error, Op};
use crate::meta::{self, Apply, Dst};
use crate::place::{self, Existing, LinkStep};
use crate::summary::EntryKind;
use crate::sys::{self, Errno, Meta, XattrTarget};
use crate::tree::{Here, Run};
use std::ffi::CStr;

/// Copies the symlink `name` as a symlink with the same target, owner, xattrs and times.
pub(crate) fn copy_symlink(
    run: &Run<'_>,
    here: &Here<'_>,
    name: &CStr,
    dst_name: &CStr,
    meta: &Meta,
) -> Result<(), Error> {
    let target = sys::readlink(here.src_dir, name)
        .map_err(|e| Error::io(Op::ReadLink, here.src_path(name), sys::io_err(e)))?;
    create_and_finish(
        run,
        here,
        name,
        dst_name,
        meta,
        EntryKind::Symlink,
        Op::Symlink,
        |t| sys::symlink(&target, here.dst_dir, t),
    )
}

/// Copies a FIFO, socket or device node.
pub(crate) fn copy_special(
    run: &Run<'_>,
    here: &Here<'_>,
    name: &CStr,
    dst_name: &CStr,
    meta: &Meta,
) -> Result<(), Error> {
    let kind = match meta.file_type() {
        0o010000 => EntryKind::Fifo,
        0o140000 => EntryKind::Socket,
        0o020000 => EntryKind::CharDevice,
        _ => EntryKind::BlockDevice,
    };
    // Created without group/other bits; the final mode comes after the owner.
    let mode = meta.file_type() | (meta.perm() & 0o700);
    create_and_finish(run, here, name, dst_name, meta, kind, Op::MakeNode, |t| {
        sys::mknod(here.dst_dir, t, mode, meta.rdev)
    })
}

/// Creates the entry with `make` (under a temporary name when the destination exists), then
/// applies its metadata by name without following it.
#[allow(clippy::too_many_arguments)]
fn create_and_finish(
    run: &Run<'_>,
    here: &Here<'_>,
    name: &CStr,
    dst_name: &CStr,
    meta: &Meta,
    kind: EntryKind,
    op: Op,
    make: impl Fn(&CStr) -> sys::Result<()>,
) -> Result<(), Error> {
    let dst_path = || here.dst_path(dst_name);
    let first = match place::link_or_claim(run, here, name, dst_name, meta)? {
        LinkStep::Done => return Ok(()),
        LinkStep::Copy(first) => first,
    };
    if let Some(node) = here.node {
        // New entries here are incomplete until their metadata is set (see `journal`).
        node.mark_in_progress(run, here.dst_dir);
    }
    let temp = match make(dst_name) {
        Ok(()) => None,
        Err(Errno::EXIST) => match place::existing(run, here, name, dst_name, meta)? {
            Existing::Skip => {
                run.skipped(here, name, dst_name);
                return Ok(());
            }
            // Only a regular source is written into a node.
            Existing::Replace | Existing::WriteInto => {
                let ((), t) = place::with_temp(here, &make)
                    .map_err(|e| Error::io(op, dst_path(), sys::io_err(e)))?;
                Some(t)
            }
        },
        Err(e) => return Err(Error::io(op, dst_path(), sys::io_err(e))),
    };
    let made: &CStr = temp.as_deref().unwrap_or(dst_name);
    let symlink = meta.is_symlink();
    let xattrs = if symlink && !run.opts.preserve.xattr {
        // Symlinks have no ACLs; only --preserve=xattr reads their attributes.
        Vec::new()
    } else {
        let p = sys::proc_fd_path(here.src_dir, Some(name));
        meta::source_xattrs(run.opts, XattrTarget::NoFollow(&p), &|| here.src_path(name))?
    };
    let apply = Apply {
        opts: run.opts,
        process: &run.process,
        src: meta,
        created: true,
        created_owner: (!here.dst_setgid).then_some((run.process.euid, run.process.egid)),
        current_perm: (!symlink).then_some(meta.perm() & 0o700),
        inherit_sgid: false,
    };
    let dst = Dst::At {
        dir: here.dst_dir,
        name: made,
        symlink,
    };
    if let Err(e) = apply.run(dst, &xattrs, &dst_path) {
        if temp.is_some() {
            let _ = sys::unlink(here.dst_dir, made, false);
        }
        return Err(e);
    }
    if let Some(t) = &temp {
        place::commit_temp(here, t, dst_name, false)?;
    }
    place::first_done(first, here, dst_name);
    run.copied(here, name, dst_name, kind, None);
    Ok(())
}
