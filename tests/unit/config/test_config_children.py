"""The children graph at load time (kinrun.config.children): edges from children.NAME reads
and dependsOn, a stable topological order, cycles refused with every member's file:line, the
informers a config gets for its child kinds (metadata-only unless status or a read needs the
whole object) and the mapTo: owner watches on them."""

from __future__ import annotations

import pytest

from kinrun.config import ConfigErrors, load_text
from kinrun.config.children import (PART_OF, child_informer_name, child_reads, dependents,
                                    declared_children)

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  apps: {apiVersion: example.com/v1, kind: App}
controllers:
  - name: app
    for: apps
    reconcile:
      actions:
        - children:
            resources:
%s
"""


def _child(name: str, kind: str = "ConfigMap", api: str = "v1", extra: str = "",
           body: str = "") -> str:
    return (f"              - name: {name}\n"
            f"                manifest: |\n"
            f"                  apiVersion: {api}\n"
            f"                  kind: {kind}\n"
            f"                  metadata: {{name: x{body}}}\n" + extra)


def test_reads_by_attribute_and_constant_index() -> None:
    """children.a and children['b'] are reads of a and b; other names are not children."""
    assert child_reads(["{{ children.a.metadata.name }} {{ children['b'].data }}",
                        "{{ obj.children }}"]) == {"a", "b"}


@pytest.mark.parametrize("source", ["{{ children[name] }}", "{% for c in children %}{% endfor %}",
                                    "{{ children | length }}"])
def test_a_computed_read_is_refused(source: str) -> None:
    """A read the graph cannot know (computed index, a loop, the whole mapping)."""
    with pytest.raises(ValueError, match="children.NAME"):
        child_reads([source])


def _items(*names_deps: tuple[str, tuple[str, ...]]) -> list[dict]:
    return [{"name": n, "dependsOn": list(d),
             "manifest": "{apiVersion: v1, kind: ConfigMap, metadata: {name: x}}"}
            for n, d in names_deps]


def test_order_puts_dependencies_first_and_keeps_the_written_order() -> None:
    """Dependencies first; independent children in the order written (Kahn, stable)."""
    order = declared_children(_items(("svc", ("deploy",)), ("cm", ()), ("deploy", ("cm",)),
                                     ("extra", ())), {}, None)
    assert [d.name for d in order] == ["cm", "deploy", "svc", "extra"]


def test_reads_in_manifest_ready_and_include_make_edges() -> None:
    items = _items(("a", ()), ("b", ()), ("c", ()))
    items[0]["manifest"] = "{apiVersion: v1, kind: ConfigMap, metadata: {name: '{{ children.c.metadata.name }}'}}"
    items[1]["readyWhen"] = "children.a is not none"
    order = declared_children(items, {}, None)
    assert [(d.name, d.depends_on) for d in order] == [("c", ()), ("a", ("c",)), ("b", ("a",))]


def test_a_cycle_names_every_member_with_its_line() -> None:
    """a -> b -> c -> a: one ConfigError naming the cycle and each child's file:line."""
    children = (_child("a", extra="                dependsOn: [c]\n")
                + _child("b", extra="                dependsOn: [a]\n")
                + _child("c", extra="                dependsOn: [b]\n"))
    with pytest.raises(ConfigErrors) as info:
        load_text(CONFIG % children.rstrip("\n"), file="graph.yaml")
    text = str(info.value)
    assert "dependency cycle: a -> c -> b -> a" in text
    for name, line in (("a", 12), ("b", 18), ("c", 24)):
        assert f"{name} at graph.yaml:{line}" in text


@pytest.mark.parametrize("extra,message", [
    ("                dependsOn: [nope]\n", "depends on 'nope', which is no child"),
    ("                dependsOn: [a]\n", "'a' depends on itself"),
])
def test_unknown_and_self_dependencies_are_refused(extra: str, message: str) -> None:
    with pytest.raises(ConfigErrors, match=message):
        load_text(CONFIG % _child("a", extra=extra).rstrip("\n"), file="g.yaml")


