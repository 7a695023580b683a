"""Server-side Tables (``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``), the form
``kubectl get`` asks for, as kube-apiserver 1.20 builds them.

Built-in kinds get the columns of kube-apiserver's printers (``pkg/printers/internalversion``:
Pod READY/STATUS/RESTARTS/AGE, ConfigMap DATA, Secret TYPE/DATA, Service TYPE/CLUSTER-IP/...,
Deployment READY/UP-TO-DATE/AVAILABLE, ...; ``priority: 1`` columns only with ``-o wide``);
custom resources get NAME, their CRD version's ``additionalPrinterColumns`` (simple JSONPaths:
``.a.b``, ``.a[0].b``; other expressions give an empty cell), or AGE when it declares none;
other kinds NAME and AGE. Ages are written as ``duration.HumanDuration`` writes them. Each row
carries its object as PartialObjectMetadata (``includeObject=Metadata``, the default), whole
(``Object``) or not at all (``None``). On a watch each event's object is a one-row Table.
"""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]
Cell = Callable[[Obj, float], Any]
_PATH_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


def wants_table(accept: str) -> bool:
    """Whether the first usable media type of ``accept`` asks for a meta.k8s.io Table."""
    for media in accept.split(","):
        parts = [p.strip() for p in media.split(";")]
        if parts[0] not in ("application/json", "*/*", "application/*"):
            continue
        params = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        return (params.get("as") == "Table" and params.get("g") == "meta.k8s.io"
                and params.get("v") in ("v1", "v1beta1"))
    return False


