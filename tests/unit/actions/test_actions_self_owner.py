"""Never an owner of itself: apply/create/applySet add no owner reference to the reconciled
object itself (the default), refuse an explicit ownerReference: true on it (compile time when
the manifest says so literally, run time otherwise), and still refuse cross-scope owners."""

from __future__ import annotations

import textwrap

import pytest

from kinrun.actions import RenderError, compile_actions
from kinrun.actions.kinds import names_reconciled_object
from kinrun.config import load_text
from kinrun.errors import ConfigError
from kinrun.plan import plan

NAMESPACE = {"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": "team-a", "uid": "u-ns"}}
CM = {"apiVersion": "v1", "kind": "ConfigMap",
      "metadata": {"name": "cm", "namespace": "ns", "uid": "u-cm"}}
LABEL_ITSELF = ("apiVersion: v1\nkind: Namespace\n"
                "metadata: {name: '{{ obj.metadata.name }}', labels: {team: a}}\n")


def test_apply_of_the_reconciled_object_adds_no_owner_reference():
    """A "label every Namespace" controller: the default ownerReference does not make the
    Namespace its own owner."""
    prog = compile_actions([{"apply": {"manifest": LABEL_ITSELF}}], controller="c")
    step, = prog.render(key="team-a", obj=NAMESPACE).steps
    assert step.name == "team-a" and "ownerReferences" not in step.body["metadata"]


def test_other_children_still_get_the_owner_reference():
    """The default still owns every other object (here a ConfigMap in the Namespace)."""
    prog = compile_actions([{"apply": {"manifest": "{apiVersion: v1, kind: ConfigMap, metadata: "
                                                   "{name: x, namespace: team-a}}"}}],
                           controller="c")
    step, = prog.render(key="team-a", obj=NAMESPACE).steps
    assert step.body["metadata"]["ownerReferences"][0]["uid"] == "u-ns"


def test_an_explicit_owner_reference_on_itself_fails_the_render():
    """ownerReference: true written on a manifest that renders to the object itself is a
    RenderError that says why (the compile-time check could not see it: computed kind)."""
    prog = compile_actions([{"apply": {"ownerReference": True, "manifest":
                                       "{apiVersion: v1, kind: '{{ obj.kind }}', metadata: "
                                       "{name: '{{ obj.metadata.name }}'}}"}}], controller="c")
    with pytest.raises(RenderError, match="cannot be its own owner"):
        prog.render(key="ns/cm", obj=CM)


def test_apply_set_never_owns_its_parent():
    """An applySet child that is the parent itself gets no owner reference."""
    prog = compile_actions([{"applySet": {"manifests": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}]}}],
        controller="c")
    step, = prog.render(key="ns/cm", obj=CM).steps
    assert "ownerReferences" not in step.applies[0].body["metadata"]


def test_a_cross_namespace_owner_is_still_refused():
    """A namespaced owner of an object in another namespace stays an error."""
    prog = compile_actions([{"create": {"manifest": "{apiVersion: v1, kind: ConfigMap, "
                                                    "metadata: {name: x, namespace: other}}"}}],
                           controller="c")
    with pytest.raises(RenderError, match="create: an owner in namespace 'ns' cannot own"):
        prog.render(key="ns/cm", obj=CM)


@pytest.mark.parametrize("manifest, expected", [
    pytest.param(LABEL_ITSELF, True, id="template"),
    pytest.param({"apiVersion": "v1", "kind": "Namespace",
                  "metadata": {"name": "{{obj.metadata.name}}"}}, True, id="mapping"),
    pytest.param("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {{ obj.metadata.name }}\n",
                 True, id="unquoted"),
    pytest.param(LABEL_ITSELF.replace("obj.metadata.name", "obj.metadata.name ~ '-x'"), False,
                 id="other-name"),
    pytest.param(LABEL_ITSELF.replace("Namespace", "ConfigMap"), False, id="other-kind"),
])
def test_names_reconciled_object_reads_the_manifest_as_written(manifest, expected):
    """The compile-time check recognises the reconciled object only when the text says so."""
    assert names_reconciled_object(manifest, "v1", "Namespace") is expected


def test_validate_refuses_an_explicit_self_owner():
    """plan (and so validate) refuses ownerReference: true on the reconciled object itself, at
    the action's line."""
    text = ("apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"
            "informers:\n  nss: {apiVersion: v1, kind: Namespace}\n"
            "controllers:\n  - name: c\n    for: nss\n    reconcile:\n      actions:\n"
            + textwrap.indent("- apply:\n    ownerReference: true\n    manifest: |\n"
                              + textwrap.indent(LABEL_ITSELF, "      "), " " * 8))
    with pytest.raises(ConfigError, match="f.yaml:10.*its own owner"):
        plan(load_text(text, file="f.yaml"))


def test_a_namespaced_owner_of_a_built_in_cluster_scoped_kind_fails_the_render():
    """A ConfigMap owning a Namespace (the namespace rule gave the manifest the owner's
    namespace, so only the kind tells) is refused, naming the kind."""
    prog = compile_actions([{"apply": {"manifest": "{apiVersion: v1, kind: Namespace, "
                                                   "metadata: {name: '{{ obj.data.ns }}'}}"}}],
                           controller="c")
    with pytest.raises(RenderError, match="cannot own the cluster-scoped Namespace 'x'"):
        prog.render(key="ns/cm", obj={**CM, "data": {"ns": "x"}})


def test_validate_refuses_a_namespaced_primary_owning_a_cluster_scoped_kind():
    """A ConfigMap controller applying a ClusterRole with the default ownerReference is a
    ConfigError at plan (validate) time; ownerReference: false is accepted."""
    head = ("apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"
            "informers:\n  cms: {apiVersion: v1, kind: ConfigMap}\n"
            "controllers:\n  - name: c\n    for: cms\n    reconcile:\n      actions:\n")
    action = ("        - apply:%s\n            manifest: '{apiVersion: rbac.authorization.k8s.io/v1,"
              " kind: ClusterRole, metadata: {name: r}}'\n")
    with pytest.raises(ConfigError, match="f.yaml:10.*cannot own the cluster-scoped ClusterRole"):
        plan(load_text(head + action % "", file="f.yaml"))
    plan(load_text(head + action % "\n            ownerReference: false", file="f.yaml"))

