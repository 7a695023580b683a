"""An in-memory Lease and object store with resourceVersion compare-and-swap, for the
membership and sharder unit tests."""

from __future__ import annotations

import copy
import threading
from typing import Any

from kinrun.errors import ConflictError, NotFoundError


class FakeLeases:
    """get_lease/create_lease/update_lease/delete and a lister_watcher(...).list() of Leases;
    ``fail``: when True every call raises ApiError-like ConnectionError (an unreachable
    server); ``writes``: the names written, in order."""

    def __init__(self) -> None:
        self.leases: dict[str, dict[str, Any]] = {}
        self.rv = 0
        self.fail = False
        self.writes: list[str] = []
        self.patches: list[tuple[str, str | None, dict]] = []
        self._lock = threading.Lock()

    def _check(self) -> None:
        if self.fail:
            from kinrun.errors import ApiError
            raise ApiError("connection refused", status=0)

    def get_lease(self, name: str, namespace: str) -> dict:
        self._check()
        with self._lock:
            if name not in self.leases:
                raise NotFoundError(f"lease {name} not found")
            return copy.deepcopy(self.leases[name])

    def create_lease(self, lease: dict) -> dict:
        self._check()
        with self._lock:
            name = lease["metadata"]["name"]
            if name in self.leases:
                raise ConflictError("already exists")
            return self._store(lease)

    def update_lease(self, lease: dict) -> dict:
        self._check()
        with self._lock:
            name = lease["metadata"]["name"]
            have = self.leases.get(name)
            if have is None:
                raise NotFoundError("gone")
            if lease["metadata"].get("resourceVersion") != have["metadata"]["resourceVersion"]:
                raise ConflictError("the object has been modified")
            return self._store(lease)

    def _store(self, lease: dict) -> dict:
        self.rv += 1
        lease = copy.deepcopy(lease)
        lease["metadata"]["resourceVersion"] = str(self.rv)
        self.leases[lease["metadata"]["name"]] = lease
        self.writes.append(lease["metadata"]["name"])
        return copy.deepcopy(lease)

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
               preconditions: dict | None = None, missing_ok: bool = False, **_: Any) -> None:
        self._check()
        with self._lock:
            have = self.leases.get(name)
            if have is None:
                return None
            if preconditions and preconditions.get("resourceVersion") != \
                    have["metadata"]["resourceVersion"]:
                raise ConflictError("precondition failed")
            del self.leases[name]
        return None

    def patch(self, api_version: str, kind: str, name: str, patch: dict, *,
              namespace: str | None = None, patch_type: str = "merge") -> dict:
        self.patches.append((name, namespace, patch))
        return {}

    def lister_watcher(self, ref: Any, *, namespace: str | None = None,
                       label_selector: str | None = None, **_: Any) -> Any:
        fake = self

        class _LW:
            def list(self_inner) -> Any:
                fake._check()
                key, _, value = (label_selector or "").partition("=")
                with fake._lock:
                    items = [copy.deepcopy(l) for l in fake.leases.values()
                             if not key or (l["metadata"].get("labels") or {}).get(key) == value]
                return type("L", (), {"items": items})()
        return _LW()
