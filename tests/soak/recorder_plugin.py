"""The soak's kinrun plugin: records every reconcile and every event of the primary informer.

Loaded by the kinrun process under test (config ``plugins: [this file]``). Writes JSON lines to
``$KINRUN_SOAK_RECORD``:

    {"t": "rec", "key", "live": bool, "uid", "rv", "reason", "has_reason", "has_old",
     "start", "end", "thread"}       one reconcile; uid/rv of obj, or of ctx.old when obj is None
    {"t": "ev", "type": "add"|"update"|"delete", "uid", "rv", "tomb": bool, "at"}
                                      one notification of the primary informer (what its cache saw)

Times are ``time.monotonic()`` seconds (CLOCK_MONOTONIC: comparable with the driver's).
Cache dumps: when ``$KINRUN_SOAK_RECORD.req`` holds a number N, the lister of informer
``$KINRUN_SOAK_INFORMER`` is written to ``$KINRUN_SOAK_RECORD.dump.N`` as
``{"ready": bool, "objects": {key: [uid, rv]}}`` (atomically, by rename).

Until kinrun passes ``informers.<name>.watchInactivityTimeout`` to the factory, and only
then, ``$KINRUN_SOAK_INACTIVITY`` (seconds) is filled in where it passes None (a shim: see
``_shim_inactivity``; a ``{"t": "shim"}`` record says it was needed).
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from kinrun.hooks import hookimpl

_OUT = os.environ["KINRUN_SOAK_RECORD"]
_INFORMER = os.environ.get("KINRUN_SOAK_INFORMER", "cms")
_HOLD = float(os.environ.get("KINRUN_SOAK_HOLD", "0.002"))  # s a reconcile lasts (overlap window)
_lock = threading.Lock()
_file = open(_OUT, "a", buffering=1)  # noqa: SIM115 - lives as long as the process
_listers: dict[str, Any] = {}


def _write(record: dict[str, Any]) -> None:
    line = json.dumps(record) + "\n"
    with _lock:
        _file.write(line)


def _meta(obj: Any) -> tuple[str | None, str | None]:
    meta = (obj or {}).get("metadata") or {} if isinstance(obj, dict) else {}
    return meta.get("uid"), meta.get("resourceVersion")


@hookimpl
def kinrun_reconcile(controller: str, key: str, obj: Any, ctx: Any) -> None:
    """Record one reconcile (see module docstring)."""
    start = time.monotonic()
    if not _listers:
        _listers.update(ctx.listers)
    old = getattr(ctx, "old", None)
    uid, rv = _meta(obj if obj is not None else old)
    time.sleep(_HOLD)
    _write({"t": "rec", "key": key, "live": obj is not None, "uid": uid, "rv": rv,
            "reason": getattr(ctx, "reason", None), "has_reason": hasattr(ctx, "reason"),
            "has_old": old is not None, "start": start, "end": time.monotonic(),
            "thread": threading.get_ident()})


def _event(kind: str, obj: Any) -> None:
    tomb = not isinstance(obj, dict)
    uid, rv = _meta(getattr(obj, "obj", None) if tomb else obj)
    _write({"t": "ev", "type": kind, "uid": uid, "rv": rv, "tomb": tomb, "at": time.monotonic()})


@hookimpl
def kinrun_on_add(informer: str, obj: Any) -> None:
    """Note that the primary cache saw ``obj``."""
    if informer == _INFORMER:
        _event("add", obj)


@hookimpl
def kinrun_on_update(informer: str, new: Any) -> None:
    """Note the primary cache's new version."""
    if informer == _INFORMER:
        _event("update", new)


@hookimpl
def kinrun_on_delete(informer: str, obj: Any) -> None:
    """Note a deletion (or a DeletedFinalStateUnknown tombstone) seen by the primary cache."""
    if informer == _INFORMER:
        _event("delete", obj)


def _dump_loop() -> None:
    req, done = Path(_OUT + ".req"), -1
    while True:
        time.sleep(0.05)
        try:
            seq = int(req.read_text() or "-1")
        except (OSError, ValueError):
            continue
        if seq == done:
            continue
        lister = _listers.get(_INFORMER)
        objects = {}
        if lister is not None:
            for obj in lister.list():
                meta = obj["metadata"]
                key = f"{meta.get('namespace')}/{meta['name']}" if meta.get("namespace") else meta["name"]
                objects[key] = [meta.get("uid"), meta.get("resourceVersion")]
        tmp = Path(f"{_OUT}.dump.{seq}.tmp")
        tmp.write_text(json.dumps({"ready": lister is not None, "objects": objects}))
        tmp.rename(f"{_OUT}.dump.{seq}")
        done = seq


def _shim_inactivity() -> None:
    """Until kinrun passes the config's ``watchInactivityTimeout`` to the factory, fill in
    $KINRUN_SOAK_INACTIVITY where it passes None (a "shim" record says it was needed)."""
    seconds = os.environ.get("KINRUN_SOAK_INACTIVITY")
    if not seconds:
        return
    from kinrun.cache.factory import SharedInformerFactory
    original = SharedInformerFactory.informer_for

    def informer_for(self: Any, key: Any, **kw: Any) -> Any:
        if kw.get("inactivity_timeout") is None:
            kw["inactivity_timeout"] = float(seconds)
            _write({"t": "shim", "at": time.monotonic()})
        return original(self, key, **kw)
    SharedInformerFactory.informer_for = informer_for  # type: ignore[method-assign]


def _break_on_purpose() -> None:
    """$KINRUN_SOAK_BREAK=skip-relist: every LIST after the first is not applied to the cache
    (the reflector "skips relists"), to see the soak's checks catch it."""
    if os.environ.get("KINRUN_SOAK_BREAK") != "skip-relist":
        return
    from kinrun.cache.reflector import Reflector
    original = Reflector._list

    class _NoReplace:
        def __init__(self, real: Any) -> None:
            self.real = real

        def __getattr__(self, name: str) -> Any:
            return getattr(self.real, name)

        def replace(self, objects: Any, resource_version: str) -> None:
            pass

    def _list(self: Any) -> None:
        if not getattr(self, "_soak_listed", False):
            original(self)
            self._soak_listed = True
            return
        real, self._store = self._store, _NoReplace(self._store)
        try:
            original(self)
        finally:
            self._store = real
    Reflector._list = _list  # type: ignore[method-assign]


_break_on_purpose()
_shim_inactivity()
_write({"t": "start", "at": time.monotonic(), "pid": os.getpid()})
threading.Thread(target=_dump_loop, name="soak-dump", daemon=True).start()
