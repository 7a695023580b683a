"""Projection never changes what a controller does: for every example config, objects of each
kind it watches (the example's test objects, random mutants of them and random objects drawn
from the kind's schema) give the same reconcile (every request, log line, Event and requeue
``render`` shows, or the same error), the same index values and the same mapTo keys, whether
the caches hold whole objects or projected ones (``kinrun.kept_paths``,
``kinrun.kube.projection``)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from kinrun.bound import reconciler
from kinrun.cache import KeyedIndexer, Lister
from kinrun.cache.store import meta_namespace_key
from kinrun.clock import FakeClock
from kinrun.config import load
from kinrun.plan import _primary_schema, plan
from kinrun.safe_yaml import load_all

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "examples" / "configs").glob("*.yaml"))
SEED = 30
OBJECTS_PER_KIND = 40
WORDS = ("x", "nginx", "1", "", "true", "web", "app", "a.b/c", "8080", "Ready")


def random_value(schema: Any, rng: random.Random, depth: int = 0) -> Any:
    """A random JSON value the schema allows (any value where it says nothing)."""
    kind = schema.type if schema is not None else ""
    if kind == "object" or (schema is not None and schema.properties):
        out = {name: random_value(sub, rng, depth + 1)
               for name, sub in schema.properties.items()
               if depth < 6 and rng.random() < (0.7 if depth < 2 else 0.35)}
        extra = schema.additional
        if extra is not None or (not schema.properties and depth < 6):
            for key in rng.sample(WORDS, rng.randint(0, 2)):
                out[key] = random_value(extra, rng, depth + 1)
        return out
    if kind == "array":
        return [random_value(schema.items, rng, depth + 1) for _ in range(rng.randint(0, 2))]
    if kind == "integer":
        return rng.randint(-1, 3)
    if kind == "number":
        return rng.choice((0, 1.5, 2))
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "string":
        return rng.choice(WORDS)
    if depth >= 4:
        return rng.choice(WORDS)
    return rng.choice((rng.choice(WORDS), rng.randint(0, 3), None, True,
                       {rng.choice(WORDS): rng.choice(WORDS)}, [rng.choice(WORDS)]))


def mutant(seed: dict[str, Any], schema: Any, rng: random.Random) -> dict[str, Any]:
    """``seed`` with random fields of its schema added, changed and removed (metadata kept)."""
    fresh = random_value(schema, rng)
    out = orjson.loads(orjson.dumps(seed))
    _mix(out, fresh, rng)
    out["metadata"] = orjson.loads(orjson.dumps(seed.get("metadata") or {}))
    return out


def _mix(target: dict[str, Any], fresh: Any, rng: random.Random) -> None:
    if not isinstance(fresh, dict):
        return
    for key, value in fresh.items():
        if key in target and isinstance(target[key], dict) and rng.random() < 0.7:
            _mix(target[key], value, rng)
        elif rng.random() < 0.4:
            target[key] = value
    for key in list(target):
        if key not in ("apiVersion", "kind", "metadata") and rng.random() < 0.1:
            del target[key]


def seeds(config_file: Path) -> list[dict[str, Any]]:
    """Every object the example's test file gives (``given``, including updates)."""
    test_file = ROOT / "examples" / "tests" / config_file.name.replace(".yaml", ".test.yaml")
    if not test_file.exists():
        return []
    found: list[dict[str, Any]] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("kind"), str) and isinstance(value.get("metadata"), dict):
                found.append(value)
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
    for doc in load_all(test_file.read_text()):
        walk(doc)
    return found


def objects_of(compiled: Any, name: str, pool: list[dict[str, Any]],
               rng: random.Random) -> list[dict[str, Any]]:
    informer = compiled.informers[name].spec
    schema = _primary_schema(compiled.config, informer)
    mine = [o for o in pool if o.get("kind") == informer.kind
            and o.get("apiVersion") == informer.api_version]
    out = [orjson.loads(orjson.dumps(o)) for o in mine]
    for i in range(OBJECTS_PER_KIND):
        if mine and i % 2:
            obj = mutant(rng.choice(mine), schema, rng)
        else:
            obj = random_value(schema, rng) if schema is not None else {}
            obj = obj if isinstance(obj, dict) else {}
        obj["apiVersion"], obj["kind"] = informer.api_version, informer.kind
        meta = obj["metadata"] = obj.get("metadata") if isinstance(obj.get("metadata"),
                                                                     dict) else {}
        meta["name"] = meta.get("name") if isinstance(meta.get("name"), str) \
            and meta.get("name") else f"o{i}"
        if not isinstance(meta.get("namespace"), str) or not meta.get("namespace"):
            meta["namespace"] = rng.choice(("default", "ns"))
        meta.update(uid=f"uid-{name}-{i}", resourceVersion=str(10 + i))
        out.append(obj)
    return out


