"""Build a core/v1 Event about an object, as client-go's ``tools/record`` recorder does.

Pure data, no I/O: ``Client.create_event`` and ``kinrun.kube.event_recorder.EventRecorder``
send it. The Event lives in the involved object's namespace (``default`` for cluster-scoped
objects), is named ``NAME.HEX`` (the object's name and the creation time in nanoseconds, as the
recorder's ``makeEvent`` names them, so names do not collide), counts one occurrence, and names
its source twice, as client-go does: ``source.component`` (and ``source.host`` when known) and
``reportingComponent`` (the JSON name of core/v1 ``ReportingController``) / ``reportingInstance``.
Counting repeated occurrences is the correlator's job (``kinrun.kube.event_correlator``).
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from kinrun.clock import REAL_CLOCK, Clock

MAX_MESSAGE = 1024
"""Characters kept of a message (events.k8s.io's limit on ``note``)."""


def rfc3339(epoch_seconds: float) -> str:
    """``2026-01-02T03:04:05Z`` (second precision, UTC), the API's metav1.Time format."""
    return datetime.fromtimestamp(epoch_seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def object_reference(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The ObjectReference of ``obj``: apiVersion, kind, name, namespace, uid, resourceVersion
    (whichever it has)."""
    meta = obj.get("metadata") or {}
    ref = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"),
           "name": meta.get("name"), "namespace": meta.get("namespace"),
           "uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")}
    return {k: v for k, v in ref.items() if v}


def event_about(ref: Mapping[str, Any], *, type: str, reason: str, message: str,
                component: str, host: str | None, now_ns: int) -> dict[str, Any]:
    """A core/v1 Event dict about the object ``ref`` (an ObjectReference dict with ``name``;
    ``namespace`` absent for a cluster-scoped object), stamped ``now_ns`` (epoch nanoseconds).

    ``type``: ``Normal`` or ``Warning``; ``reason``: UpperCamelCase, short; ``message``: cut to
    :data:`MAX_MESSAGE` characters; ``component``: the source (also ``reportingComponent``);
    ``host``: ``source.host`` and ``reportingInstance``, left out when None or "" (as client-go
    controllers leave it). Raises ValueError when ``ref`` has no name.
    """
    if not ref.get("name"):
        raise ValueError("an Event needs an involved object with metadata.name")
    stamp = rfc3339(now_ns / 1e9)
    source: dict[str, Any] = {"component": component}
    if host:
        source["host"] = host
    event: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{ref['name']}.{now_ns:x}",
                     "namespace": ref.get("namespace") or "default"},
        "involvedObject": dict(ref),
        "type": type,
        "reason": reason,
        "message": message[:MAX_MESSAGE],
        "source": source,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "reportingComponent": component,
    }
    if host:
        event["reportingInstance"] = host
    return event


def event_for(involved: dict[str, Any], *, type: str, reason: str, message: str,
              component: str = "kinrun", host: str | None = None,
              now_ns: int | None = None, clock: Clock = REAL_CLOCK) -> dict[str, Any]:
    """A core/v1 Event dict about ``involved`` (an object dict with metadata.name), as
    :func:`event_about`; ``host`` defaults to this machine's name, ``now_ns`` (epoch
    nanoseconds) to ``clock.wall()``. Raises ValueError when ``involved`` has no name.
    """
    now_ns = int(clock.wall() * 1e9) if now_ns is None else now_ns
    host = socket.gethostname() if host is None else host
    return event_about(object_reference(involved), type=type, reason=reason, message=message,
                       component=component, host=host, now_ns=now_ns)
