"""``private_context``: a hook's ReconcileContext carries every field of the run's, with
``old`` a private copy and the listers' and indexers' answers private copies."""

from __future__ import annotations

import dataclasses

from kinrun import hooks
from kinrun.plugin_manager import private_context


def test_every_field_is_carried_over() -> None:
    """Each field keeps its value (the wrapped ones answer through the originals), so a field
    added to ReconcileContext cannot be dropped silently on the way to hooks."""
    values = {f.name: object() for f in dataclasses.fields(hooks.ReconcileContext)}
    old = {"metadata": {"name": "a"}}
    lister = type("L", (), {"get": lambda self, key: old})()
    values.update(old=old, listers={"cms": lister}, indexers={"cms": lister})
    ctx = hooks.ReconcileContext(**values)
    got = private_context(ctx)
    for field in dataclasses.fields(hooks.ReconcileContext):
        if field.name not in ("old", "listers", "indexers"):
            assert getattr(got, field.name) is values[field.name], field.name
    assert got.old == old and got.old is not old
    for name in ("listers", "indexers"):
        answer = getattr(got, name)["cms"].get("default/a")
        assert answer == old and answer is not old
