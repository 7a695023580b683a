"""kinrun.rbac: the permissions a compiled plan needs, computed without a cluster."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from kinrun.actions.kinds import BUILTIN_KINDS
from kinrun.actions.program import compile_actions
from kinrun.config import load, load_text
from kinrun.errors import ConfigError
from kinrun.kube.builtin_kinds import builtin_kind, builtin_resource, builtin_scope
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager
from kinrun.hooks import hookimpl
from kinrun.rbac import CLUSTER, Permission, Resource, rbac_needs, rbac_objects

ROOT = Path(__file__).resolve().parents[3]
HEAD = "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"


def needs_of(body: str, *, namespace: str | None = None, **kwargs):
    config = load_text(HEAD + textwrap.dedent(body), file="c.yaml")
    if namespace:
        config = config.with_namespace(namespace)
    return rbac_needs(plan(config), **kwargs)


def perms(needs) -> set[str]:
    return {str(p) for p in needs.permissions}


def with_actions(actions: str, informer: str = "{apiVersion: v1, kind: ConfigMap, namespaces: [a]}",
                 extra: str = "") -> str:
    return (f"informers:\n  cms: {informer}\ncontrollers:\n  - name: c\n    for: cms\n"
            f"    reconcile:\n      actions:\n{textwrap.indent(textwrap.dedent(actions), ' ' * 8)}"
            + extra)


def test_every_builtin_action_kind_declares_its_verbs() -> None:
    """Each built-in kind carries VERBS; the writing ones declare the documented verbs."""
    program = compile_actions([
        {"log": "x"}, {"apply": {"manifest": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: n}"}},
        {"patch": {"patch": {"a": 1}}}, {"delete": {}},
        {"event": {"reason": "R", "message": "m"}}, {"requeueAfter": "1s"},
        {"stop": "s"}, {"fail": {"message": "f"}}, {"status": {}},
        {"create": {"manifest": "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: n-}"}},
        {"applySet": {"manifests": "[]"}},
        {"children": {"resources": [{"name": "c", "manifest": "{apiVersion: v1, kind: ConfigMap, "
                                                              "metadata: {name: n}}"}]}}],
        controller="c")
    verbs = {a.impl.kind: a.impl.VERBS for a in program.actions}
    assert set(verbs) == set(BUILTIN_KINDS)
    assert verbs == {"log": (), "apply": ("patch", "create"), "patch": ("patch",),
                     "delete": ("delete",), "event": ("create", "patch"), "requeueAfter": (),
                     "stop": (), "fail": (), "status": ("patch",), "create": ("create",),
                     "applySet": ("patch", "create", "list", "delete"),
                     "children": ("patch", "create", "delete")}


def test_builtin_plurals_without_discovery() -> None:
    """Kinds map to their REST plural and back; CRDs are unknown."""
    assert builtin_resource("apps/v1", "Deployment") == "deployments"
    assert builtin_resource("networking.k8s.io/v1", "Ingress") == "ingresses"
    assert builtin_resource("v1", "Endpoints") == "endpoints"
    assert builtin_kind("v1", "configmaps") == "ConfigMap"
    assert builtin_resource("example.com/v1", "Widget") is None
    assert builtin_scope("v1", "Node") is False and builtin_scope("v1", "Pod") is True


def test_informer_in_listed_namespaces_gets_list_watch_there() -> None:
    """A namespaced informer with namespaces: list and watch in each (a Role each)."""
    needs = needs_of("informers:\n  pods: {apiVersion: v1, kind: Pod, namespaces: [a, b]}\n"
                     "controllers: [{name: c, for: pods, reconcile: {actions: [{log: x}]}}]\n")
    assert perms(needs) == {f"{v} core/pods in {ns}" for v in ("list", "watch")
                            for ns in ("a", "b")}


def test_all_namespaces_and_cluster_scoped_kinds_are_cluster_wide() -> None:
    """No namespaces, or a cluster-scoped kind even under --namespace: a ClusterRole."""
    body = ("informers:\n  pods: {apiVersion: v1, kind: Pod}\n  nodes: {apiVersion: v1, kind: Node}\n"
            "controllers: [{name: c, for: pods, reconcile: {actions: [{log: x}]}}]\n")
    assert perms(needs_of(body)) == {"list core/pods cluster-wide", "watch core/pods cluster-wide",
                                     "list core/nodes cluster-wide",
                                     "watch core/nodes cluster-wide"}
    assert perms(needs_of(body, namespace="ns")) == {
        "list core/pods in ns", "watch core/pods in ns", "list core/nodes cluster-wide",
        "watch core/nodes cluster-wide"}


def test_apply_in_the_reconciled_namespace_needs_patch_and_create_there() -> None:
    """apply = patch + create on the manifest's kind; {{ obj.metadata.namespace }} is the
    reconciled namespace; a selector-filtered primary also needs get."""
    needs = needs_of(with_actions('''\
        - apply:
            manifest: |
              apiVersion: apps/v1
              kind: Deployment
              metadata:
                name: "{{ obj.metadata.name }}"
                namespace: "{{ obj.metadata.namespace }}"
        ''', informer="{apiVersion: v1, kind: ConfigMap, namespaces: [a], labelSelector: x=y}"))
    assert perms(needs) == {"list core/configmaps in a", "watch core/configmaps in a",
                            "get core/configmaps in a", "patch apps/deployments in a",
                            "create apps/deployments in a"}


def test_patch_status_delete_and_event_verbs() -> None:
    """patch status -> R/status; delete of a literal target; events in the reconciled ns."""
    needs = needs_of(with_actions('''\
        - patch: {subresource: status, patch: 'status: {a: b}'}
        - delete: {target: {apiVersion: batch/v1, kind: Job, name: "{{ obj.metadata.name }}",
                            namespace: "{{ key.split('/')[0] }}"}}
        - event: {reason: R, message: m}
        '''))
    assert perms(needs) == {"list core/configmaps in a", "watch core/configmaps in a",
                            "patch core/configmaps/status in a", "delete batch/jobs in a",
                            "create core/events in a", "patch core/events in a"}


def test_literal_and_cluster_scoped_targets() -> None:
    """A literal namespace is granted there; a cluster-scoped kind cluster-wide; an Event
    about a cluster-scoped object goes to default."""
    needs = needs_of(with_actions('''\
        - apply: {manifest: "{apiVersion: v1, kind: Secret, metadata: {name: s, namespace: vault}}"}
        - apply: {manifest: "{apiVersion: v1, kind: Namespace, metadata: {name: '{{ obj.metadata.name }}'}}"}
        ''', informer="{apiVersion: v1, kind: Node}", extra=""))
    assert {"patch core/secrets in vault", "create core/secrets in vault",
            "patch core/namespaces cluster-wide"} <= perms(needs)
    events = needs_of(with_actions("- event: {reason: R, message: m}\n",
                                   informer="{apiVersion: v1, kind: Node}"))
    assert {"create core/events in default", "patch core/events in default"} <= perms(events)


def test_dry_run_adds_reads_and_drops_the_lease() -> None:
    """--dry-run: get on what apply/patch write; no Lease permissions."""
    body = with_actions("- patch: {patch: 'a: 1'}\n",
                        extra="leaderElection: {leaseName: l, namespace: le}\n")
    normal = needs_of(body)
    assert {"get coordination.k8s.io/leases l in le", "update coordination.k8s.io/leases l in le",
            "create coordination.k8s.io/leases in le"} <= perms(normal)
    assert "get core/configmaps in a" not in perms(normal)
    dry = needs_of(body, dry_run=True)
    assert "get core/configmaps in a" in perms(dry)
    assert not any("leases" in p for p in perms(dry))


@pytest.mark.parametrize("action, problem", [
    pytest.param("- apply: {manifest: \"apiVersion: v1\\nkind: '{{ obj.data.kind }}'\\nmetadata: {name: n}\"}\n",
                 "kind is templated", id="templated-kind"),
    pytest.param("- delete: {target: {apiVersion: example.com/v1, kind: Widget, name: w}}\n",
                 "not a built-in kind", id="crd"),
    pytest.param("- delete: {target: {apiVersion: v1, kind: Pod, name: w, namespace: \"{{ obj.data.ns }}\"}}\n",
                 "namespace", id="templated-namespace"),
])
def test_unknown_targets_fail_at_the_action_naming_extra_rules(action: str, problem: str) -> None:
    """A target that cannot be read statically: ConfigError at file:line, pointing to extraRules."""
    with pytest.raises(ConfigError) as err:
        needs_of(with_actions(action))
    text = str(err.value)
    assert text.startswith("c.yaml:10:11:") and "reconcile.actions[0]" in text
    assert problem in text and "rbac.extraRules" in text


def test_extra_rules_cover_an_unknown_target_and_are_granted() -> None:
    """An extra rule with the action's verbs (in the CRD's group) covers it: a note, its grant."""
    needs = needs_of(with_actions(
        "- delete: {target: {apiVersion: example.com/v1, kind: Widget, name: w}}\n",
        extra="rbac:\n  extraRules:\n    - {apiGroups: [example.com], resources: [widgets], "
              "verbs: [delete], namespaces: [a]}\n    - {apiGroups: [''], resources: [secrets], "
              "verbs: [get], resourceNames: [token]}\n"))
    assert {"delete example.com/widgets in a", "get core/secrets token cluster-wide"} <= perms(needs)
    assert any("trusting rbac.extraRules[0]" in n for n in needs.notes)


def test_discovery_resolves_a_crd() -> None:
    """With a resolve function (kinrun rbac --kubeconfig) a CRD's plural and scope are known."""
    needs = needs_of(with_actions("- delete: {target: {apiVersion: example.com/v1, kind: Widget, name: w}}\n"),
                     resolve=lambda av, kind: Resource("example.com", "widgets", True)
                     if kind == "Widget" else None)
    assert "delete example.com/widgets in a" in perms(needs)


