"""Helpers for the action tests: fixture objects, fake listers, a recording client."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import orjson
import yaml

from kinrun.errors import ApiError
from kinrun.kube.request import ApiRequest

OBJECTS = Path(__file__).resolve().parents[2] / "data" / "objects"

FIXED_NOW = 1764500000.0
"""Wall-clock seconds given to event actions (2025-11-30T10:53:20Z)."""


def load_object(name: str) -> dict[str, Any]:
    """A fixture object from tests/data/objects/<name>.yaml, as a plain dict."""
    return yaml.safe_load((OBJECTS / f"{name}.yaml").read_text())


def frozen_copy(obj: dict[str, Any]) -> bytes:
    """A byte snapshot, to assert an object was not modified."""
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)


class FakeLister:
    """A lister over a fixed list, with index functions (read-only, like kinrun.cache.Lister)."""

    def __init__(self, objs: Iterable[dict[str, Any]],
                 indexers: dict[str, Callable[[dict], list[str]]] | None = None) -> None:
        self._objs = list(objs)
        self._indexers = indexers or {}

    @staticmethod
    def key_of(obj: dict[str, Any]) -> str:
        meta = obj["metadata"]
        return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]

    def get(self, key: str) -> dict[str, Any] | None:
        return next((o for o in self._objs if self.key_of(o) == key), None)

    def list(self) -> list[dict[str, Any]]:
        return list(self._objs)

    def by_index(self, index_name: str, value: str) -> list[dict[str, Any]]:
        func = self._indexers[index_name]
        return [o for o in self._objs if value in func(o)]

    def list_index_func_values(self, index_name: str) -> list[str]:
        func = self._indexers[index_name]
        return sorted({v for o in self._objs for v in func(o)})


class RecordingClient:
    """Records every executed request; optionally fails the n-th (0-based) with an ApiError."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.requests: list[ApiRequest] = []
        self._fail_at = fail_at

    def execute(self, req: ApiRequest) -> dict[str, Any] | None:
        if self._fail_at is not None and len(self.requests) == self._fail_at:
            raise ApiError("boom", status=500)
        self.requests.append(req)
        return req.body
