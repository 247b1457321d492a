"""Waiting for a native call, the two ways Python waits.

The operation itself always runs on the native runtime's threads (see
``src/runtime.rs``); here only the *waiting* differs:

- :func:`result` blocks the calling thread in short slices with the GIL
  released, so Ctrl-C is heard between slices; an interrupted call is
  cancelled (an acquire granted meanwhile is released by its lease), except
  releases and revokes, which complete anyway.
- :func:`result_async` suspends the coroutine until the native side's done
  callback wakes the loop; a cancelled task cancels the call, unless
  ``shield`` is set (a release must reach the server even when the task
  that asked for it is cancelled).
"""

from __future__ import annotations

import asyncio
from typing import Any

from leasehold import _native

#: How long one blocking slice lasts: the longest Ctrl-C waits to be heard.
_SLICE_S = 0.1


def result(call: _native.Call, *, cancellable: bool = True) -> Any:
    """The call's value (or its exception), waiting in this thread. An
    interrupt (Ctrl-C) cancels the call unless ``cancellable`` is false: a
    release or revoke then still completes in the background."""
    try:
        while not call.wait(_SLICE_S):
            pass
    except BaseException:
        if cancellable:
            call.cancel()
        raise
    return call.result()


async def result_async(call: _native.Call, *, shield: bool = False) -> Any:
    """The call's value (or its exception), without blocking the loop."""
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        try:
            loop.call_soon_threadsafe(_settle, finished)
        except RuntimeError:
            pass  # the loop is closed: nobody is waiting any more

    call.add_done_callback(wake)
    try:
        await (asyncio.shield(finished) if shield else finished)
    except asyncio.CancelledError:
        if not shield:
            call.cancel()
        raise
    return call.result()


def _settle(finished: asyncio.Future[None]) -> None:
    if not finished.done():
        finished.set_result(None)
