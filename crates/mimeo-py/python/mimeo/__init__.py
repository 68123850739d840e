"""mimeo: a parallel, cloning drop-in for shutil's copy functions.

:func:`copyfile`, :func:`copy`, :func:`copy2` and :func:`copytree` take the arguments of the
:mod:`shutil` functions of the same names and raise the same exceptions, so that code can
switch by changing an import. Files are cloned where the filesystem shares extents (btrfs,
XFS), copied inside the kernel elsewhere, and trees are copied by several threads, with the
GIL released. Each function also takes the keyword-only extras ``workers=``, ``reflink=``,
``progress=`` and ``preserve=``.

:func:`archive` is ``mimeo -a``: everything ``cp -a`` keeps, with a :class:`Summary`.
:mod:`mimeo.aio` has asyncio versions of them all.
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
)

__all__ = [
    "Error",
    "Progress",
    "SameFileError",
    "SpecialFileError",
    "Summary",
    "__version__",
    "aio",
    "archive",
    "copy",
    "copy2",
    "copyfile",
    "copytree",
]
