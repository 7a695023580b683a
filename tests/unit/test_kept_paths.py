"""What ``kinrun.kept_paths`` keeps of each informer's objects: enough for every template,
however it reads the object (each case renders the same whole and projected), and no more
than what is read where it can tell."""

from __future__ import annotations

from typing import Any

import pytest

from kinrun.bound import reconciler
from kinrun.cache import KeyedIndexer, Lister
from kinrun.clock import FakeClock
from kinrun.config import load_text
from kinrun.plan import plan

POD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default", "uid": "u", "resourceVersion": "3",
                 "labels": {"app": "web"}, "managedFields": [{"manager": "m"}]},
    "spec": {"nodeName": "n1", "items": ["not", "a", "method"],
             "containers": [{"name": "c", "image": "nginx:1", "ports": [{"containerPort": 80}]},
                            {"name": "d", "image": "busybox", "args": ["sleep"]}],
             "volumes": [{"name": "v", "configMap": {"name": "cm", "items": [{"key": "k"}]}}]},
    "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
}

TEMPLATES = [
    "{{ obj.spec.nodeName }}",
    "{{ obj.spec.containers[0].image }} {{ obj.spec.containers[-1].name }}",
    "{% for c in obj.spec.containers %}{{ c.image }}{{ c.ports }}{% endfor %}",
    "{% for k, v in obj.spec.items() %}{{ k }}={{ v }};{% endfor %}",
    "{{ obj.spec.keys() | list }} {{ obj.spec.get('nodeName') }}",
    "{{ obj.get('status') }}",
    "{{ obj.spec['items'] }}",
    "{{ obj.spec.volumes[0].configMap['items'] }}",
    "{% set s = obj.spec %}{{ s.nodeName }} {{ s | length }}",
    "{{ obj.spec | to_json }}",
    "{{ obj | to_json }}",
    "{{ (obj.status | default({})).phase }} {{ obj.spec.hostname | default('h') }}",
    "{{ obj.spec.containers | map(attribute='image') | join(',') }}",
    "{{ obj.spec.containers[1:] | length }}",
    "{% macro m(o) %}{{ o.spec.nodeName }}{% endmacro %}{{ m(obj) }}",
    "{{ obj.status.conditions | selectattr('type', 'eq', 'Ready') | list }}",
    "{{ obj.spec.nodeName.upper() }} {{ obj.spec.nodeName.startswith('n') }}",
    "{% if obj.status %}{{ obj.status.phase }}{% endif %}",
    "{{ obj.spec.containers | first }}",
    "{% set ns = namespace(o=obj) %}{{ ns.o.status.phase }}",
    "{{ obj.spec.containers[0]['ports'][0].containerPort }}",
    "{{ obj['spec']['nodeName'] }} {{ obj.metadata.labels.app }}",
]


def config(template: str, extra: str = "") -> str:
    quoted = template.replace("'", "''")
    return f"""\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  pods: {{apiVersion: v1, kind: Pod{extra}}}
controllers:
  - name: c
    for: pods
    reconcile:
      actions:
        - log: '{quoted}'
"""


def rendered(compiled: Any, obj: dict[str, Any]) -> Any:
    run = reconciler(compiled.controllers[0], listers={"pods": Lister(KeyedIndexer())})
    try:
        return run.render("default/p", obj).steps
    except Exception as exc:  # the same error both ways is the same behaviour
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("template", TEMPLATES)
def test_every_read_is_kept(template: str) -> None:
    compiled = plan(load_text(config(template)), clock=FakeClock(0.0))
    projection = compiled.informers["pods"].projection
    whole = {k: v for k, v in POD.items()}
    whole["metadata"] = {k: v for k, v in POD["metadata"].items() if k != "managedFields"}
    shown = projection.project(POD) if projection is not None else whole
    assert rendered(compiled, shown) == rendered(compiled, whole)


