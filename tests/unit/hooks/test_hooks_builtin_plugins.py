"""The built-in plugins (pod_logger, log) and the pods_by_node example plugin."""

from __future__ import annotations

from pathlib import Path

from hooks_fakes import FakeLister, pod

from kinrun.cache import DeletedFinalStateUnknown
from kinrun.hooks import ReconcileContext
from kinrun.plugin_manager import collect_index_funcs, event_handler, load_plugins

REPO = Path(__file__).resolve().parents[3]


def test_pod_logger_prints_the_seed_lines(tmp_path, caplog):
    """pod_logger logs the client-go example's two lines at INFO from kinrun_reconcile."""
    pm = load_plugins(["kinrun.plugins.pod_logger"], tmp_path, entry_points=False)
    caplog.set_level("INFO", logger="kinrun.plugins.pod_logger")
    ctx = ReconcileContext(controller="pod-logger", key="default/web-1")
    assert pm.hook.kinrun_reconcile(controller="pod-logger", key="default/web-1",
                                    obj=pod("web-1", "n1"), ctx=ctx) == []  # no requeue
    pm.hook.kinrun_reconcile(controller="pod-logger", key="default/web-1", obj=None, ctx=ctx)
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("kinrun.plugins.pod_logger", "INFO", "Sync/Add/Update for Pod web-1"),
        ("kinrun.plugins.pod_logger", "INFO", "Pod default/web-1 does not exist anymore"),
    ]


def test_log_plugin_logs_every_raw_event(tmp_path, caplog):
    """The log plugin logs adds, updates and deletes; initial-list adds and resyncs at DEBUG."""
    pm = load_plugins(["kinrun.plugins.log"], tmp_path, entry_points=False)
    caplog.set_level("DEBUG", logger="kinrun.plugins.log")
    handler = event_handler(pm, "pods")
    old, new = pod("a", "n1"), pod("a", "n2")
    new["metadata"]["resourceVersion"] = "2"
    handler.on_add(old, True)
    handler.on_add(old, False)
    handler.on_update(old, new)
    handler.on_update(new, new)
    handler.on_delete(new)
    handler.on_delete(DeletedFinalStateUnknown("default/gone", None))
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("DEBUG", "pods: ADD default/a (resourceVersion 1)"),
        ("INFO", "pods: ADD default/a (resourceVersion 1)"),
        ("INFO", "pods: UPDATE default/a (resourceVersion 1 -> 2)"),
        ("DEBUG", "pods: UPDATE default/a (resourceVersion 2 -> 2)"),
        ("INFO", "pods: DELETE default/a (resourceVersion 2)"),
        ("INFO", "pods: DELETE (missed) default/gone"),
    ]


def test_pods_by_node_example_indexes_and_counts(caplog):
    """The example plugin supplies byNode for pods and logs how many pods share a node."""
    pm = load_plugins(["examples/plugins/pods_by_node.py"], REPO, entry_points=False)
    funcs = collect_index_funcs(pm, "pods")
    assert set(funcs) == {"byNode"} and collect_index_funcs(pm, "nodes") == {}
    pods = [pod("a", "n1"), pod("b", "n1"), pod("c", "n2"), pod("d", None)]
    assert [funcs["byNode"](p) for p in pods] == [["n1"], ["n1"], ["n2"], []]
    ctx = ReconcileContext(controller="pods-by-node", key="default/a",
                           listers={"pods": FakeLister(pods, funcs)})
    caplog.set_level("INFO", logger="kinrun.examples.pods_by_node")
    for key, obj in (("a", pods[0]), ("c", pods[2]), ("d", pods[3]), ("x", None)):
        pm.hook.kinrun_reconcile(controller="pods-by-node", key=f"default/{key}", obj=obj, ctx=ctx)
    assert [r.getMessage() for r in caplog.records] == [
        "Pod default/a is on node n1 with 1 other pod(s)",
        "Pod default/c is on node n2 with 0 other pod(s)",
        "Pod default/d is not scheduled yet",
        "Pod default/x is gone",
    ]