def test_a_templated_kind_is_refused_at_the_manifest() -> None:
    with pytest.raises(ConfigErrors, match="apiVersion and kind are written without templates"):
        load_text(CONFIG % _child("a", kind="'{{ obj.spec.kind }}'").rstrip("\n"), file="g.yaml")


def test_children_outside_actions_is_refused() -> None:
    text = (CONFIG % _child("a").rstrip("\n")).replace("      actions:", "      onDelete:")
    with pytest.raises(ConfigErrors, match="children runs in reconcile.actions only"):
        load_text(text, file="g.yaml")


def test_dependents_closure() -> None:
    decls = declared_children(_items(("a", ()), ("b", ("a",)), ("c", ("b",)), ("d", ())), {},
                              None)
    assert dependents(decls, ["a"]) == {"a", "b", "c"}


def test_child_kinds_get_informers_and_owner_watches() -> None:
    """One informer per child kind, selected by the ApplySet label, indexed by its value, in
    the primary's namespaces; metadata-only unless its readiness needs the status or another
    template reads it; a mapTo: owner watch of the controller on each."""
    children = (_child("cm") + _child("secret", kind="Secret")
                + _child("deploy", kind="Deployment", api="apps/v1",
                         body="-{{ children.cm.metadata.name }}")
                + _child("reader", kind="Secret", extra="                readyWhen: 'true'\n")
                + _child("widget", kind="Widget", api="example.com/v1"))
    config = load_text((CONFIG % children.rstrip("\n")).replace(
        "kind: App}", "kind: App, namespaces: [team-a]}"), file="g.yaml")
    added = {n: i for n, i in config.informers.items() if n != "apps"}
    assert {n: (i.kind, i.metadata_only) for n, i in added.items()} == {
        "app-children-configmap": ("ConfigMap", False),     # read by deploy's manifest
        "app-children-secret": ("Secret", False),           # readyWhen reads it
        "app-children-deployment": ("Deployment", False),   # readiness needs status
        "app-children-widget-example-com": ("Widget", False)}  # a CR: its Ready condition
    assert all(i.label_selector == PART_OF and i.namespaces == ("team-a",)
               and list(i.indexers) == ["applyset"] for i in added.values())
    watches = config.controller("app").watches
    assert [(w.informer, w.map_to) for w in watches] == [(n, "owner") for n in added]


def test_an_unread_configmap_is_watched_metadata_only() -> None:
    config = load_text(CONFIG % _child("cm").rstrip("\n"), file="g.yaml")
    assert config.informer("app-children-configmap").metadata_only is True


def test_a_config_without_children_is_unchanged() -> None:
    text = (CONFIG % _child("cm").rstrip("\n")).split("        - children:")[0] + "        - log: x\n"
    assert list(load_text(text, file="g.yaml").informers) == ["apps"]


def test_informer_names_are_dns_labels() -> None:
    long = child_informer_name("c" * 50, "example.com/v1", "VeryLongKindName")
    assert len(long) <= 63 and long.startswith("c" * 50)
    assert child_informer_name("app", "apps/v1", "Deployment") == "app-children-deployment"


@pytest.mark.parametrize("extra,body,message", [
    pytest.param("", "-{{ children.cm.metadata.nmae }}", "children.cm.metadata.nmae: ",
                 id="children-read-in-a-manifest"),
    pytest.param("                readyWhen: 'child.status.availableReplicaz > 0'\n", "",
                 "child.status.availableReplicaz: status has no field",
                 id="child-in-readyWhen"),
    pytest.param("                includeWhen: 'obj.spec.enabeld'\n", "", "obj.spec.enabeld",
                 id="obj-in-includeWhen"),
])
def test_reads_of_children_are_checked_against_their_kinds(extra: str, body: str,
                                                            message: str) -> None:
    """validate (the plan) checks children.NAME.path against NAME's kind, child.path in
    readyWhen against its own, and obj in readyWhen/includeWhen against the primary's."""
    from kinrun.errors import ConfigError
    from kinrun.plan import plan

    crd_free = CONFIG.replace("example.com/v1, kind: App", "v1, kind: ConfigMap")
    children = _child("cm") + _child("deploy", kind="Deployment", api="apps/v1", body=body,
                                     extra=extra)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        plan(load_text(crd_free % children.rstrip("\n"), file="g.yaml"))