@pytest.mark.parametrize(("template", "kept"), [
    ("{{ obj.spec.nodeName }}", {"spec.nodeName"}),
    ("{{ obj.spec.containers[0].image }}", {"spec.containers.[].image"}),
    ("{{ obj.spec.containers | map(attribute='image', default='-') | join }}",
     {"spec.containers.[].image"}),
    ("{{ obj.spec.containers | map(attribute='ports.0.containerPort') | list }}",
     {"spec.containers.[].ports.[].containerPort"}),
    ("{% set k = 'containers' %}{{ obj.spec[k] | map(attribute='image') | list }}", {"spec"}),
    ("{% for k, v in obj.spec.items() %}{{ k }}{% endfor %}", {"spec"}),
    ("{{ obj.status.phase }} {{ obj.status }}", {"status"}),
    ("{{ obj.metadata.labels.app }}", set()),
    ("{{ obj.spec.nodeName.upper() }} {{ obj.status.phase.startswith('R') }}",
     {"spec.nodeName", "status.phase"}),
])
def test_only_what_is_read_is_kept(template: str, kept: set[str]) -> None:
    compiled = plan(load_text(config(template)))
    projection = compiled.informers["pods"].projection
    assert {".".join(p) for p in projection.paths} - {"apiVersion", "kind"} == kept


@pytest.mark.parametrize("template", ["{{ obj | to_json }}", "{{ obj.get('spec') }}",
                                      "{% for x in list('pods') %}{{ x }}{% endfor %}"])
def test_a_whole_read_decodes_whole_objects(template: str) -> None:
    compiled = plan(load_text(config(template)))
    assert compiled.informers["pods"].projection is None
    assert compiled.informers["pods"].reads.whole


def test_projection_off_and_metadata_only_decode_no_projection() -> None:
    assert plan(load_text(config("{{ obj.spec.nodeName }}", ", projection: 'off'"))
                ).informers["pods"].projection is None
    assert plan(load_text(config("{{ obj.metadata.name }}", ", metadataOnly: true"))
                ).informers["pods"].projection is None


def test_hooks_without_reads_read_every_informer_whole() -> None:
    text = config("{{ obj.spec.nodeName }}").replace(
        "    reconcile:\n", "    reconcile:\n      hooks: true\n      reads: [spec.nodeName]\n")
    text = text.replace("informers:\n", "informers:\n  nodes: {apiVersion: v1, kind: Node}\n")
    from kinrun.kept_paths import informer_reads
    compiled = plan(load_text(text.replace("      hooks: true\n", "")))
    found = informer_reads(load_text(text), compiled.engine, None)
    assert {".".join(p) for p in found["pods"].paths} >= {"spec.nodeName"}
    assert not found["pods"].whole
    assert found["nodes"].whole  # a hook may read any lister
    no_reads = load_text(text.replace("      reads: [spec.nodeName]\n", ""))
    assert informer_reads(no_reads, compiled.engine, None)["pods"].whole


def test_plugins_event_hooks_and_index_functions_read_whole_objects() -> None:
    """A plugin's index functions (named in the config or not) see their informer's objects,
    its event hooks every informer's: whole objects for those."""
    from kinrun.hooks import hookimpl
    from kinrun.kept_paths import informer_reads
    from kinrun.plugin_manager import new_plugin_manager

    class Indexes:
        @hookimpl
        def kinrun_index_funcs(self, informer):
            return {"byNode": lambda o: [o["spec"]["nodeName"]]} if informer == "pods" else None

    class Events:
        @hookimpl
        def kinrun_on_add(self, informer, obj, is_in_initial_list):
            return None

    text = config("{{ obj.metadata.name }}").replace(
        "informers:\n", "informers:\n  nodes: {apiVersion: v1, kind: Node}\n")
    compiled = plan(load_text(text))
    pm = new_plugin_manager()
    pm.register(Indexes())
    found = informer_reads(compiled.config, compiled.engine, pm)
    assert found["pods"].whole and not found["nodes"].whole
    pm.register(Events())
    found = informer_reads(compiled.config, compiled.engine, pm)
    assert found["pods"].whole and found["nodes"].whole


def test_an_action_named_as_a_var_does_not_read_that_var_whole() -> None:
    """An action's ``name:`` is a label, never rendered: an action called ``pod`` beside a var
    ``pod: obj`` leaves the projection to what the templates read."""
    text = config("{{ pod.spec.nodeName }}").replace(
        "      actions:\n        - log:",
        "      vars: {pod: obj}\n      actions:\n        - name: pod\n          log:")
    projection = plan(load_text(text)).informers["pods"].projection
    assert projection is not None
    assert {".".join(p) for p in projection.paths} - {"apiVersion", "kind"} == {"spec.nodeName"}
