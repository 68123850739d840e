"""asyncio versions of mimeo's functions.

Each runs its copy on a worker thread (:func:`asyncio.to_thread`), so the event loop goes on
while the copy runs; the copy itself releases the GIL. Cancelling the awaiting task does not
stop a copy that has started: it runs to its end, as a thread cannot be stopped from outside.
"""

import asyncio
from typing import Any

from . import _mimeo
from ._mimeo import Summary

__all__ = ["archive", "copy", "copy2", "copyfile", "copytree"]


async def copyfile(src: Any, dst: Any, **kwargs: Any) -> Any:
    """:func:`mimeo.copyfile` on a worker thread."""
    return await asyncio.to_thread(_mimeo.copyfile, src, dst, **kwargs)


async def copy(src: Any, dst: Any, **kwargs: Any) -> Any:
    """:func:`mimeo.copy` on a worker thread."""
    return await asyncio.to_thread(_mimeo.copy, src, dst, **kwargs)


async def copy2(src: Any, dst: Any, **kwargs: Any) -> Any:
    """:func:`mimeo.copy2` on a worker thread."""
    return await asyncio.to_thread(_mimeo.copy2, src, dst, **kwargs)


async def copytree(src: Any, dst: Any, *args: Any, **kwargs: Any) -> Any:
    """:func:`mimeo.copytree` on a worker thread."""
    return await asyncio.to_thread(_mimeo.copytree, src, dst, *args, **kwargs)


async def archive(src: Any, dst: Any, **kwargs: Any) -> Summary:
    """:func:`mimeo.archive` on a worker thread."""
    return await asyncio.to_thread(_mimeo.archive, src, dst, **kwargs)
