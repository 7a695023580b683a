"""Templates that once read a field projection did not keep (found by trying to break it):
each renders the same from whole and from projected caches, and the other holes found with
them stay closed (Secret redaction, an ambiguous projection id, deep nesting)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from kinrun.bound import reconciler
from kinrun.cache import KeyedIndexer, Lister
from kinrun.clock import FakeClock
from kinrun.config import load_text
from kinrun.kube.projection import Projection
from kinrun.plan import plan
from kinrun.reload import diff

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "p", "namespace": "default", "uid": "u", "resourceVersion": "3",
                    "labels": {"app": "web"}, "annotations": {"a": "1"}},
       "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}],
                "a.b": 1, "a": {"b": 2}, "[]": "brackets", "": "empty"},
       "status": {"phase": "Running"}}
CM = {"apiVersion": "v1", "kind": "ConfigMap",
      "metadata": {"name": "cm", "namespace": "default", "uid": "u2", "resourceVersion": "4"},
      "data": {"k": "v", "spec": "x"}}


def config(template: str, variables: str = "", kind: str = "Pod",
           api_version: str = "v1") -> str:
    quoted = template.replace("'", "''")
    return f"""\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  pods: {{apiVersion: {api_version}, kind: {kind}}}
  cms: {{apiVersion: v1, kind: ConfigMap}}
controllers:
  - name: c
    for: pods
    reconcile:
{variables}      actions:
        - log: '{quoted}'
        - event: {{reason: R, message: '{quoted}'}}
