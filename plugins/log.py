"""Log every raw informer event (the seed's event-level view), on logger ``kinrun.plugins.log``.

Adds, updates and deletes are logged at INFO as ``<informer>: ADD|UPDATE|DELETE <key>
(resourceVersion <rv>)``; the adds of an informer's initial LIST and resync updates (same
resourceVersion) at DEBUG, so a restart or a resync does not flood the log. A delete noticed only
at a relist (a DeletedFinalStateUnknown tombstone) is logged as ``DELETE (missed) <key>``.
"""

from __future__ import annotations

import logging
from typing import Any

from kinrun.hooks import hookimpl

logger = logging.getLogger("kinrun.plugins.log")


def _key(obj: Any) -> str:
    meta = obj.get("metadata") or {} if isinstance(obj, dict) else {}
    ns, name = meta.get("namespace"), meta.get("name")
    return f"{ns}/{name}" if ns else str(name)


def _rv(obj: Any) -> str:
    return str(((obj.get("metadata") or {}) if isinstance(obj, dict) else {})
               .get("resourceVersion", ""))


@hookimpl
def kinrun_on_add(informer: str, obj: dict[str, Any], is_in_initial_list: bool) -> None:
    """Log an add (DEBUG during the initial list)."""
    level = logging.DEBUG if is_in_initial_list else logging.INFO
    logger.log(level, "%s: ADD %s (resourceVersion %s)", informer, _key(obj), _rv(obj))


@hookimpl
def kinrun_on_update(informer: str, old: dict[str, Any], new: dict[str, Any]) -> None:
    """Log an update (DEBUG for a resync: unchanged resourceVersion)."""
    level = logging.DEBUG if _rv(old) == _rv(new) else logging.INFO
    logger.log(level, "%s: UPDATE %s (resourceVersion %s -> %s)", informer, _key(new), _rv(old),
               _rv(new))


@hookimpl
def kinrun_on_delete(informer: str, obj: Any) -> None:
    """Log a delete; tombstones (``.key``/``.obj``) are marked as missed deletions."""
    if isinstance(obj, dict):
        logger.info("%s: DELETE %s (resourceVersion %s)", informer, _key(obj), _rv(obj))
    else:
        logger.info("%s: DELETE (missed) %s", informer, getattr(obj, "key", obj))
