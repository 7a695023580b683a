"""Cells of built-in kinds' Tables (``kinrun.testing.apiserver.printers``) for the edge cases
kube-apiserver 1.20.2 answered in tests/envtest/test_differential_tables.py, checked without
the real binaries; and every served built-in kind that can be listed has its own columns."""

from __future__ import annotations

import pytest

from kinrun.testing.apiserver import printers
from kinrun.testing.apiserver.registry import BUILTINS
from kinrun.testing.apiserver.tables import table


def _subset(ips: list[str], *ports: int) -> dict:
    return {"addresses": [{"ip": ip} for ip in ips], "ports": [{"port": p} for p in ports]}


@pytest.mark.parametrize(("subsets", "text"), [
    (None, "<none>"), ([], "<none>"),
    ([{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}]}], "10.0.0.1,10.0.0.2"),
    ([{"notReadyAddresses": [{"ip": "10.0.0.9"}], "ports": [{"port": 80}]}], ""),
    ([_subset(["fd00::1"], 53)], "[fd00::1]:53"),
    ([_subset(["10.0.0.1", "10.0.0.2", "10.0.0.3"], 80, 443), _subset(["10.0.1.1"], 8080)],
     "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 4 more..."),
    ([_subset(["10.0.0.1", "10.0.0.2", "10.0.0.3"], 80)], "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80"),
])
def test_endpoints_cell(subsets, text):
    """ENDPOINTS: ``ip:port`` per address and port, three then `` + N more...``; ``<none>``
    without subsets, "" with no ready address (1.20's ``formatEndpoints``)."""
    obj = {"metadata": {"name": "e"}} if subsets is None else {"subsets": subsets}
    assert printers.endpoints_text(obj) == text


def _status(state: dict, ready: bool = False, restarts: int = 0) -> dict:
    return {"name": "c", "state": state, "ready": ready, "restartCount": restarts}


@pytest.mark.parametrize(("status", "extra", "cells"), [
    ({"phase": "Pending"}, {}, ("0/1", "Pending", 0)),
    ({"phase": "Pending", "initContainerStatuses": [
        _status({"waiting": {"reason": "PodInitializing"}}, restarts=2)]}, {},
     ("0/1", "Init:0/1", 2)),
    ({"phase": "Pending", "initContainerStatuses": [
        _status({"terminated": {"exitCode": 0}}),
        _status({"terminated": {"exitCode": 3}}, restarts=1)]}, {}, ("0/1", "Init:ExitCode:3", 1)),
    ({"phase": "Running", "containerStatuses": [
        _status({"waiting": {"reason": "CrashLoopBackOff"}}, restarts=3)]}, {},
     ("0/1", "CrashLoopBackOff", 3)),
    ({"phase": "Running", "containerStatuses": [_status({"running": {}}, ready=True)]},
     {"deletionTimestamp": "2019-03-01T10:00:00Z"}, ("1/1", "Terminating", 0)),
    ({"phase": "Running", "containerStatuses": [
        _status({"terminated": {"exitCode": 0, "reason": "Completed"}}),
        _status({"running": {}}, ready=True)]}, {}, ("1/2", "NotReady", 0)),
])
def test_pod_cells(status, extra, cells):
    """READY, STATUS, RESTARTS as 1.20's ``printPod``: init containers first (``Init:0/1``,
    ``Init:ExitCode:3``), then the containers' waiting or terminated reasons; a completed
    container beside a running one is NotReady without the Ready condition."""
    pod = {"metadata": {"name": "p", **extra}, "spec": {
        "containers": [{"name": "c"}] * max(1, len(status.get("containerStatuses") or [])),
        "initContainers": [{"name": "i"}]}, "status": status}
    assert printers.pod_cells(pod) == cells


def test_event_tables_put_name_last_and_count_series_as_1_20():
    """An Event's Table starts with LAST SEEN and ends with NAME (priority 1); a series
    counts one more than its count, as kube-apiserver 1.20.2 answers; the events.k8s.io/v1
    fields print as the core ones."""
    event = {"apiVersion": "events.k8s.io/v1", "metadata": {"name": "e"}, "note": " hi ",
             "regarding": {"kind": "Pod", "name": "p"}, "reportingController": "c",
             "reportingInstance": "i", "eventTime": "2019-03-01T10:00:00.000000Z",
             "series": {"count": 4, "lastObservedTime": "2019-03-02T10:00:00.000000Z"}}
    now = 1551434400.0 + 3 * 86400  # 2019-03-01T10:00:00Z plus three days
    out = table(printers.columns("events.k8s.io", "Event"), [event], now, {})
    names = [(c["name"], c["priority"]) for c in out["columnDefinitions"]]
    assert names[0] == ("Last Seen", 0) and names[-1] == ("Name", 1)
    assert out["rows"][0]["cells"] == ["2d", "", "", "pod/p", "", "c, i", "hi", "3d", 5, "e"]


def test_every_listable_builtin_kind_has_its_columns():
    """No served built-in kind falls back to NAME and AGE; each column has a description."""
    for rtype in BUILTINS:
        if "list" in rtype.verbs:
            columns = printers.columns(rtype.group, rtype.kind)
            assert all(column[4]["description"] for column in columns), rtype.kind
