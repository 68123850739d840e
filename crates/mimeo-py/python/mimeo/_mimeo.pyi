"""Type stubs of the extension module ``mimeo._mimeo`` (re-exported by ``mimeo``)."""

import os
from typing import Callable, Iterable, Literal, Optional, Sequence, Set, Tuple, TypeVar, Union

_P = TypeVar("_P", str, bytes)
StrOrBytesPath = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
Reflink = Literal["auto", "always", "never"]
PreserveSpec = Union[str, Iterable[str]]

__version__: str

class Progress:
    """How a copy is going, as ``progress=`` is told (at most ten times a second)."""

    entries: int
    """Entries completed so far (files, directories, links, special files)."""
    bytes: int
    """Bytes of file data written so far."""
    clone_bytes: int
    """Of those, bytes cloned (extents shared with the source)."""
    offload_bytes: int
    """Bytes copied inside the kernel (copy_file_range)."""
    stream_bytes: int
    """Bytes read and written through a buffer."""
    copied: list[Tuple[Union[str, bytes], Union[str, bytes]]]
    """(src, dst) of the entries completed since the previous call."""
    done: bool
    """Whether this is the last call, made once the copy has ended."""

class Summary:
    """What :func:`archive` did: the fields of ``mimeo --json``'s summary, and its failures."""

    files: int
    directories: int
    symlinks: int
    hard_links: int
    specials: int
    skipped: int
    bytes: int
    by_method: dict[str, int]
    files_by_method: dict[str, int]
    hole_bytes: int
    shared_read_bytes: int
    """Bytes read through a canonical file (shared reads of clones)."""
    resumed_bytes: int
    """Bytes kept from copies an interrupted run had begun, verified and not copied again."""
    errors: int
    vanished: int
    interrupted: bool
    elapsed_s: float
    failures: list[Tuple[Union[str, bytes], str, str, Optional[int]]]
    """Each failure as (path, operation, message, errno)."""
    def to_dict(self) -> dict[str, object]:
        """The summary as ``mimeo --json`` prints it."""

class SharedReader:
    """The reader behind :class:`mimeo.SharedFile` (use that)."""

    def __init__(
        self,
        path: StrOrBytesPath,
        *,
        canonical: Optional[StrOrBytesPath] = None,
        origin: bool = True,
        registry: bool = True,
        buffer: Optional[int] = None,
    ) -> None: ...
    def read(self, size: int = -1) -> bytes: ...
    def seek(self, offset: int, whence: int = 0) -> int: ...
    def tell(self) -> int: ...
    def fileno(self) -> int: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def stats(self) -> dict[str, int]: ...
    def shared_len(self) -> int: ...
    def canonical_count(self) -> int: ...

def copyfile(
    src: StrOrBytesPath,
    dst: StrOrBytesPath,
    *,
    follow_symlinks: bool = True,
    workers: Optional[int] = None,
    reflink: Reflink = "auto",
    progress: Optional[Callable[[Progress], object]] = None,
    preserve: Optional[PreserveSpec] = None,
) -> StrOrBytesPath:
    """Copy the data of ``src`` to ``dst``, as :func:`shutil.copyfile`."""

def copy(
    src: StrOrBytesPath,
    dst: StrOrBytesPath,
    *,
    follow_symlinks: bool = True,
    workers: Optional[int] = None,
    reflink: Reflink = "auto",
    progress: Optional[Callable[[Progress], object]] = None,
    preserve: Optional[PreserveSpec] = None,
) -> StrOrBytesPath:
    """Copy data and permission bits, as :func:`shutil.copy`."""

def copy2(
    src: StrOrBytesPath,
    dst: StrOrBytesPath,
    *,
    follow_symlinks: bool = True,
    workers: Optional[int] = None,
    reflink: Reflink = "auto",
    progress: Optional[Callable[[Progress], object]] = None,
    preserve: Optional[PreserveSpec] = None,
) -> StrOrBytesPath:
    """Copy data, permission bits, times and extended attributes, as :func:`shutil.copy2`."""

def copytree(
    src: StrOrBytesPath,
    dst: StrOrBytesPath,
    symlinks: bool = False,
    ignore: Optional[Callable[[str, list[str]], Iterable[str]]] = None,
    copy_function: Callable[[str, str], object] = ...,
    ignore_dangling_symlinks: bool = False,
    dirs_exist_ok: bool = False,
    *,
    workers: Optional[int] = None,
    reflink: Reflink = "auto",
    progress: Optional[Callable[[Progress], object]] = None,
    preserve: Optional[PreserveSpec] = None,
) -> StrOrBytesPath:
    """Copy a directory tree, as :func:`shutil.copytree`, with several threads."""

def archive(
    src: Union[StrOrBytesPath, Sequence[StrOrBytesPath]],
    dst: StrOrBytesPath,
    *,
    workers: Optional[int] = None,
    reflink: Reflink = "auto",
    progress: Optional[Callable[[Progress], object]] = None,
    preserve: Optional[PreserveSpec] = None,
    sparse: Literal["auto", "always", "never"] = "auto",
    update: bool = False,
    no_clobber: bool = False,
    one_file_system: bool = False,
    sync: bool = False,
    nocache: bool = False,
    verify: bool = False,
) -> Summary:
    """Copy as ``mimeo -a`` does and return the :class:`Summary`."""

def du(
    *paths: StrOrBytesPath,
    one_file_system: bool = False,
    sync: bool = False,
    workers: Optional[int] = None,
) -> dict:
    """Total, exclusive and shared bytes of ``paths``, as ``mimeo-du`` measures them."""

def dedupe(
    *paths: StrOrBytesPath,
    min_size: int = 1,
    one_file_system: bool = False,
    dry_run: bool = False,
    workers: Optional[int] = None,
) -> dict:
    """Make files with the same content below ``paths`` share their extents (``mimeo-dedupe``)."""
