"""Resource event handlers: what an informer calls for each change (as client-go
``ResourceEventHandler``, ``ResourceEventHandlerFuncs`` and ``FilteringResourceEventHandler``).

Objects passed to handlers are the cached objects: shared and read-only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from kinrun.cache.listwatch import Obj
from kinrun.cache.store import DeletedFinalStateUnknown


@runtime_checkable
class ResourceEventHandler(Protocol):
    """Receives an informer's notifications, one at a time, in order, on the listener's thread.

    ``on_add(obj, is_in_initial_list)``: the object appeared (``is_in_initial_list`` for objects
    of the first list, or the store content a late handler is given); ``on_update(old, new)``:
    it changed (or a resync replayed it: then ``old is new`` or the resourceVersions match);
    ``on_delete(obj)``: it is gone; ``obj`` may be a ``DeletedFinalStateUnknown``.
    """

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None: ...

    def on_update(self, old: Obj, new: Obj) -> None: ...

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None: ...


@dataclass(frozen=True, slots=True)
class ResourceEventHandlerFuncs:
    """A handler from optional callables; a missing one ignores that notification."""

    add_func: Callable[[Obj, bool], Any] | None = None
    update_func: Callable[[Obj, Obj], Any] | None = None
    delete_func: Callable[[Any], Any] | None = None

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        """Call ``add_func(obj, is_in_initial_list)`` if set."""
        if self.add_func is not None:
            self.add_func(obj, is_in_initial_list)

    def on_update(self, old: Obj, new: Obj) -> None:
        """Call ``update_func(old, new)`` if set."""
        if self.update_func is not None:
            self.update_func(old, new)

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        """Call ``delete_func(obj)`` if set."""
        if self.delete_func is not None:
            self.delete_func(obj)


@dataclass(frozen=True, slots=True)
class FilteringResourceEventHandler:
    """Passes only objects for which ``filter_func`` holds (client-go semantics): an update
    whose old object passed and new does not becomes a delete; the reverse becomes an add."""

    filter_func: Callable[[Any], bool]
    handler: ResourceEventHandler

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        """Forward when the object passes."""
        if self.filter_func(obj):
            self.handler.on_add(obj, is_in_initial_list)

    def on_update(self, old: Obj, new: Obj) -> None:
        """Forward as update, add or delete depending on which side passes."""
        was, now = self.filter_func(old), self.filter_func(new)
        if was and now:
            self.handler.on_update(old, new)
        elif now:
            self.handler.on_add(new, False)
        elif was:
            self.handler.on_delete(old)

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        """Forward when the object (or a tombstone's last state) passes."""
        target = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if target is None or self.filter_func(target):
            self.handler.on_delete(obj)