def test_plugin_action_kinds_declare_rbac_rules() -> None:
    """A plugin kind's RBAC_RULES are granted in the reconciled namespaces; none: an error."""
    def ping(args, obj, ctx):
        return []
    ping.RBAC_RULES = [{"apiGroups": [""], "resources": ["services"], "verbs": ["get"]}]

    def silent(args, obj, ctx):
        return []

    class Plugin:
        @hookimpl
        def kinrun_action_kinds(self):
            return {"ping": ping, "silent": silent}
    pm = new_plugin_manager()
    pm.register(Plugin())
    config = load_text(HEAD + with_actions("- {plugin: ping}\n"), file="c.yaml")
    assert "get core/services in a" in perms(rbac_needs(plan(config, pm)))
    config = load_text(HEAD + with_actions("- {plugin: silent}\n"), file="c.yaml")
    with pytest.raises(ConfigError, match="declares no RBAC_RULES"):
        rbac_needs(plan(config, pm))


def test_rules_merge_verbs_and_objects_bind_the_service_account() -> None:
    """One rule per group and verb set; a Role+RoleBinding per namespace, ClusterRole for the rest."""
    needs = rbac_needs(plan(load(ROOT / "examples/configs/pods-by-node.yaml").with_namespace("ns")))
    objects = rbac_objects(needs, name="n", service_account="sa", service_account_namespace="ns")
    assert [(o["kind"], o["metadata"].get("namespace")) for o in objects] == [
        ("ClusterRole", None), ("ClusterRoleBinding", None), ("Role", "ns"), ("RoleBinding", "ns")]
    assert objects[0]["rules"] == [{"apiGroups": [""], "resources": ["nodes"],
                                    "verbs": ["list", "watch"]}]
    assert objects[3]["subjects"] == [{"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}]
    assert objects[3]["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                     "name": "n"}
    removed = needs.without(Permission(CLUSTER, "", "nodes", "watch"))
    assert removed.rules(CLUSTER) == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]


def example_crds(api_version: str, kind: str) -> Resource | None:
    """A resolver for the CRDs under examples/crds (what discovery would say once installed)."""
    for crd_file in (ROOT / "examples/crds").glob("*.yaml"):
        spec = yaml.safe_load(crd_file.read_text())["spec"]
        names, group = spec["names"], spec["group"]
        if api_version.split("/")[0] == group and kind in (names["kind"], names["plural"]):
            return Resource(group, names["plural"], spec["scope"] == "Namespaced")
    return None


def test_no_rule_uses_a_wildcard() -> None:
    """No generated rule for any example names '*'."""
    for path in sorted((ROOT / "examples/configs").glob("*.yaml")):
        needs = rbac_needs(plan(load(path)), resolve=example_crds)
        for scope in needs.scopes():
            for rule in needs.rules(scope):
                assert "*" not in str(rule), (path, rule)


def test_status_and_finalizer_needs_come_from_the_plan() -> None:
    """status: patch on R/status of the primary; finalizer: patch on the primary."""
    sample = rbac_needs(plan(load(ROOT / "examples/configs/sample-controller.yaml")),
                        resolve=example_crds)
    assert Permission(CLUSTER, "samplecontroller.k8s.io", "foos/status", "patch") in \
        sample.permissions
    assert not any(p.resource == "foos" and p.verb == "patch" for p in sample.permissions)
    backup = rbac_needs(plan(load(ROOT / "examples/configs/finalizer.yaml").with_namespace("ns")))
    assert Permission("ns", "", "configmaps", "patch") in backup.permissions
    assert any("finalizer example.com/backup" in why
               for why in backup.permissions[Permission("ns", "", "configmaps", "patch")])


def test_plugin_rules_on_cluster_scoped_resources_go_to_the_cluster_role() -> None:
    """A plugin kind's rule on a cluster-scoped resource (a Role cannot grant it) is granted
    cluster-wide; a rule mixing scopes is split; an unknown resource stays in the reconciled
    namespaces (as before)."""
    def label_node(args, obj, ctx):
        return []
    label_node.RBAC_RULES = [
        {"apiGroups": [""], "resources": ["nodes", "nodes/status", "services"],
         "verbs": ["patch"]},
        {"apiGroups": ["storage.k8s.io", "example.com"],
         "resources": ["storageclasses", "widgets"], "verbs": ["get"]}]

    class Plugin:
        @hookimpl
        def kinrun_action_kinds(self):
            return {"labelNode": label_node}
    pm = new_plugin_manager()
    pm.register(Plugin())
    config = load_text(HEAD + with_actions("- {plugin: labelNode}\n"), file="c.yaml")
    got = perms(rbac_needs(plan(config, pm)))
    assert {"patch core/nodes cluster-wide", "patch core/nodes/status cluster-wide",
            "patch core/services in a", "get storage.k8s.io/storageclasses cluster-wide",
            "get example.com/widgets in a"} <= got
    assert not {"patch core/nodes in a", "get storage.k8s.io/storageclasses in a"} & got
    # the namespaced resources of the same group that no built-in kind serves stay put
    assert "get storage.k8s.io/widgets in a" in got


def test_extra_rules_with_namespaces_grant_cluster_scoped_resources_cluster_wide() -> None:
    """An extra rule limited to namespaces grants its cluster-scoped resources cluster-wide (a
    Role cannot grant them) and the others in its namespaces."""
    needs = needs_of(with_actions(
        "- log: hi\n", extra="rbac:\n  extraRules:\n    - {apiGroups: [''], resources: "
        "[persistentvolumes, secrets, widgets, namespaces], verbs: [get], namespaces: [a, b]}\n"))
    got = perms(needs)
    assert {"get core/persistentvolumes cluster-wide", "get core/secrets in a",
            "get core/secrets in b", "get core/widgets in a", "get core/widgets in b"} <= got
    assert not any(p.startswith("get core/persistentvolumes in") for p in got)
    # a Role in a grants the Namespace a itself: kept there, never widened to every Namespace
    assert {"get core/namespaces in a", "get core/namespaces in b"} <= got
    assert "get core/namespaces cluster-wide" not in got
