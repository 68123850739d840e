"""``mimeo.SharedFile``: a file object that reads a clone's shared ranges through one
canonical file, so that all the clones of a file share one copy of its bytes in the page
cache (btrfs and XFS share blocks on disk, not in the page cache). The bytes are always those
of a plain read.
"""

import io

from ._mimeo import SharedReader


class SharedFile(io.RawIOBase):
    """SharedFile(path, *, canonical=None, origin=True, registry=True, buffer=None)

    A binary file opened for reading, like ``open(path, "rb")``, whose ranges that share
    blocks with another file (a clone, a dedupe result) are read through that *canonical*
    file. Each range is checked before and after it is read (unchanged ctime and extent map,
    no dirty pages in either file) and otherwise read from the file itself, so the bytes are
    those of a plain read whatever writers do meanwhile. On filesystems without shared blocks
    (ext4, tmpfs) every read is plain.

    The canonical file is the first of: ``canonical`` (a path), the file's origin record
    (written by ``mimeo --record-origin``) when ``origin`` is true, and, when ``registry`` is
    true, the files opened through ``SharedFile`` in this process that hold the same blocks.
    ``buffer`` is the size of the reads behind small ``read()`` calls (default 4 MiB).

    Reads release the GIL. Raises ``OSError`` subclasses as ``open`` does.
    """

    def __init__(self, path, *, canonical=None, origin=True, registry=True, buffer=None):
        super().__init__()
        self._r = SharedReader(
            path, canonical=canonical, origin=origin, registry=registry, buffer=buffer
        )
        self.name = path

    def _open(self):
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        return self._r

    def readable(self):
        self._open()
        return True

    def seekable(self):
        self._open()
        return True

    def read(self, size=-1):
        """Read ``size`` bytes (fewer only at the end of the file), or all that is left."""
        if size is None:
            size = -1
        return self._open().read(size)

    def readall(self):
        return self.read(-1)

    def readinto(self, b):
        view = memoryview(b).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)

    def seek(self, offset, whence=io.SEEK_SET):
        return self._open().seek(offset, whence)

    def tell(self):
        return self._open().tell()

    def fileno(self):
        return self._open().fileno()

    def close(self):
        if not self.closed:
            self._r.close()
        super().close()

    @property
    def stats(self):
        """Bytes read so far: ``{"canonical": B, "own": B, "rejected": B}`` (rejected: read
        through the canonical file, then read again from the file itself because a check
        after the read failed)."""
        return self._open().stats()

    @property
    def shared_len(self):
        """Bytes of the file currently read through a canonical file."""
        return self._open().shared_len()

    @property
    def canonical_count(self):
        """How many canonical files the file is read through."""
        return self._open().canonical_count()

    def __repr__(self):
        return f"<mimeo.SharedFile name={self.name!r} closed={self.closed}>"


def open_shared(path, *, canonical=None, origin=True, registry=True, buffer=None):
    """Opens ``path`` for reading as a :class:`SharedFile`: ``open(path, "rb")`` whose ranges
    shared with a canonical file are read through it (the bytes are those of a plain read)."""
    return SharedFile(
        path, canonical=canonical, origin=origin, registry=registry, buffer=buffer
    )
