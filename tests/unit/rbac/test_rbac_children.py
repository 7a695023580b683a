"""kinrun.rbac for the applySet and create actions: children, prune and parent verbs."""

from __future__ import annotations

import textwrap

import pytest

from kinrun.config import load_text
from kinrun.errors import ConfigError
from kinrun.plan import plan
from kinrun.rbac import rbac_needs

HEAD = "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"


def perms(actions: str, **kwargs) -> set[str]:
    body = ("informers:\n  cms: {apiVersion: v1, kind: ConfigMap, namespaces: [a]}\n"
            "controllers:\n  - name: c\n    for: cms\n    reconcile:\n      actions:\n"
            + textwrap.indent(textwrap.dedent(actions), " " * 8))
    needs = rbac_needs(plan(load_text(HEAD + body, file="c.yaml")), **kwargs)
    return {str(p) for p in needs.permissions} - {"list core/configmaps in a",
                                                 "watch core/configmaps in a"}


SET = """\
- applySet:
    forEach: "obj.data.names.split(',')"
    manifests: |
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: "{{ item }}"}
      ---
      {% if true %}
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "{{ item }}", namespace: web}
      {% endif %}
"""


def test_apply_set_needs_apply_and_prune_verbs_on_each_child_and_patch_on_the_parent() -> None:
    """Each child's resource gets patch+create (apply) and list+delete (prune) in the child's
    namespace; the primary gets patch (its ApplySet labels and annotations)."""
    got = perms(SET)  # list core/configmaps in a: also the informer's, left out by perms()
    assert got == ({f"{v} core/configmaps in a" for v in ("patch", "create", "delete")}
                   | {f"{v} apps/deployments in web"
                      for v in ("patch", "create", "list", "delete")})


def test_apply_set_parent_patch_is_granted_on_the_primary() -> None:
    """With children of another resource only, the primary still gets patch."""
    got = perms("- applySet:\n    manifests:\n      - {apiVersion: v1, kind: Secret,"
                " metadata: {name: s}}\n")
    assert "patch core/configmaps in a" in got
    assert {f"{v} core/secrets in a" for v in ("patch", "create", "list", "delete")} <= got
    assert "delete core/configmaps in a" not in got


def test_a_separate_apply_set_parent_gets_get_and_apply_verbs_not_the_primary() -> None:
    """applySet.parent: get, patch and create on the parent's resource; no patch on the
    primary (the reconciled object is never written)."""
    got = perms("- applySet:\n    prune: false\n    parent: {apiVersion: v1, kind: Secret,"
                " name: set}\n    manifests:\n      - {apiVersion: v1, kind: Service,"
                " metadata: {name: s}}\n")
    assert got == {"get core/secrets in a", "patch core/secrets in a",
                   "create core/secrets in a", "patch core/services in a",
                   "create core/services in a"}


def test_apply_set_without_prune_needs_no_list_or_delete() -> None:
    got = perms("- applySet:\n    prune: false\n    manifests:\n      - {apiVersion: v1,"
                " kind: Secret, metadata: {name: s}}\n")
    assert got == {"patch core/configmaps in a", "patch core/secrets in a",
                   "create core/secrets in a"}


def test_apply_set_dry_run_adds_get_on_children() -> None:
    got = perms("- applySet:\n    manifests:\n      - {apiVersion: v1, kind: Secret,"
                " metadata: {name: s}}\n", dry_run=True)
    assert "get core/secrets in a" in got


def test_apply_set_templated_kind_is_refused_without_extra_rules() -> None:
    with pytest.raises(ConfigError, match="templated"):
        perms("- applySet:\n    manifests: |\n      apiVersion: v1\n"
              "      kind: \"{{ obj.data.kind }}\"\n      metadata: {name: s}\n")


def test_create_needs_create_on_its_resource() -> None:
    got = perms("- create:\n    manifest: |\n      apiVersion: batch/v1\n      kind: Job\n"
                "      metadata: {generateName: run-}\n")
    assert got == {"create batch/jobs in a"}