@pytest.mark.parametrize("extra,body,message", [
    pytest.param("                includeWhen: 'enabeld'\n", "", "'enabeld' is undefined",
                 id="undefined-in-includeWhen"),
    pytest.param("                includeWhen: 'child.metadata.name'\n", "", "'child' is undefined",
                 id="child-outside-readyWhen"),
    pytest.param("", "-{{ child.metadata.name }}", "'child' is undefined", id="child-in-manifest"),
    pytest.param("", "", None, id="child-in-readyWhen"),
])
def test_child_is_defined_only_in_ready_when(extra: str, body: str, message: str | None) -> None:
    """``child`` exists in a child's readyWhen only: anywhere else (includeWhen, a manifest)
    every render fails, so validate refuses it; an undefined name in includeWhen too."""
    from kinrun.errors import ConfigError
    from kinrun.plan import plan

    crd_free = CONFIG.replace("example.com/v1, kind: App", "v1, kind: ConfigMap")
    ready = "                readyWhen: 'child.metadata.name != \"\"'\n"
    text = crd_free % (_child("cm", extra=ready) + _child("two", body=body, extra=extra)
                       ).rstrip("\n")
    if message is None:
        plan(load_text(text, file="g.yaml"))
        return
    with pytest.raises(ConfigError, match=message):
        plan(load_text(text, file="g.yaml"))


def test_one_set_per_parent_and_no_loop() -> None:
    """A second children (or applySet) action on the same parent would prune the first's
    children; a forEach over children would too."""
    two = CONFIG % (_child("a").rstrip("\n")) + "        - children: {resources: [{name: b, manifest: " \
        "'{apiVersion: v1, kind: Secret, metadata: {name: b}}'}]}\n"
    with pytest.raises(ConfigErrors, match="one set per parent"):
        load_text(two, file="g.yaml")
    from kinrun.plan import plan
    looped = (CONFIG % _child("a").rstrip("\n")).replace(
        "        - children:", "        - forEach: '[1, 2]'\n          children:")
    from kinrun.errors import ConfigError
    with pytest.raises(ConfigError, match="children is one set per parent"):
        plan(load_text(looped, file="g.yaml"))


def test_a_dict_method_name_and_a_two_document_manifest_are_refused() -> None:
    with pytest.raises(ConfigErrors, match="may not be named 'items'"):
        load_text(CONFIG % _child("items").rstrip("\n"), file="g.yaml")
    two = _child("a").rstrip("\n") + "\n                  ---\n                  apiVersion: v1\n" \
        "                  kind: ConfigMap\n                  metadata: {name: y}"
    with pytest.raises(ConfigErrors, match="the manifest has 2 documents"):
        load_text(CONFIG % two, file="g.yaml")


def test_two_controllers_with_children_of_one_kind_compile() -> None:
    """Two controllers of different parent kinds with ConfigMap children: their child
    informers have equal specs (the index included), so one informer is shared; two of the
    same parent kind would prune each other's children and are refused."""
    from kinrun.plan import plan
    other = """\
  - name: other
    for: %s
    reconcile:
      actions:
        - children:
            resources:
              - name: b
                manifest: "{apiVersion: v1, kind: ConfigMap, metadata: {name: b}}"
"""
    same = CONFIG % _child("a").rstrip("\n") + other % "apps"
    with pytest.raises(ConfigErrors, match="already makes an ApplySet of the same App objects"):
        load_text(same, file="g.yaml")
    two = (CONFIG % _child("a").rstrip("\n") + other % "secrets").replace(
        "informers:\n", "informers:\n  secrets: {apiVersion: v1, kind: Secret}\n")
    config = load_text(two, file="g.yaml")
    assert {"app-children-configmap", "other-children-configmap"} <= set(config.informers)
    plan(config)


