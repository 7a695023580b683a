"""Normalizers for differential tests: reduce raw answers to what a client relies on.

Values that legitimately differ between servers (uids, timestamps, resourceVersion numbers)
are dropped or turned into relations (equal / increasing); everything a client branches on
(status code, Status reason, message, details, event types and order) is kept.
"""

from __future__ import annotations

from typing import Any

from .rawkube import RawKube, Response


def status_view(resp: Response) -> dict[str, Any]:
    """A failed answer as the client sees it: code plus the Status's kind/status/reason/
    message/details (details.uid reduced to its presence, causes kept)."""
    body = resp.body if isinstance(resp.body, dict) else {"raw": resp.body}
    details = dict(body.get("details") or {})
    if "uid" in details:
        details["uid"] = "<present>"
    out = {"code": resp.status, "kind": body.get("kind"), "status": body.get("status"),
           "reason": body.get("reason"), "message": body.get("message")}
    if details:
        out["details"] = details
    return out


def rv(obj: dict[str, Any]) -> int:
    """An object's (or list's) metadata.resourceVersion as an int (etcd revisions are ints)."""
    return int(obj["metadata"]["resourceVersion"])


def names(items: list[dict[str, Any]]) -> list[str]:
    """metadata.name of each item, in the server's order."""
    return [i["metadata"]["name"] for i in items]


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    """A ConfigMap manifest."""
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def deployment(name: str, replicas: int = 1) -> dict[str, Any]:
    """A minimal valid apps/v1 Deployment manifest (never scheduled: no controller-manager)."""
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


def event(name: str, ns: str, reason: str = "Tested") -> dict[str, Any]:
    """A core/v1 Event manifest about a ConfigMap in ``ns`` (Events have no watch cache in
    kube-apiserver, so their watches are served from etcd)."""
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
            "involvedObject": {"apiVersion": "v1", "kind": "ConfigMap", "name": "x",
                               "namespace": ns},
            "reason": reason, "message": "m", "type": "Normal", "source": {"component": "t"}}


def cm_path(ns: str, name: str = "") -> str:
    """The configmaps collection (or one configmap) path in ``ns``."""
    base = f"/api/v1/namespaces/{ns}/configmaps"
    return f"{base}/{name}" if name else base


def create(kube: RawKube, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST ``body``; assert 201 and return the created object."""
    resp = kube.request("POST", path, body)
    assert resp.status == 201, f"{kube.label}: create {path}: {resp}"
    return resp.body


def merge_patch(kube: RawKube, path: str, patch: dict[str, Any]) -> Response:
    """PATCH with application/merge-patch+json."""
    return kube.request("PATCH", path, patch, content_type="application/merge-patch+json")


def event_view(event: dict[str, Any]) -> tuple[str, str]:
    """A watch event as (type, name) (a Status's reason for ERROR events)."""
    obj = event.get("object") or {}
    if event.get("type") == "ERROR":
        return ("ERROR", f"{obj.get('code')} {obj.get('reason')}")
    return (event.get("type", "?"), obj.get("metadata", {}).get("name", ""))
