"""Discovery: resolve ``apiVersion`` + kind (or plural, singular, short name) to a ResourceRef.

As client-go's memory-cached discovery client feeding a deferred RESTMapper: the
APIResourceList of a group version (``GET /api/v1``, ``GET /apis/GROUP/VERSION``) is fetched on
first use and cached; a name that the cached list does not know triggers exactly one refetch of
that group version, so a CRD installed after start is found, and a still-unknown name is an
``UnknownKindError`` that names the closest matches (difflib).

Matching order within one group version: exact kind, exact resource (plural), then
case-insensitive kind, plural, singular or short name (``Deployment``, ``deployments``,
``deployment``, ``deploy``). Subresources (``pods/status``) are never matched.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kinrun.errors import KinrunError, NotFoundError
from kinrun.kube.resources import ResourceRef, group_version_path, split_api_version
from kinrun.threads import SupervisedThread

_MAX_LISTED = 12  # kinds named in an error when none is close


class UnknownKindError(KinrunError):
    """The server serves no such group version, or no such kind/resource in it.

    Attributes: ``api_version`` and ``name`` as asked, ``suggestions`` (closest served names,
    best first, possibly empty). ``str()`` is one line naming them.
    """

    def __init__(self, message: str, *, api_version: str, name: str,
                 suggestions: list[str]) -> None:
        super().__init__(message)
        self.api_version = api_version
        self.name = name
        self.suggestions = suggestions


@dataclass(frozen=True, slots=True)
class _Entry:
    """A resource with every name it answers to (kind, plural, singular, short names)."""

    ref: ResourceRef
    names: tuple[str, ...]


def entries_from_resource_list(doc: dict[str, Any], group: str, version: str) -> list[_Entry]:
    """The resources of an APIResourceList dict, subresources left out."""
    out = []
    for res in doc.get("resources") or []:
        plural = str(res.get("name") or "")
        if not plural or "/" in plural or not res.get("kind"):
            continue
        ref = ResourceRef(group=group, version=version, resource=plural, kind=str(res["kind"]),
                          namespaced=bool(res.get("namespaced")))
        names = (ref.kind, plural, str(res.get("singularName") or ""),
                 *(str(s) for s in res.get("shortNames") or ()))
        out.append(_Entry(ref, tuple(n for n in names if n)))
    return out


def match_entry(entries: Iterable[_Entry], name: str) -> ResourceRef | None:
    """The resource ``name`` designates among ``entries`` (see the module docstring's order)."""
    entries = list(entries)
    for entry in entries:
        if entry.ref.kind == name:
            return entry.ref
    for entry in entries:
        if entry.ref.resource == name:
            return entry.ref
    lowered = name.lower()
    for entry in entries:
        if any(n.lower() == lowered for n in entry.names):
            return entry.ref
    return None


def closest(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` of ``candidates`` most similar to ``name`` (case-insensitive), best first."""
    by_lower: dict[str, str] = {}
    for cand in candidates:
        by_lower.setdefault(cand.lower(), cand)
    hits = difflib.get_close_matches(name.lower(), list(by_lower), n=n, cutoff=0.6)
    return [by_lower[h] for h in hits]


class Discovery:
    """Cached discovery over ``get(path) -> decoded JSON`` (raises NotFoundError for 404).

    Thread-safe: the cache dict is guarded by a lock; fetches run outside it, so two threads may
    fetch the same group version at once (harmless: the last answer wins). Invariant: the cache
    only holds group versions the server answered for (a 404 is never cached).
    """

    def __init__(self, get: Callable[[str], Any]) -> None:
        self._get = get
        self._lock = threading.Lock()
        self._cache: dict[str, list[_Entry]] = {}  # apiVersion -> its resources

    def resolve(self, api_version: str, name: str) -> ResourceRef:
        """The ResourceRef for ``name`` (kind, plural, singular or short name) in
        ``api_version``; refetches once on a miss. Raises UnknownKindError, or ApiError when
        discovery itself fails."""
        try:
            split_api_version(api_version)
        except ValueError as exc:
            raise UnknownKindError(str(exc), api_version=api_version, name=name,
                                   suggestions=[]) from None
        with self._lock:
            cached = self._cache.get(api_version)
        if cached is not None:
            hit = match_entry(cached, name)
            if hit is not None:
                return hit
        entries = self._fetch(api_version, name)
        hit = match_entry(entries, name)
        if hit is None:
            raise self._unknown_kind(api_version, name, entries)
        return hit

    def resources(self, api_version: str) -> list[ResourceRef]:
        """Every resource the cache (or one fetch) knows in ``api_version``."""
        with self._lock:
            cached = self._cache.get(api_version)
        entries = cached if cached is not None else self._fetch(api_version, "")
        return [e.ref for e in entries]

    def prefetch(self, api_versions: Iterable[str], *, threads: int = 4) -> None:
        """Fetch the group versions of ``api_versions`` that the cache lacks, concurrently (at
        most ``threads`` requests in flight), so that a config over several API groups waits
        about one round trip at start instead of one per group version (client-go's discovery
        client fetches its group versions in parallel too, ``fetchGroupVersionResources``).
        With fewer than two to fetch it does nothing (:meth:`resolve` fetches as before).
        Errors are left to :meth:`resolve`: a group version that failed here is not cached, so
        resolving it fetches again and raises its own UnknownKindError or ApiError. Malformed
        apiVersions are skipped. Returns when every fetch has ended."""
        wanted: list[str] = []
        for api_version in dict.fromkeys(api_versions):
            try:
                split_api_version(api_version)
            except ValueError:
                continue
            with self._lock:
                if api_version not in self._cache:
                    wanted.append(api_version)
        if len(wanted) < 2:
            return
        pending = iter(wanted)
        pending_lock = threading.Lock()

        def fetch_some() -> None:
            while True:
                with pending_lock:
                    api_version = next(pending, None)
                if api_version is None:
                    return
                try:
                    self._fetch_raw(api_version)
                except KinrunError:
                    pass  # resolve() fetches it again and raises the located error

        workers = [SupervisedThread(target=fetch_some, name="kinrun-discovery", daemon=True)
                   for _ in range(min(threads, len(wanted)))]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()

    def invalidate(self, api_version: str | None = None) -> None:
        """Forget one group version (or all): the next resolve fetches again."""
        with self._lock:
            if api_version is None:
                self._cache.clear()
            else:
                self._cache.pop(api_version, None)

    def _fetch(self, api_version: str, name: str) -> list[_Entry]:
        try:
            return self._fetch_raw(api_version)
        except NotFoundError:
            raise self._unknown_group_version(api_version, name) from None

    def _fetch_raw(self, api_version: str) -> list[_Entry]:
        """One GET of the group version's resource list, cached; NotFoundError for a 404."""
        group, version = split_api_version(api_version)
        doc = self._get(group_version_path(group, version))
        entries = entries_from_resource_list(doc or {}, group, version)
        with self._lock:
            self._cache[api_version] = entries
        return entries

    @staticmethod
    def _unknown_kind(api_version: str, name: str, entries: list[_Entry]) -> UnknownKindError:
        kinds = sorted({e.ref.kind for e in entries})
        suggestions = closest(name, [n for e in entries for n in (e.ref.kind, e.ref.resource)])
        message = f"unknown kind {name!r} in {api_version}"
        if suggestions:
            message += f"; closest: {', '.join(suggestions)}"
        elif kinds and len(kinds) <= _MAX_LISTED:
            message += f"; it serves: {', '.join(kinds)}"
        elif kinds:
            message += f"; it serves {len(kinds)} kinds, none similar"
        else:
            message += "; it serves no kinds"
        return UnknownKindError(message, api_version=api_version, name=name,
                                suggestions=suggestions)

    def _unknown_group_version(self, api_version: str, name: str) -> UnknownKindError:
        served = self._served_group_versions()
        suggestions = closest(api_version, served)
        message = f"unknown apiVersion {api_version!r} (for {name!r})" if name else \
            f"unknown apiVersion {api_version!r}"
        message += "; the server does not serve it"
        if suggestions:
            message += f"; closest: {', '.join(suggestions)}"
        return UnknownKindError(message, api_version=api_version, name=name,
                                suggestions=suggestions)

    def _served_group_versions(self) -> list[str]:
        """Every group version the server lists (``/api`` + ``/apis``); [] when unreachable."""
        served: list[str] = []
        try:
            served.extend((self._get("/api") or {}).get("versions") or [])
            for group in (self._get("/apis") or {}).get("groups") or []:
                served.extend(str(v.get("groupVersion")) for v in group.get("versions") or [])
        except KinrunError:
            pass
        return served
