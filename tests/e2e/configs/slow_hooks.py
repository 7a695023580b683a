"""Test plugin: a reconcile that takes a while, logging when it starts and ends."""

import logging
import threading

from kinrun.hooks import hookimpl

log = logging.getLogger("kinrun.tests.slow")
_never = threading.Event()


@hookimpl
def kinrun_reconcile(controller, key, obj, ctx):
    """Log start, wait 1.5 s (a reconcile busy with the API), log end."""
    log.info("start %s", key)
    _never.wait(1.5)
    log.info("end %s", key)
