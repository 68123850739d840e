"""mimeo: a parallel, cloning drop-in for shutil's copy functions.

:func:`copyfile`, :func:`copy`, :func:`copy2` and :func:`copytree` take the arguments of the
:mod:`shutil` functions of the same names and raise the same exceptions, so that code can
switch by changing an import. Files are cloned where the filesystem shares extents (btrfs,
XFS), copied inside the kernel elsewhere, and trees are copied by several threads, with the
GIL released. Each function also takes the keyword-only extras ``workers=``, ``reflink=``,
``progress=`` and ``preserve=``.

:func:`archive` is ``mimeo -a``: everything ``cp -a`` keeps, with a :class:`Summary`.
:func:`du` measures total, exclusive and shared bytes from extent maps (``mimeo-du``), and
:func:`dedupe` makes files with the same content share their extents (``mimeo-dedupe``).
:mod:`mimeo.aio` has asyncio versions of them all.

`open_shared` opens a :class:`SharedFile`: a file object that reads the clones of a file
through one canonical file, so that they share its page cache; the bytes are always those of a
plain read.
"""

from . import aio
from ._errors import Error, SameFileError, SpecialFileError
from ._mimeo import (
    Progress,
    Summary,
    __version__,
    archive,
    copy,
    copy2,
    copyfile,
    copytree,
    dedupe,
    du,
)
from ._shared import SharedFile, open_shared

__all__ = [
    "Error",
    "Progress",
    "SameFileError",
    "SharedFile",
    "SpecialFileError",
    "Summary",
    "__version__",
    "aio",
    "archive",
    "copy",
    "copy2",
    "copyfile",
    "copytree",
    "dedupe",
    "du",
    "open_shared",
]