"""


def both(text: str, obj: dict[str, Any] = POD, cms: list[dict[str, Any]] | None = None
         ) -> tuple[Any, Any]:
    """The render of ``obj`` from whole caches and from projected ones (``cms``: the
    ConfigMaps cached, default ``[CM]``)."""
    compiled = plan(load_text(text), clock=FakeClock(0.0))

    def render(projected: bool) -> Any:
        listers = {}
        for name, informer in compiled.informers.items():
            store = KeyedIndexer(indexers=dict(informer.indexers))
            for item in ((cms or [CM]) if name == "cms" else []):
                store.add(informer.projection.project(item)
                          if projected and informer.projection else item)
            listers[name] = Lister(store)
        primary = compiled.informers["pods"].projection
        shown = primary.project(obj) if projected and primary else obj
        try:
            steps = reconciler(compiled.controllers[0], listers=listers).render(
                "default/p", shown).steps
            return orjson.dumps(steps, option=orjson.OPT_SORT_KEYS, default=str)
        except Exception as exc:  # the same error both ways is the same behaviour
            return type(exc).__name__, str(exc)
    return render(False), render(True)


VARS = "      vars:\n        {}\n"
CASES = [
    ("{{ (obj or {}).spec.nodeName }}", ""),
    ("{{ (true and obj) | tojson }}", ""),
    ("{% macro m(o) %}{{ o.spec.nodeName }}{% endmacro %}{{ m(obj or {}) }}", ""),
    ("{{ (get('cms', 'default/cm') or {}).data }}", ""),
    ("{{ o.spec.nodeName }}", VARS.format('o: "obj or {}"')),
    ("{% set o = none if false else obj %}{{ o.spec.nodeName }}", ""),
    ("{{ o.spec.nodeName }}", VARS.format('o: "none if false else obj"')),
    ("{% set o = obj %}{% set o = obj %}{{ o.spec.nodeName }}", ""),
    ("{% set d = get('cms', 'default/cm') %}{% set d = get('cms', 'default/cm') %}"
     "{{ d.data.k }}", ""),
    ("{% set ns = namespace(o=none) %}{% set ns.o = obj %}{{ ns.o.spec.nodeName }}", ""),
    ("{% for k in obj %}{{ k }},{% endfor %}", ""),
    ("{% for k in get('cms', 'default/cm') %}{{ k }},{% endfor %}", ""),
    ("{% set k = 'spec' %}{{ obj[k].nodeName }}", ""),
    ("{% set d = get('cms', 'default/cm') %}{% set k = 'data' %}{{ d[k] }}", ""),
    ("{% set inf = 'cms' %}{{ get(inf, 'default/cm').data.k }}", ""),
    ("{{ get(informer='cms', key='default/cm').data.k }}", ""),
    ("{% set g = get %}{{ g('cms', 'default/cm').data.k }}", ""),
    ("{{ by_index(*['cms', 'namespace', 'default']) }}", ""),
    ("{{ x }}", VARS.format('x: "prefix-{{ obj }}"')),
    ("{% for d in obj.spec.containers %}{{ d.name }}{% endfor %} {{ d.data.k }}",
     VARS.format("d: \"get('cms', 'default/cm')\"")),
    ("{{ d.data.k }} {{ d.data }}", VARS.format("d: \"get('cms', obj.metadata.namespace ~ '/cm')\"")),
    ("{{ obj.metadata.keys() | list }}", ""),  # ObjectMeta's fields (a server sends no other)
    ("{{ d.data.k }}", VARS.format("d: \"get('cms', 'default/cm') if obj else none\"")),
    ("{{ d.data.k }} {{ d | tojson }}",
     VARS.format("d: \"get('cms', 'default/cm') if obj else none\"")),
    ("{{ d.data.k }} {{ d.metadata.name }}", VARS.format("d: \"get('cms', 'default/cm') if false else obj\"")),
    ("{% if obj and obj.status %}{{ obj.status.phase }}{% endif %}", ""),
    # two vars of one text, the second shadowed in a template: each var is read by its name
    ("cfg={{ cfg.metadata.name }} {% set settings = settings or {} %}"
     "{{ settings.data.k if settings.data is defined else 'default-v' }}",
     VARS.format("cfg: \"get('cms', obj.metadata.namespace ~ '/cm')\"\n"
                 "        settings: \"get('cms', obj.metadata.namespace ~ '/cm')\"")),
    ("{% for b in [1] %}{% endfor %}{{ b.spec.nodeName }}",
     VARS.format('a: "obj"\n        b: "obj"')),
    # a var written as a template is text, never the object it prints
    ("{{ d.count('nginx') }} {{ d.split(',') | length }}",
     VARS.format('d: "{% if true %}{{ obj }}{% endif %}"')),
]


UNCHECKED = [  # fields no Pod has: on a kind without a schema, where validate cannot refuse them
    ("{{ obj.spec['a.b'] }} {{ obj.spec.a.b }}", ""),
    ("{{ obj.spec['[]'] }} {{ obj.spec[''] }}", ""),
    ("{{ d.count('nginx') }} {{ d.split(',') | length }}",
     VARS.format('d: "{% if true %}{{ obj }}{% endif %}"')),
    ("{{ d.count('nginx') }}", VARS.format('d: "{{ obj }}{# text #}"')),
]


@pytest.mark.parametrize(("template", "variables"), CASES)
def test_the_same_render_whole_and_projected(template: str, variables: str) -> None:
    whole, projected = both(config(template, variables))
    assert projected == whole


@pytest.mark.parametrize(("template", "variables"), UNCHECKED)
def test_the_same_render_for_odd_keys(template: str, variables: str) -> None:
    foo = {**POD, "apiVersion": "example.com/v1", "kind": "Foo"}
    whole, projected = both(config(template, variables, "Foo", "example.com/v1"), foo)
    assert projected == whole


def test_presence_tests_keep_the_projection() -> None:
    """Guards read no fields: ``if obj``, ``obj is none``, ``not obj``, ``a and b`` in a test."""
    compiled = plan(load_text(config(
        "{% if obj and obj.spec.nodeName is defined and not old %}{{ obj.spec.nodeName }}"
        "{% endif %}{{ obj is none }}")))
    assert compiled.informers["pods"].projection is not None


def test_a_secret_s_values_stay_redacted() -> None:
    """kinrun's redaction reads a Secret's data: kept, so a value quoted in an annotation is
    still redacted in the log line and the Event."""
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
              "metadata": {"name": "p", "namespace": "default", "uid": "u",
                           "annotations": {"last": "cGFzc3dvcmQtMTIzNDU2Nzg="}},
              "data": {"password": "cGFzc3dvcmQtMTIzNDU2Nzg="}}
    text = config("{{ obj.metadata.annotations }}", kind="Secret")
    whole, projected = both(text, secret)
    assert projected == whole and b"cGFzc3dvcmQtMTIzNDU2Nzg=" not in projected


def test_paths_that_look_alike_are_two_projections() -> None:
    """``spec['a.b']`` and ``spec.a.b`` are other fields: a reload from one to the other
    relists, and says so."""
    first = plan(load_text(config("{{ obj.spec['a.b'] }}", "", "Foo", "example.com/v1")))
    second = plan(load_text(config("{{ obj.spec.a.b }}", "", "Foo", "example.com/v1")))
    assert first.informers["pods"].projection != second.informers["pods"].projection
    change = diff(first, second)
    assert change.relisted == {"pods": "+spec.a.b -spec['a.b']"}


def test_nesting_too_deep_for_the_projection_decodes_whole() -> None:
    projection = Projection([("spec", "x")])
    data = (b'{"apiVersion":"v1","kind":"Foo","metadata":{"name":"a"},"spec":{"x":1},"status":'
            + b"[" * 1000 + b"]" * 1000 + b"}")
    assert projection.loads_object(data)["spec"] == {"x": 1}
    assert sorted(projection.loads_object(data)) == sorted(orjson.loads(data))  # whole


MAPPED = ["{{ obj.spec.x | map(attribute='a.b') | join(',') }}",
          "{{ obj.spec.x | map(attribute='a', default='d') | list }}",
          "{{ obj.spec.x | map(attribute='0') | list }} {{ obj.spec.x | map(attribute='a.1') | list }}",
          "{{ obj.spec.x | map(attribute='a') | list | length }}"]
MAPPED_VALUES = [[{"a": {"b": 1, "c": 2}, "z": 3}, {"z": 4}, "s", [5, 6], None],
                 {"a": {"b": 1}, "k": 2}, "string", [[1, 2], {"a": [7, 8]}], 7]


@pytest.mark.parametrize("template", MAPPED)
@pytest.mark.parametrize("value", MAPPED_VALUES)
def test_map_attribute_reads_each_item_and_keeps_a_map_whole(template: str, value: Any) -> None:
    """``x | map(attribute='a.b')`` keeps ``x.[].a.b``; where ``x`` is a map, iterating it gives
    its keys, so the projection keeps it whole."""
    foo = {**POD, "apiVersion": "example.com/v1", "kind": "Foo", "spec": {"x": value, "y": 1}}
    text = config(template, "", "Foo", "example.com/v1")
    assert "spec.x[]" in repr(plan(load_text(text)).informers["pods"].projection)
    whole, projected = both(text, foo)
    assert projected == whole


@pytest.mark.parametrize("template", [
    "{{ obj.metadata | map(attribute='0') | join }}",
    "{{ obj.metadata | map(attribute='x') | list | length }}",
    "{{ get('cms', 'default/cm').metadata | map(attribute='0') | join }}",
    "{{ (obj.spec.x | default(obj.spec.y, true)).z is defined }}",
    "{{ (obj.spec.x | default(obj.spec.y, boolean=true)).z | map(attribute='a') | list }}",
])
def test_metadata_iterated_and_defaults_that_test_truth_read_whole(template: str) -> None:
    """Iterating ``metadata`` gives all its keys (annotations, creationTimestamp ...), and
    ``default(y, true)`` tests the truth of a map a projection may have emptied."""
    meta = {**POD["metadata"], "creationTimestamp": "2020-01-01T00:00:00Z"}
    foo = {**POD, "apiVersion": "example.com/v1", "kind": "Foo", "metadata": meta,
           "spec": {"x": {"q": 1}, "y": {"z": [{"a": 1}]}}}
    cm = {**CM, "metadata": {**CM["metadata"], "annotations": {"a": "1"}}}
    text = config(template, "", "Foo", "example.com/v1")
    whole, projected = both(text, foo, cms=[cm])
    assert projected == whole


def test_a_plugin_filter_given_the_context_keeps_whole_objects(tmp_path: Any) -> None:
    """A plugin filter marked ``jinja2.pass_context`` can read ``obj`` (or call ``get``)
    without a chain in any template: every informer keeps whole objects, and the render is
    the same both ways."""
    plugin = tmp_path / "plug.py"
    plugin.write_text(
        "from jinja2 import pass_context\nfrom kinrun.hooks import hookimpl\n\n\n"
        "@pass_context\ndef phase_of(ctx, _value):\n"
        "    return ((ctx.get('obj') or {}).get('status') or {}).get('phase')\n\n\n"
        "@hookimpl\ndef kinrun_template_filters():\n    return {'phase_of': phase_of}\n")
    text = config("phase={{ 'x' | phase_of }}").replace(
        "informers:", f"plugins: [{plugin}]\ninformers:", 1)
    whole, projected = both(text)
    assert projected == whole and b"phase=Running" in whole
