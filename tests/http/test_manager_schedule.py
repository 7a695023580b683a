"""A controller's ``schedule:`` through the whole pipeline on the embedded API server: the
manager starts the scheduler with the workers; stepping the workqueues' fake clock past the
next cron time reconciles every cached key once, with reason ``scheduled``."""

from __future__ import annotations

import datetime
import queue
import time

from test_manager import WAIT, client, cm  # noqa: F401 - "client" is the fixture the tests take

from kinrun.clock import FakeClock, WallOverride
from kinrun.config import load_text
from kinrun.hooks import hookimpl
from kinrun.kube import Client
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager

EPOCH = datetime.datetime(2024, 1, 1, 2, 59, 30, tzinfo=datetime.timezone.utc).timestamp()


class Calls:
    def __init__(self) -> None:
        self.calls: queue.Queue[tuple[str, str]] = queue.Queue()

    @hookimpl
    def kinrun_reconcile(self, controller, key, obj, ctx):
        self.calls.put((key, ctx.reason))


def test_schedule_reconciles_every_key_once_at_the_cron_time(client: Client) -> None:
    for name in ("a", "b"):
        client.create(cm(name, "default"))
    calls, clock = Calls(), FakeClock(start=0.0)
    pm = new_plugin_manager()
    pm.register(calls, name="calls")
    config = load_text("""\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap, namespaces: [default]}
controllers:
  - {name: nightly, for: cms, schedule: "0 3 * * *", reconcile: {hooks: true}}
""")
    wall = WallOverride(clock, lambda: EPOCH + clock.now())
    manager = plan(config, pm, clock=wall).bind(client).manager(
        clock=clock)
    assert manager.start(sync_timeout=WAIT)
    try:
        assert sorted(calls.calls.get(timeout=WAIT) for _ in range(2)) == \
            [("default/a", "added"), ("default/b", "added")]
        assert clock.wait_for_waiters(1, WAIT, timed=True)  # the scheduler, until 03:00
        clock.step(30.0)
        assert sorted(calls.calls.get(timeout=WAIT) for _ in range(2)) == \
            [("default/a", "scheduled"), ("default/b", "scheduled")]
        assert clock.settle(time.monotonic() + WAIT)  # the scheduler waits for 03:00 tomorrow
        assert manager.schedules["nightly"].fired == 1
    finally:
        manager.stop(5.0)
    assert not manager.schedules["nightly"]._thread.is_alive()
