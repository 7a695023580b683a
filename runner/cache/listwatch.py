"""The ListerWatcher seam between the informer pipeline and an API server.

As client-go ``tools/cache.ListerWatcher``: the reflector lists, then watches from the list's
resourceVersion. The kube layer (``kinrun.kube``) implements it over HTTP; tests use an in-memory
implementation. Objects are plain dicts decoded from JSON and are read-only once handed over.

resourceVersions are opaque strings: never parse or compare them as numbers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol

Obj = dict[str, Any]

EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]


class WatchEvent(NamedTuple):
    """One watch event: ``type`` as the API sends it; ``object`` the decoded dict. A NamedTuple:
    immutable and the cheapest record to build once per event on the hot path.

    For BOOKMARK only ``object["metadata"]["resourceVersion"]`` is meaningful. For ERROR the
    object is a metav1.Status dict (``{"kind": "Status", "code": 410, "reason": "Expired", ...}``).
    """

    type: EventType
    object: Obj


@dataclass(frozen=True, slots=True)
class ObjectList:
    """The result of a full (all pages) LIST.

    ``items``: the objects, each with ``apiVersion``/``kind`` set; ``resource_version``: the
    list's ``metadata.resourceVersion`` (the point a following watch resumes from).
    """

    items: list[Obj]
    resource_version: str
    kind: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class Watch(Protocol):
    """An open watch stream: iterate to receive events; ``close()`` ends it from any thread.

    Iteration ends (StopIteration) when the server closes the stream cleanly (e.g. its
    ``timeoutSeconds`` elapsed). It raises ``kinrun.errors.ExpiredError`` for 410 (HTTP status
    or ERROR event, when the implementation converts ERROR events) and other
    ``kinrun.errors.ApiError`` subclasses for other failures. Implementations may instead yield
    ``WatchEvent("ERROR", status)``; the reflector handles both. ``close()`` is thread-safe and
    idempotent; after it, iteration ends promptly (a blocked read is interrupted).
    """

    def __iter__(self) -> Iterator[WatchEvent]: ...

    def close(self) -> None: ...


class ListerWatcher(Protocol):
    """List and watch one resource collection (one GVR, one namespace or all, fixed selectors).

    Thread-safety: ``list`` and ``watch`` are called from the reflector's thread only; a Watch's
    ``close`` may be called from any thread.
    """

    def list(self, *, resource_version: str = "") -> ObjectList:
        """Full LIST (all pages). ``resource_version``: "" = most recent (quorum read); "0" = any;
        otherwise not older than it. Raises ExpiredError (410) when it is too old, ApiError else."""
        ...

    def watch(self, *, resource_version: str, timeout_seconds: int | None = None,
              allow_bookmarks: bool = True) -> Watch:
        """Open a WATCH starting after ``resource_version``. ``timeout_seconds`` asks the server
        to end the stream cleanly after that long. Raises ExpiredError (410) when
        ``resource_version`` is too old (may instead surface on first iteration)."""
        ...