def outcome(call: Any) -> Any:
    try:
        result = call()
    except Exception as exc:  # the same error on both sides is the same behaviour
        return ("error", type(exc).__name__, str(exc))
    if hasattr(result, "steps"):
        return ("rendered", orjson.dumps(result.steps, option=orjson.OPT_SORT_KEYS,
                                         default=str), result.note if hasattr(result, "note")
                else None)
    return ("value", orjson.dumps(result, option=orjson.OPT_SORT_KEYS, default=str))


def listers_of(compiled: Any, objects: dict[str, list[dict[str, Any]]],
               projected: bool) -> dict[str, Lister]:
    out = {}
    for name, informer in compiled.informers.items():
        store = KeyedIndexer(indexers=dict(informer.indexers))
        for obj in objects.get(name, []):
            shown = informer.projection.project(obj) if projected and informer.projection \
                else obj
            store.add(shown)
        out[name] = Lister(store)
    return out


@pytest.mark.parametrize("config_file", CONFIGS, ids=lambda p: p.stem)
def test_projection_changes_no_reconcile(config_file: Path) -> None:
    """Render every object of every controller's primary (live and deleted), both ways."""
    compiled = plan(load(str(config_file)), clock=FakeClock(1_700_000_000.0))
    if all(i.projection is None for i in compiled.informers.values()):
        pytest.skip("no informer of this config is projected")
    rng = random.Random(f"{SEED}:{config_file.name}")
    pool = seeds(config_file)
    objects = {name: objects_of(compiled, name, pool, rng) for name in compiled.informers}
    full, projected = listers_of(compiled, objects, False), listers_of(compiled, objects, True)
    compared = 0
    for controller in compiled.controllers:
        informer = compiled.informers[controller.spec.primary]
        project = informer.projection.project if informer.projection else (lambda o: o)
        run_full = reconciler(controller, listers=full)
        run_projected = reconciler(controller, listers=projected)
        for obj in objects[controller.spec.primary]:
            key = meta_namespace_key(obj)
            shown = project(obj)
            assert outcome(lambda: run_full.render(key, obj)) == \
                outcome(lambda: run_projected.render(key, shown)), (controller.name, obj)
            assert outcome(lambda: run_full.render(key, None, old=obj)) == \
                outcome(lambda: run_projected.render(key, None, old=shown)), \
                (controller.name, "deleted", obj)
            compared += 1
        for watch in controller.watches:
            _same_keys(watch, compiled.informers[watch.spec.informer],
                       objects[watch.spec.informer])
    for name, informer in compiled.informers.items():
        _same_index_values(informer, objects[name])
    assert compared > 0


def _same_keys(watch: Any, informer: Any, objs: list[dict[str, Any]]) -> None:
    """The watch's mapTo maps whole and projected objects to the same keys."""
    if watch.mapper is None or informer.projection is None:
        return
    for obj in objs:
        assert outcome(lambda: watch.mapper(obj)) == \
            outcome(lambda: watch.mapper(informer.projection.project(obj))), obj


def _same_index_values(informer: Any, objs: list[dict[str, Any]]) -> None:
    if informer.projection is None:
        return
    for name, func in informer.indexers.items():
        for obj in objs:
            assert outcome(lambda: func(obj)) == \
                outcome(lambda: func(informer.projection.project(obj))), (name, obj)


def test_the_analysis_is_what_keeps_them_equal() -> None:
    """The test can fail: a projection that leaves out a path a template reads changes the
    render (here the pod-logger's ``metadata.name`` is kept by any projection, so a config
    reading ``spec.nodeName`` is projected without it by hand)."""
    from kinrun.config import load_text
    from kinrun.kube.projection import Projection

    compiled = plan(load_text(CONFIG_READING_SPEC))
    controller = compiled.controllers[0]
    listers = {"pods": Lister(KeyedIndexer())}
    obj = {"apiVersion": "v1", "kind": "Pod", "spec": {"nodeName": "n1"},
           "metadata": {"name": "p", "namespace": "default", "uid": "u", "resourceVersion": "1"}}
    assert compiled.informers["pods"].projection.project(obj)["spec"] == {"nodeName": "n1"}
    wrong = Projection([("status",)])
    full = outcome(lambda: reconciler(controller, listers=listers).render("default/p", obj))
    cut = outcome(lambda: reconciler(controller, listers=listers).render("default/p",
                                                                         wrong.project(obj)))
    assert full != cut


CONFIG_READING_SPEC = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  pods: {apiVersion: v1, kind: Pod}
controllers:
  - name: c
    for: pods
    reconcile:
      actions:
        - log: "{{ obj.spec.nodeName | default('unscheduled') }}"
"""
