"""mimeo.copytree, copy2, copy and copyfile against shutil itself, on loop-mounted btrfs, XFS
and ext4: the same trees (compared with mimeo-testkit's tree comparer) and the same
exceptions on the same bad inputs."""

import errno
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

import mimeo
from helpers import foreign_set_id_cleared, outcome, rel_triples, same_outcome


def differential_copytree(testkit, src, base, times=True, **kwargs):
    """Copies `src` with shutil.copytree and mimeo.copytree and asserts that the trees and
    the failures are the same."""
    theirs, ours = base / "shutil", base / "mimeo"
    t = outcome(shutil.copytree, src, theirs, **kwargs)
    kwargs = {k: (mimeo.copy if v is shutil.copy else mimeo.copyfile if v is shutil.copyfile else v) for k, v in kwargs.items()}
    o = outcome(mimeo.copytree, src, ours, **kwargs)
    assert o[0] == t[0], (o, t)
    if t[0] == "Error":
        assert rel_triples(o[1], src, ours) == rel_triples(t[1], src, theirs)
    else:
        assert (o, t) == (("ok", ours), ("ok", theirs))
    foreign_set_id_cleared(src, theirs)
    # copy and copyfile keep no times: both sides have the times of their own run.
    timed = times and kwargs.get("copy_function") in (None, mimeo.copy2)
    assert testkit.compare(theirs, ours, *([] if timed else ["--no-mtime"])) == []


@pytest.mark.parametrize("seed", [1, 2])
def test_tricky_trees_copy_as_shutil_copies_them(fs, testkit, seed):
    # symlinks=True: with shutil's default, the generated links to ".." and "/etc" would
    # send shutil.copytree up and out of the tree.
    base = fs.scratch()
    src = base / "src"
    testkit.gen(src, seed)
    differential_copytree(testkit, src, base, symlinks=True)


def ordinary_tree(root):
    """Files, nested directories, symlinks to files and directories (relative and absolute),
    an empty directory, and a file with a name that is not UTF-8."""
    root = Path(root)
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "empty").mkdir()
    for i, rel in enumerate(["f", "a/g.txt", "a/b/h.tmp", "a/b/c/i", "a/skip.tmp"]):
        (root / rel).write_bytes(bytes([i]) * (i * 5000))
    os.chmod(root / "a/g.txt", 0o640)
    os.utime(root / "a/b", ns=(1_000_000_123, 2_000_000_456))
    os.symlink("f", root / "link-to-file")
    os.symlink("a/b", root / "link-to-dir")
    os.symlink(str(root / "a/g.txt"), root / "a" / "absolute")
    with open(os.path.join(os.fsencode(root), b"odd-\xff\xfe"), "wb") as f:
        f.write(b"not utf-8")
    return root


@pytest.mark.parametrize("symlinks", [False, True])
def test_ordinary_trees_copy_as_shutil_copies_them(fs, testkit, symlinks):
    base = fs.scratch()
    src = ordinary_tree(base / "src")
    differential_copytree(testkit, src, base, symlinks=symlinks)


@pytest.mark.parametrize("ignore_dangling", [False, True])
def test_dangling_symlinks_fail_or_are_left_out_as_in_shutil(
    fs, testkit, ignore_dangling, monkeypatch
):
    base = fs.scratch()
    src = ordinary_tree(base / "src")
    # shutil judges a relative link's target from the working directory, not from the
    # link's own (mimeo judges it from the link's): from `src`, the two agree on this tree.
    monkeypatch.chdir(src)
    os.symlink("nowhere", src / "dangling")
    # shutil before 3.10 does not pass ignore_dangling_symlinks on below the top directory.
    os.symlink("loop", (src / "a" if sys.version_info >= (3, 10) else src) / "loop")
    differential_copytree(
        testkit, src, base, ignore_dangling_symlinks=ignore_dangling
    )


def test_ignore_is_called_per_directory_with_shutils_arguments(fs, testkit):
    base = fs.scratch()
    src = ordinary_tree(base / "src")
    calls = {"shutil": [], "mimeo": []}

    def recorder(who):
        def ignore(dir, names):
            calls[who].append((dir.replace(str(base / who), "<dst>"), sorted(names)))
            return shutil.ignore_patterns("*.tmp", "c")(dir, names)

        return ignore

    shutil.copytree(src, base / "shutil", ignore=recorder("shutil"))
    mimeo.copytree(src, base / "mimeo", ignore=recorder("mimeo"))
    assert sorted(calls["mimeo"]) == sorted(calls["shutil"])
    assert len(calls["mimeo"]) == 5  # src, a, a/b, empty, and link-to-dir (followed)
    assert testkit.compare(base / "shutil", base / "mimeo") == []
    assert not (base / "mimeo" / "a" / "skip.tmp").exists()


def test_an_exception_from_ignore_ends_the_copy_and_is_raised(fs):
    base = fs.scratch()
    src = ordinary_tree(base / "src")

    def ignore(dir, names):
        if dir.endswith("b"):
            raise ValueError("no b")
        return []

    with pytest.raises(ValueError, match="no b"):
        mimeo.copytree(src, base / "dst", ignore=ignore)


