"""Contender: the main job on a shipped example, ``kinrun examples/configs/pod-logger.yaml``.

The config is the example file itself, unchanged: one Pod informer, one controller whose
reconcile is a ``log`` action (``Sync/Add/Update for Pod {{ obj.metadata.name }}``). kinrun runs
it as a user would, through ``kinrun.cli.main()`` in this process with ``sys.argv`` set (what
the ``kinrun`` console script does: one interpreter start, as ``kinrun CONFIG``), with
``--kubeconfig K --namespace NS`` (``--namespace`` replaces the example's ``namespaces: [default]``, as for any config) and the
default log level, info, so every reconcile writes its line to stderr (the harness reads the
pipe, as a container runtime would).

The example has no plugin, so the timings are recorded from outside the config, in this
process, before ``main`` runs:

- ``kinrun.app._observers`` is wrapped so that every reconcile the workers call is followed by
  the recorder's ``handled`` (the same seam the main job uses for its probes and log fields; a
  call after the reconcile returned, reading the object's name, namespace and annotations);
- for the ``events`` workload the first LIST of kinrun's ListerWatcher answers nothing at
  ``--since`` (as ``benchmarks/configs/bench_plugin.py`` does for ``kinrun-cli``), so that the
  watch replays the server's history.

Nothing else of kinrun is changed. kinrun decodes only the fields a config reads (the
example reads ``metadata.name``; ``kinrun.kept_paths``), so the objects carry no annotations:
in the ``events`` workload the marker is recognised by its name alone (it is written once,
last), and the ``latency`` workloads, which need the ``bench/stamp`` annotation, are not run
for this contender (``run.py``).
"""

from __future__ import annotations

import _common

ARGS = _common.parse_args()
REC, GCMON, RSS0 = _common.start(ARGS)  # pinned from here on (threads started later inherit it)

import sys  # noqa: E402
import threading  # noqa: E402
from pathlib import Path  # noqa: E402

NAME = "kinrun-pod-logger"
CONFIG = Path(__file__).resolve().parents[2] / "examples" / "configs" / "pod-logger.yaml"
FINAL_BY_NAME = {_common.FINAL_ANNOTATION: "true"}

threading.Thread(target=_common.wait_and_emit, args=(NAME, ARGS, REC, GCMON, RSS0),
                 daemon=True, name="bench-emit").start()

# as ``kinrun.cli.main`` does first thing, before kinrun's heavy imports (which come earlier
# here, for the patches below): the main job's GC thresholds from the first import on
from kinrun.gc.policy import raise_thresholds  # noqa: E402

raise_thresholds()

from kinrun import app as _app  # noqa: E402

_common.replay_first_list(REC, ARGS)

_observers = _app._observers


def _record(controller, reconcile):
    def recorded(key, obj, *args, **kwargs):
        result = reconcile(key, obj, *args, **kwargs)
        if obj is not None:
            md = obj["metadata"]
            name = md["name"]
            annotations = md.get("annotations")
            if annotations is None and ARGS.workload == "events" and name == ARGS.marker:
                annotations = FINAL_BY_NAME
            REC.handled(name, md.get("namespace", ""), annotations)
        return result
    return recorded


def _bench_observers(bound, probes, log_fields):
    wrap = _observers(bound, probes, log_fields)
    if wrap is None:
        return _record
    return lambda controller, reconcile: _record(controller, wrap(controller, reconcile))


_app._observers = _bench_observers

from kinrun.cli import main  # noqa: E402

# the console script's call: main() reads sys.argv (and keeps ignoring signals after the run)
sys.argv = ["kinrun", str(CONFIG), "--kubeconfig", ARGS.kubeconfig,
            "--namespace", ARGS.namespace]
sys.exit(main())
