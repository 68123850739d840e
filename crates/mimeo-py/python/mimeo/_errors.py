"""The exceptions of mimeo: subclasses of shutil's, so that code catching shutil's catches them."""

import shutil

__all__ = ["Error", "SameFileError", "SpecialFileError"]


class Error(shutil.Error):
    """Failures of single entries of a tree copy.

    ``args[0]`` is the list of ``(src, dst, why)`` that :class:`shutil.Error` carries.
    """


class SameFileError(shutil.SameFileError, Error):
    """Source and destination are the same file (compared by device and inode)."""


class SpecialFileError(shutil.SpecialFileError):
    """A named pipe (or device node) where a regular file's data was to be copied."""