def test_a_custom_copy_function_is_called_per_file_as_shutil_calls_it(fs, testkit):
    base = fs.scratch()
    src = ordinary_tree(base / "src")
    os.mkfifo(src / "a" / "fifo")
    calls = {"shutil": [], "mimeo": []}

    def recorder(who):
        def copy_function(s, d):
            assert type(s) is str and type(d) is str
            calls[who].append((os.path.relpath(s, src), os.path.relpath(d, base / who)))
            return shutil.copy2(s, d)

        return copy_function

    t = outcome(shutil.copytree, src, base / "shutil", copy_function=recorder("shutil"))
    o = outcome(mimeo.copytree, src, base / "mimeo", copy_function=recorder("mimeo"))
    assert o[0] == t[0] == "Error"
    assert rel_triples(o[1], src, base / "mimeo") == rel_triples(t[1], src, base / "shutil")
    assert sorted(calls["mimeo"]) == sorted(calls["shutil"])
    assert testkit.compare(base / "shutil", base / "mimeo") == []


@pytest.mark.parametrize("function", ["copy", "copyfile"])
def test_mimeos_own_copy_and_copyfile_as_copy_function(fs, testkit, function):
    base = fs.scratch()
    src = ordinary_tree(base / "src")
    differential_copytree(testkit, src, base, copy_function=getattr(shutil, function))


def test_a_custom_copy_functions_exception_ends_the_copy(fs):
    base = fs.scratch()
    src = ordinary_tree(base / "src")

    def copy_function(s, d):
        raise KeyError(s)

    with pytest.raises(KeyError):
        mimeo.copytree(src, base / "dst", copy_function=copy_function, workers=1)


# Bad inputs: the same exception, errno, filename and filename2 as shutil.

FILE_FUNCTIONS = ["copyfile", "copy", "copy2"]


@pytest.mark.parametrize("name", FILE_FUNCTIONS)
def test_bad_inputs_of_file_functions_raise_what_shutil_raises(fs, name):
    d = fs.scratch()
    (d / "file").write_bytes(b"data")
    (d / "dir").mkdir()
    os.link(d / "file", d / "hardlink")
    os.symlink("file", d / "symlink")
    os.symlink("nowhere", d / "dangling")
    os.mkfifo(d / "fifo")
    cases = [
        (d / "missing", d / "x"),  # missing source
        (d / "file", d / "no" / "such" / "dir"),  # missing destination directory
        (d / "dir", d / "x"),  # directory as source
        (d / "file", d / "file"),  # same file
        (d / "file", d / "hardlink"),  # same file through a hard link
        (d / "symlink", d / "file"),  # same file through a symlink
        (d / "fifo", d / "x"),  # named pipe as source
        (d / "file", d / "fifo"),  # named pipe as destination
        (d / "dangling", d / "x"),  # dangling symlink
    ]
    if name == "copyfile":
        cases.append((d / "file", d / "dir"))  # file onto a directory
    for s, t in cases:
        for form in (str, bytes, Path):
            conv = (lambda p: os.fsencode(p)) if form is bytes else form
            same_outcome(name, conv(s), conv(t))
    # follow_symlinks=False copies a symlink as a symlink, and never over an existing entry.
    same_outcome(name, d / "symlink", d / "file", follow_symlinks=False)
    same_outcome(name, d / "symlink", d / "dangling", follow_symlinks=False)
    for mod in (shutil, mimeo):
        new = d / f"new-link-{mod.__name__}"
        assert getattr(mod, name)(d / "dangling", new, follow_symlinks=False) == new
        assert os.readlink(new) == "nowhere"


@pytest.mark.parametrize("name", FILE_FUNCTIONS)
def test_modes_of_new_and_replaced_files_are_shutils(fs, name):
    d = fs.scratch()
    (d / "src").write_bytes(b"new data")
    os.chmod(d / "src", 0o751)
    modes = {}
    for mod in (shutil, mimeo):
        new, old = d / f"new-{mod.__name__}", d / f"old-{mod.__name__}"
        old.write_bytes(b"old")
        os.chmod(old, 0o604)
        getattr(mod, name)(d / "src", new)
        getattr(mod, name)(d / "src", old)
        assert old.read_bytes() == b"new data"
        modes[mod.__name__] = [stat.S_IMODE(os.stat(p).st_mode) for p in (new, old)]
    assert modes["mimeo"] == modes["shutil"]


def test_bad_inputs_of_copytree_raise_what_shutil_raises(fs):
    d = fs.scratch()
    (d / "file").write_bytes(b"data")
    src = ordinary_tree(d / "src")
    (d / "exists").mkdir()
    for s, t, kw in [
        (d / "missing", d / "x", {}),  # missing source
        (d / "file", d / "x", {}),  # a file as source
        (src, d / "exists", {}),  # destination exists
        (src, d / "file", {"dirs_exist_ok": True}),  # onto a file
    ]:
        for form in (str, bytes, Path):
            conv = (lambda p: os.fsencode(p)) if form is bytes else form
            same_outcome("copytree", conv(s), conv(t), **kw)