def human_duration(seconds: float) -> str:
    """``5m``, ``2m30s``, ``3h``, ``4d12h`` as apimachinery's duration.HumanDuration."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    m, h, d = s // 60, s // 3600, s // 86400
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    if h < 24 * 365 * 2:
        return f"{d}d"
    y = d // 365
    return f"{y}y{d % 365}d" if y < 8 and d % 365 else f"{y}y"


def _epoch(timestamp: Any) -> float | None:
    try:
        return float(calendar.timegm(time.strptime(str(timestamp), "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None


def age(obj: Obj, now: float) -> str:
    """The AGE cell: time since creationTimestamp (``<unknown>`` without one)."""
    created = _epoch((obj.get("metadata") or {}).get("creationTimestamp"))
    return "<unknown>" if created is None else human_duration(now - created)


def _get(obj: Any, path: str) -> Any:
    """The value at a simple JSONPath (``.spec.a[0].b``), or None."""
    for match in _PATH_STEP.finditer(path):
        key, index = match.groups()
        if key is not None:
            obj = obj.get(key) if isinstance(obj, dict) else None
        else:
            obj = obj[int(index)] if isinstance(obj, list) and int(index) < len(obj) else None
    return obj


def _pod_status(pod: Obj) -> str:
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or ""
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        for key in ("waiting", "terminated"):
            if (state.get(key) or {}).get("reason"):
                reason = state[key]["reason"]
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Terminating"
    return reason


def _pod_ready(pod: Obj) -> str:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    total = len((pod.get("spec") or {}).get("containers") or [])
    return f"{sum(1 for c in statuses if c.get('ready'))}/{total}"


def _ports(svc: Obj) -> str:
    ports = (svc.get("spec") or {}).get("ports") or []
    return ",".join(f"{p.get('port')}{'/' + str(p['nodePort']) if p.get('nodePort') else ''}"
                    f"/{p.get('protocol', 'TCP')}" for p in ports) or "<none>"


def _selector(selector: Any) -> str:
    from .scale import format_selector
    return format_selector(selector) or "<none>"


def _n(path: str) -> Cell:
    return lambda o, _now: int(_get(o, path) or 0)


def _s(path: str, empty: str = "<none>") -> Cell:
    return lambda o, _now: str(_get(o, path) or empty)


def _ratio(ready: str, want: str) -> Cell:
    return lambda o, _now: f"{int(_get(o, ready) or 0)}/{int(_get(o, want) or 0)}"


COLUMNS: dict[tuple[str, str], list[tuple[str, str, int, Cell]]] = {
    ("", "Pod"): [("Ready", "string", 0, lambda o, _: _pod_ready(o)),
                  ("Status", "string", 0, lambda o, _: _pod_status(o)),
                  ("Restarts", "integer", 0, lambda o, _: sum(
                      int(c.get("restartCount") or 0)
                      for c in (o.get("status") or {}).get("containerStatuses") or [])),
                  ("Age", "string", 0, age), ("IP", "string", 1, _s(".status.podIP")),
                  ("Node", "string", 1, _s(".spec.nodeName"))],
    ("", "ConfigMap"): [("Data", "integer", 0, lambda o, _: len(o.get("data") or {}) + len(
        o.get("binaryData") or {})), ("Age", "string", 0, age)],
    ("", "Secret"): [("Type", "string", 0, _s(".type", "")),
                     ("Data", "integer", 0, lambda o, _: len(o.get("data") or {})),
                     ("Age", "string", 0, age)],
    ("", "Service"): [("Type", "string", 0, _s(".spec.type", "ClusterIP")),
                      ("Cluster-IP", "string", 0, _s(".spec.clusterIP")),
                      ("External-IP", "string", 0, lambda o, _: ",".join(
                          (o.get("spec") or {}).get("externalIPs") or []) or "<none>"),
                      ("Port(s)", "string", 0, lambda o, _: _ports(o)), ("Age", "string", 0, age),
                      ("Selector", "string", 1, lambda o, _: _selector(_get(o, ".spec.selector")))],
    ("", "Namespace"): [("Status", "string", 0, _s(".status.phase", "")),
                        ("Age", "string", 0, age)],
    ("", "ServiceAccount"): [("Secrets", "string", 0, lambda o, _: len(o.get("secrets") or [])),
                             ("Age", "string", 0, age)],
    ("", "Node"): [("Status", "string", 0, lambda o, _: "Ready" if any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (o.get("status") or {}).get("conditions") or []) else "NotReady"),
                   ("Roles", "string", 0, lambda o, _: "<none>"), ("Age", "string", 0, age),
                   ("Version", "string", 0, _s(".status.nodeInfo.kubeletVersion", ""))],
    ("", "Event"): [("Last Seen", "string", 0, lambda o, now: human_duration(now - (
        _epoch(o.get("lastTimestamp") or o.get("eventTime")) or now))),
                    ("Type", "string", 0, _s(".type", "")),
                    ("Reason", "string", 0, _s(".reason", "")),
                    ("Object", "string", 0, lambda o, _: f"{str(_get(o, '.involvedObject.kind') or '').lower()}"
                                                         f"/{_get(o, '.involvedObject.name') or ''}"),
                    ("Message", "string", 0, _s(".message", ""))],
    ("apps", "Deployment"): [("Ready", "string", 0, _ratio(".status.readyReplicas", ".spec.replicas")),
                             ("Up-to-date", "integer", 0, _n(".status.updatedReplicas")),
                             ("Available", "integer", 0, _n(".status.availableReplicas")),
                             ("Age", "string", 0, age)],
    ("apps", "ReplicaSet"): [("Desired", "integer", 0, _n(".spec.replicas")),
                             ("Current", "integer", 0, _n(".status.replicas")),
                             ("Ready", "integer", 0, _n(".status.readyReplicas")),
                             ("Age", "string", 0, age)],
    ("apps", "StatefulSet"): [("Ready", "string", 0, _ratio(".status.readyReplicas", ".spec.replicas")),
                              ("Age", "string", 0, age)],
    ("apps", "DaemonSet"): [("Desired", "integer", 0, _n(".status.desiredNumberScheduled")),
                            ("Current", "integer", 0, _n(".status.currentNumberScheduled")),
                            ("Ready", "integer", 0, _n(".status.numberReady")),
                            ("Up-to-date", "integer", 0, _n(".status.updatedNumberScheduled")),
                            ("Available", "integer", 0, _n(".status.numberAvailable")),
                            ("Age", "string", 0, age)],
    ("batch", "Job"): [("Completions", "string", 0, lambda o, _: f"{int(_get(o, '.status.succeeded') or 0)}"
                                                                 f"/{int(_get(o, '.spec.completions') or 1)}"),
                       ("Age", "string", 0, age)],
    ("coordination.k8s.io", "Lease"): [("Holder", "string", 0, _s(".spec.holderIdentity", "")),
                                       ("Age", "string", 0, age)],
    ("apiextensions.k8s.io", "CustomResourceDefinition"): [
        ("Created At", "date", 0, lambda o, _: (o.get("metadata") or {}).get("creationTimestamp"))],
}
"""(group, kind) -> the columns after NAME: (header, type, priority, cell(obj, now))."""


def crd_columns(columns: list[Obj]) -> list[tuple[str, str, int, Cell]]:
    """A CRD version's ``additionalPrinterColumns`` as columns (AGE when there are none)."""
    if not columns:
        return [("Age", "date", 0, lambda o, _: (o.get("metadata") or {}).get("creationTimestamp"))]
    return [(str(c.get("name")), str(c.get("type") or "string"), int(c.get("priority") or 0),
             (lambda path: lambda o, _: _get(o, path))(str(c.get("jsonPath") or "")))
            for c in columns]


def _row_object(obj: Obj, include: str) -> Obj | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata") or {}}


def table(columns: list[tuple[str, str, int, Cell]] | None, objs: list[Obj], now: float,
          list_meta: Obj, include: str = "Metadata") -> Obj:
    """The meta.k8s.io/v1 Table of ``objs`` (``columns`` None: NAME and AGE)."""
    cols = [("Name", "string", 0, lambda o, _: (o.get("metadata") or {}).get("name"))]
    cols += columns if columns is not None else [("Age", "string", 0, age)]
    definitions = [{"name": name, "type": kind, "format": "name" if name == "Name" else "",
                    "description": "", "priority": priority}
                   for name, kind, priority, _ in cols]
    rows = []
    for obj in objs:
        row: Obj = {"cells": [cell(obj, now) for _, _, _, cell in cols]}
        row_object = _row_object(obj, include)
        if row_object is not None:
            row["object"] = row_object
        rows.append(row)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
            "columnDefinitions": definitions, "rows": rows}
