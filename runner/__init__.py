"""kinrun: turn one YAML file into a running Kubernetes controller.

The public face of the library. Layers underneath, low to high (a lower layer never imports a
higher one; the order is written once, in ``kinrun._layers.LAYERS``, and checked by a test):

    errors, clock, durations, selectors,  pure data and time; no I/O; Result and Cause
    result
    cache, workqueue                      the client-go informer pipeline; no Kubernetes I/O
    kube, hooks                           the official client, raw dict LIST/WATCH, writes;
                                          the pluggy hookspecs
    config, templating, predicates        the YAML model, the Jinja2 sandbox, update filters
    actions, plugin_manager, metrics,     templated actions, plugins, Prometheus, Leases
    leader_election, logging_setup
    reconcile, controller                 one key's reconcile (and its render); workers
    spine, manager, bound, plan, reload   the spine: its types (compiled plan, wiring,
                                          runnables, run settings); run, bind, compile;
                                          hot reload (imports go that way only)
    testing                               embedded API server, fault proxy, envtest
    signals, runnables, app               the main job: endpoints, Lease gates, reload
    cli                                   thin argument parsing over the above

Running a config without the CLI (the one path every command takes: load, plan, bind, start)::

    from kinrun import Client, load, plan
    manager = plan(load("config.yaml")).bind(Client.from_config()).manager()
    manager.start(); ...; manager.stop()

The steps a plugin's action kind returns and ``kinrun test`` records (``ApiRequest``,
``LogLine``, ``RequeueAfter``), ``Client``, ``DeletedFinalStateUnknown``, ``Manager``,
``ReconcileContext``, ``hookimpl``, ``load``, ``load_plugins``, ``plan`` and ``run`` are
imported on first use (they pull in the
``kubernetes`` client, pluggy or the informer pipeline): ``import kinrun.cache`` loads neither
pluggy nor jinja2; the rest is light.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from kinrun.errors import ConfigError, KinrunError, PermanentError, TemporaryError
from kinrun.result import Cause, Result

if TYPE_CHECKING:  # the lazy names below, for type checkers
    from kinrun.actions.steps import LogLine, RequeueAfter
    from kinrun.kube.request import ApiRequest
    from kinrun.app import run
    from kinrun.cache import DeletedFinalStateUnknown
    from kinrun.config import load
    from kinrun.hooks import ReconcileContext, hookimpl
    from kinrun.kube import Client
    from kinrun.manager import Manager
    from kinrun.plan import plan
    from kinrun.plugin_manager import load_plugins

__version__ = "0.1.0"

_LAZY = {
    "ApiRequest": "kinrun.kube.request",
    "Client": "kinrun.kube",
    "LogLine": "kinrun.actions.steps",
    "RequeueAfter": "kinrun.actions.steps",
    "DeletedFinalStateUnknown": "kinrun.cache",
    "Manager": "kinrun.manager",
    "ReconcileContext": "kinrun.hooks",
    "hookimpl": "kinrun.hooks",
    "load": "kinrun.config",
    "load_plugins": "kinrun.plugin_manager",
    "plan": "kinrun.plan",
    "run": "kinrun.app",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'kinrun' has no attribute {name!r}")


__all__ = [
    "ApiRequest",
    "Cause",
    "Client",
    "ConfigError",
    "DeletedFinalStateUnknown",
    "KinrunError",
    "LogLine",
    "Manager",
    "PermanentError",
    "ReconcileContext",
    "RequeueAfter",
    "Result",
    "TemporaryError",
    "__version__",
    "hookimpl",
    "load",
    "load_plugins",
    "plan",
    "run",
]