def test_files_onto_directories_are_collected_as_shutil_collects_them(fs, testkit):
    base = fs.scratch()
    src = ordinary_tree(base / "src")
    for who in ("shutil", "mimeo"):
        (base / who / "a" / "g.txt").mkdir(parents=True)  # a directory where a file goes
        (base / who / "f").mkdir()
        (base / who / "a" / "b").write_bytes(b"a file where a directory goes")
    # Files copied into the directories in their way change those directories' times.
    differential_copytree(testkit, src, base, times=False, dirs_exist_ok=True)
    assert (base / "mimeo" / "f" / "f").is_file()


def unreadable_outcomes(base):
    """copytree of a tree with an unreadable file and directory, copy2 of the file, and
    copytree of the directory, by shutil and by mimeo, with the roots taken off."""
    src = os.path.join(base, "src")
    out = {}
    for who, mod in (("shutil", shutil), ("mimeo", mimeo)):
        tree = os.path.join(base, who + "-tree")
        r = outcome(mod.copytree, src, tree)
        if r[0] == "Error":
            r = (r[0], rel_triples(r[1], src, tree))
        f = outcome(mod.copy2, os.path.join(src, "locked"), os.path.join(base, who + "-file"))
        g = outcome(mod.copytree, os.path.join(src, "closed"), os.path.join(base, who + "-closed"))
        out[who] = repr((r, f, g)).replace(os.path.join(base, who), "<dst>")
    return out


def test_unreadable_entries_fail_as_in_shutil(fs):
    import json

    if os.geteuid() != 0:
        pytest.skip("needs root to run a copy as another user")
    base = fs.scratch()
    os.chmod(base, 0o777)
    src = ordinary_tree(base / "src")
    (src / "locked").write_bytes(b"secret")
    os.chmod(src / "locked", 0o000)
    (src / "closed").mkdir()
    (src / "closed" / "x").write_bytes(b"x")
    os.chmod(src / "closed", 0o000)
    for dirpath, dirs, files in os.walk(base):
        os.chown(dirpath, 65534, 65534, follow_symlinks=False)
        for n in dirs + files:
            os.chown(os.path.join(dirpath, n), 65534, 65534, follow_symlinks=False)
    # The copies run in a child process as nobody, for whom mode 000 means no access.
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.write(w, json.dumps(unreadable_outcomes(str(base))).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    out = json.loads(data)
    assert out["mimeo"] == out["shutil"]
    assert "PermissionError" in out["mimeo"] and "Permission denied" in out["mimeo"]


def test_same_file_error_is_shutils():
    assert issubclass(mimeo.SameFileError, shutil.SameFileError)
    assert issubclass(mimeo.Error, shutil.Error)
    assert issubclass(mimeo.SpecialFileError, shutil.SpecialFileError)


@pytest.mark.parametrize("ignore", [None, "pol2"])
def test_copytree_into_a_new_subdirectory_copies_the_listing_once(fs, testkit, ignore):
    # CPython's test_copytree_subdirectory (bpo-38688): shutil lists src before it makes
    # dst below it, and copies that listing once.
    base = fs.scratch()
    trees = {}
    for name, copytree in (("shutil", shutil.copytree), ("mimeo", mimeo.copytree)):
        src = base / name / "t" / "pg"
        (src / "pol").mkdir(parents=True)
        (src / "pol" / "f").write_bytes(b"data")
        (src / "pol2").mkdir()
        os.symlink("pol/f", src / "link")
        os.chmod(src, 0o750)
        os.utime(src, ns=(1_000_000_123, 2_000_000_456))
        dst = src / "somevendor" / "1.0"
        kwargs = {"ignore": (lambda d, names: [ignore] if ignore in names else [])} if ignore else {}
        assert copytree(src, dst, symlinks=True, **kwargs) == dst
        assert sorted(os.listdir(dst)) == sorted(n for n in ["link", "pol", "pol2"] if n != ignore)
        assert os.listdir(dst / "pol") == ["f"]
        # copystat(src, dst) comes last: dst has src's mode and times as they are then.
        s, d = os.stat(src), os.stat(dst)
        assert (stat.S_IMODE(d.st_mode), d.st_mtime_ns) == (stat.S_IMODE(s.st_mode), s.st_mtime_ns)
        trees[name] = base / name
    assert testkit.compare(trees["shutil"], trees["mimeo"], "--no-mtime") == []


def test_copytree_into_an_existing_subdirectory_is_refused(fs):
    # Where the destination's first directory below src exists already, shutil copies it
    # into itself until the path grows too long; mimeo raises Error at once.
    base = fs.scratch()
    src = base / "a"
    (src / "b").mkdir(parents=True)
    with pytest.raises(mimeo.Error):
        mimeo.copytree(src, src / "b" / "c")
    assert os.listdir(src / "b") == []