@pytest.mark.parametrize("before,after,extra,message", [
    ("", "        - log: \"{{ children_ready }} {{ children.cm.metadata.name }} "
         "{{ children_not_ready is none }}\"\n", "", None),
    ("        - log: \"{{ children_ready }}\"\n", "", "", "'children_ready' is undefined"),
    ("", "      onError:\n        - log: \"{{ children.cm }}\"\n", "", "'children' is undefined"),
    ("", "        - log: \"{{ ready }}\"\n", "      vars:\n        ready: children_ready\n",
     "'children_ready' is undefined"),
    ("        - log: \"{{ children_ready | default(false) }}\"\n", "", "", None),
], ids=["after-the-action", "before-it", "in-onError", "in-a-var", "guarded"])
def test_graph_names_exist_after_the_children_action(before: str, after: str, extra: str,
                                                     message: str | None) -> None:
    """``children``, ``children_ready`` and ``children_not_ready`` are set by the children
    action's render for the actions after it in its list: anywhere else (before it, onError,
    a var, evaluated first) every render fails, so validate refuses it at its place."""
    from kinrun.errors import ConfigError
    from kinrun.plan import plan

    crd_free = CONFIG.replace("example.com/v1, kind: App", "v1, kind: ConfigMap")
    text = (crd_free % _child("cm").rstrip("\n")).replace(
        "      actions:\n", extra + "      actions:\n" + before) + after
    if message is None:
        plan(load_text(text, file="g.yaml"))
        return
    with pytest.raises(ConfigError, match=message):
        plan(load_text(text, file="g.yaml"))


TWO_SETS = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  first: {apiVersion: v1, kind: ConfigMap, labelSelector: "%s"}
  second: {apiVersion: v1, kind: ConfigMap, labelSelector: "%s"%s}
controllers:
  - name: a
    for: first
    reconcile:
      actions:
        - applySet: {manifests: "{apiVersion: v1, kind: Secret, metadata: {name: a}}"}
  - name: b
    for: second
    reconcile:
      actions:
%s
"""
_APPLYSET = '        - applySet: {manifests: "{apiVersion: v1, kind: Secret, metadata: {name: b}}"}'
_CHILDREN = ("        - children: {resources: [{name: b, manifest: "
             "'{apiVersion: v1, kind: Secret, metadata: {name: b}}'}]}")


@pytest.mark.parametrize("first,second,namespaces,action,refused", [
    ("role=src", "role=src", "", _APPLYSET, True),
    ("role=src", "role=src", "", _CHILDREN, True),
    ("role=src", "", "", _APPLYSET, True),
    ("role in (a, b)", "role=b", "", _APPLYSET, True),
    ("role=a", "role=b", "", _APPLYSET, False),
    ("role in (a, b)", "role notin (a, b)", "", _APPLYSET, False),
    ("role", "!role", "", _APPLYSET, False),
    ("role=a", "role!=b", "", _APPLYSET, True),
    ("", "", ", namespaces: [other]", _APPLYSET, False),
    ("", "", ", fieldSelector: metadata.name=beta", _APPLYSET, False),
    ("", "", ", fieldSelector: metadata.name!=alpha", _APPLYSET, False),
    ("", "", ", fieldSelector: metadata.name!=gamma", _APPLYSET, True),
], ids=["same-informer-selector", "applySet-and-children", "one-selects-all", "overlapping-in",
        "disjoint-values", "in-and-notin", "exists-and-not", "may-overlap", "disjoint-namespaces",
        "disjoint-field-values", "field-equal-and-not", "fields-may-overlap"])
def test_two_controllers_with_sets_on_parents_they_may_share_are_refused(
        first: str, second: str, namespaces: str, action: str, refused: bool) -> None:
    """Two controllers whose ApplySets (applySet or children) may have the same parent would
    prune each other's children: refused at the second, unless their informers select
    disjoint objects (label selectors no labels satisfy both, namespaces apart, field
    selectors requiring different names)."""
    first_ns = ", namespaces: [team]" if "namespaces" in namespaces else \
        ", fieldSelector: metadata.name=alpha" if "fieldSelector" in namespaces else ""
    text = (TWO_SETS % (first, second, namespaces, action)).replace(
        f'labelSelector: "{first}"}}', f'labelSelector: "{first}"{first_ns}}}', 1)
    if not refused:
        load_text(text, file="g.yaml")
        return
    with pytest.raises(ConfigErrors, match="controller 'a' already makes an ApplySet of the "
                                           "same ConfigMap objects"):
        load_text(text, file="g.yaml")
