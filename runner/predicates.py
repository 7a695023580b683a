"""Update predicates: which updates of a controller's primary object are worth a reconcile.

As controller-runtime's ``predicate`` package: an update passes when any configured predicate
holds; adds and deletes always pass. ``generationChanged`` compares ``metadata.generation``
(kinds without a generation, such as ConfigMaps, then never pass on update);
``resourceVersionChanged`` filters resync replays (whose resourceVersion is unchanged).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kinrun.cache.handler import ResourceEventHandler
from kinrun.cache.listwatch import Obj

UpdatePredicate = Callable[[Obj, Obj], bool]


def _meta(obj: Obj) -> dict[str, Any]:
    return obj.get("metadata") or {}


def generation_changed(old: Obj, new: Obj) -> bool:
    """``metadata.generation`` differs (spec changed)."""
    return _meta(old).get("generation") != _meta(new).get("generation")


def labels_changed(old: Obj, new: Obj) -> bool:
    """``metadata.labels`` differ."""
    return (_meta(old).get("labels") or {}) != (_meta(new).get("labels") or {})


def annotations_changed(old: Obj, new: Obj) -> bool:
    """``metadata.annotations`` differ."""
    return (_meta(old).get("annotations") or {}) != (_meta(new).get("annotations") or {})


def resource_version_changed(old: Obj, new: Obj) -> bool:
    """``metadata.resourceVersion`` differs (false for resync replays)."""
    return _meta(old).get("resourceVersion") != _meta(new).get("resourceVersion")


PREDICATES: dict[str, UpdatePredicate] = {
    "generationChanged": generation_changed,
    "labelsChanged": labels_changed,
    "annotationsChanged": annotations_changed,
    "resourceVersionChanged": resource_version_changed,
}
"""Config name -> predicate (the names the schema allows under ``controllers[].predicates``)."""


class UpdateFilteringHandler:
    """Passes adds and deletes to ``inner``; passes an update only when any predicate holds
    (no predicates: every update). Stateless; thread-safe when ``inner`` is."""

    __slots__ = ("inner", "predicates")

    def __init__(self, inner: ResourceEventHandler, predicates: Sequence[UpdatePredicate]) -> None:
        self.inner = inner
        self.predicates = tuple(predicates)

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        self.inner.on_add(obj, is_in_initial_list)

    def on_update(self, old: Obj, new: Obj) -> None:
        if not self.predicates or any(p(old, new) for p in self.predicates):
            self.inner.on_update(old, new)

    def on_delete(self, obj: Any) -> None:
        self.inner.on_delete(obj)


def filter_updates(inner: ResourceEventHandler, names: Sequence[str]) -> ResourceEventHandler:
    """``inner`` wrapped by the predicates called ``names`` (KeyError: unknown name); ``inner``
    itself when ``names`` is empty."""
    if not names:
        return inner
    return UpdateFilteringHandler(inner, [PREDICATES[n] for n in names])
