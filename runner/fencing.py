"""The fence: whether this replica may still act on its Lease (leader election or shard
membership), asked before every reconcile starts and before every write it sends.

A replica that holds a Lease may act only while its last successful renewal started less than
``renewDeadline`` seconds ago on its own monotonic clock (``LeaderElector.is_leading_now``,
``MemberLease.valid``): another replica can take the Lease over no earlier than
``leaseDuration`` after it observed that renewal. The workers ask the fence before each
reconcile (``kinrun.controller.Controller``); a reconcile that started while it was open runs
with it set on its thread (:func:`fenced`), and the API transport asks it again before every
write (:func:`check_write`): a reconcile that was under way when the process paused (SIGSTOP,
a long GC pause) and resumes after the deadline sends no further write. A fenced write raises
:class:`FencedError`, a TemporaryError: the key is retried after :data:`FENCED_RETRY` seconds,
not counted as a failure (by then the Lease is lost and the replica stopping, or renewed).

Thread-safety: the fence of a thread is thread-local state, set and read by that thread only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kinrun.errors import TemporaryError

Fence = Callable[[], bool]
"""() -> whether this replica may act now (its Lease renewed within renewDeadline)."""

FENCED_RETRY = 1.0
"""Seconds after which a key the fence held back is looked at again (the fence reopens only
after a successful renewal; usually the Lease is lost and the replica stops first)."""

_local = threading.local()  # .fence: the Fence of the reconcile running on this thread


class FencedError(TemporaryError):
    """A write not sent: this replica's Lease was not renewed within renewDeadline. Retried
    after :data:`FENCED_RETRY` seconds (a TemporaryError with that delay)."""

    def __init__(self, method: str, path: str) -> None:
        super().__init__(f"{method} {path} not sent: this replica's Lease was not renewed "
                         f"within renewDeadline (another replica may act now)",
                         delay=FENCED_RETRY)


@contextmanager
def fenced(fence: Fence | None) -> Iterator[None]:
    """Run the block with ``fence`` as this thread's fence (None: none), then restore the
    previous one."""
    previous = getattr(_local, "fence", None)
    _local.fence = fence
    try:
        yield
    finally:
        _local.fence = previous


def check_write(method: str, path: str) -> None:
    """Raise :class:`FencedError` when this thread runs under a fence that is closed now (a
    write ``method`` to ``path`` must not be sent); nothing otherwise."""
    fence = getattr(_local, "fence", None)
    if fence is not None and not fence():
        raise FencedError(method, path)


__all__ = ["FENCED_RETRY", "Fence", "FencedError", "check_write", "fenced"]
