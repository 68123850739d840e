"""Running shutil and mimeo side by side, and comparing what they did."""

import os
import shutil
import stat

import mimeo


def outcome(f, *args, **kwargs):
    """What a call did: ("ok", result), ("Error", sorted triples) for shutil.Error, or the
    exception with its errno and file names."""
    try:
        return ("ok", f(*args, **kwargs))
    except shutil.Error as e:
        if isinstance(e, shutil.SameFileError):
            return ("SameFileError", str(e))
        return ("Error", sorted(e.args[0], key=repr))
    except OSError as e:
        return (type(e).__name__, e.errno, e.filename, e.filename2)


def same_outcome(name, *args, **kwargs):
    """Calls shutil.NAME and mimeo.NAME with the same arguments and asserts the same outcome;
    returns it. The exception classes must match (mimeo's subclass shutil's)."""
    theirs = outcome(getattr(shutil, name), *args, **kwargs)
    ours = outcome(getattr(mimeo, name), *args, **kwargs)
    assert ours == theirs, f"{name}{args}: mimeo {ours!r} != shutil {theirs!r}"
    return ours


def foreign_set_id_cleared(src, copy):
    """Applies to `copy` (shutil's copy of `src`) mimeo's documented difference: set-id bits of
    entries whose owner or group is not the copier's are dropped, as the copy belongs to the
    copier (docs/guarantees.md §4), and a regular file's sticky bit with them. shutil keeps
    them. A directory's are kept, as cp keeps them where the owner was not to be kept: they
    run nothing."""
    src, copy = os.fsencode(src), os.fsencode(copy)
    me = (os.geteuid(), os.getegid())
    for dirpath, dirs, files in os.walk(src):
        for name in dirs + files + [b""]:
            s = os.path.join(dirpath, name) if name else dirpath
            st = os.lstat(s)
            # A regular file's sticky bit goes with them, as in cp.
            cleared = 0o7000 if stat.S_ISREG(st.st_mode) else 0o6000
            if stat.S_ISLNK(st.st_mode) or stat.S_ISDIR(st.st_mode) or not st.st_mode & cleared:
                continue
            if (st.st_uid, st.st_gid) == me:
                continue
            c = os.path.join(copy, os.path.relpath(s, src))
            if os.path.lexists(c):
                os.chmod(c, stat.S_IMODE(os.lstat(c).st_mode) & ~cleared)


def rel_triples(triples, src, dst):
    """shutil.Error's triples with the roots taken off, to compare two runs into two places."""
    def rel(p, root):
        p, root = os.fsencode(p), os.fsencode(root)
        return os.path.relpath(p, root) if p.startswith(root) else p

    def text(why, s, d):
        return str(why).replace(os.fsdecode(d), "<dst>").replace(os.fsdecode(s), "<src>")

    return sorted(
        ((rel(s, src), rel(d, dst), text(w, src, dst)) for s, d, w in triples), key=repr
    )
