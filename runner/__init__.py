"""kinrun: turn one YAML file into a running Kubernetes controller.

The public face of the library. Layers underneath, low to high (a lower layer never imports a
higher one):

    errors, clock, durations          pure data and time; no I/O
    cache, workqueue                  the client-go informer pipeline; no Kubernetes I/O
    kube                              the official client, raw dict LIST/WATCH, writes
    config, hooks, templating,        the YAML model, pluggy hookspecs, Jinja2 actions
    actions, plugin_manager
    controller, manager, app          workers, the config's wiring, and the main job
    cli                               thin argument parsing over the above

Running a config without the CLI (the one path every command takes: load, plan, bind, start)::

    from kinrun import Client, load, plan
    manager = plan(load("config.yaml")).bind(Client.from_config()).manager()
    manager.start(); ...; manager.stop()

``Client``, ``Manager``, ``load``, ``load_plugins``, ``plan`` and ``run`` are imported on first
use (they pull in the ``kubernetes`` client); the rest is light.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from kinrun.errors import ConfigError, KinrunError, PermanentError, TemporaryError
from kinrun.hooks import ReconcileContext, hookimpl

__version__ = "0.1.0"

_LAZY = {
    "Client": "kinrun.kube",
    "Manager": "kinrun.manager",
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
    "Client",
    "ConfigError",
    "KinrunError",
    "Manager",
    "PermanentError",
    "ReconcileContext",
    "TemporaryError",
    "__version__",
    "hookimpl",
    "load",
    "load_plugins",
    "plan",
    "run",
]
