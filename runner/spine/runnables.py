"""What a Manager runs besides its pipeline: runnables in groups, and the gate before them.

As controller-runtime's manager (``pkg/manager/runnable_group.go``): everything that runs is
added to one Manager, which starts it in a fixed order and stops it in reverse. Each runnable
says which :class:`Group` it belongs to and whether it needs the gate (controller-runtime's
``LeaderElectionRunnable.NeedLeaderElection``); the gate is the Lease this replica must hold
before its gated runnables start (leader election, or a ring's membership Lease).

Start order (``kinrun.manager.Manager.start``): the ungated runnables group by group, then the
gate, then the gated ones group by group. The Manager's own pipeline sits in two groups: its
caches in CACHES (gated unless warm standby: ``RunSettings.warm_standby``), its workers in
WORKERS (always gated). Stop is the exact reverse of what started.
"""

from __future__ import annotations

import enum
import threading
from typing import Protocol


class Group(enum.IntEnum):
    """Start order of runnables (stop order is the reverse)."""

    SERVERS = 0
    """HTTP endpoints (metrics, probes): they answer from the start, standby included."""
    CACHES = 1
    """Informers: list, watch, sync (the Manager's own pipeline)."""
    WORKERS = 2
    """Controllers' workers and cron schedules (the Manager's own pipeline)."""
    OTHERS = 3
    """What needs running workers (hot reload)."""


class Runnable(Protocol):
    """Something a Manager starts and stops. ``name`` for logs; ``group``; ``needs_gate``:
    start only once the gate is held (controller-runtime's ``NeedLeaderElection``)."""

    name: str
    group: Group
    needs_gate: bool

    def start(self, stop: threading.Event) -> bool:
        """Start (may block until ready); False when ``stop`` was set first or it cannot run:
        the Manager then stops what it started and its own ``start`` returns False."""
        ...

    def stop(self) -> None:
        """Stop; called once, only after ``start`` returned True."""
        ...


class Gate(Protocol):
    """The Lease this replica holds while its gated runnables run (client-go leaderelection;
    a ring's membership Lease). ``acquire`` blocks until held (True) or ``stop`` is set
    (False); ``release`` gives it up (called once, after the gated runnables stopped);
    ``lost``: it was held and then lost (another replica may reconcile these keys now)."""

    name: str

    def acquire(self, stop: threading.Event) -> bool:
        """Block until the Lease is held (True) or ``stop`` is set (False)."""
        ...

    def release(self) -> None:
        """Give the Lease up (and whatever runs under it)."""
        ...

    @property
    def lost(self) -> bool:
        """The Lease was held and then lost."""
        ...
