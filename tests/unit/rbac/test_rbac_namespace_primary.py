"""kinrun.rbac for a controller of Namespaces writing into the Namespace it reconciles
(``namespace: "{{ key }}"`` or ``obj.metadata.name``): a cluster-wide grant, as the
secret-to-namespaces example needs; any other templated namespace is still refused."""

from __future__ import annotations

import pytest

from kinrun.config import load_text
from kinrun.errors import ConfigError
from kinrun.plan import plan
from kinrun.rbac import rbac_needs

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  namespaces: {apiVersion: v1, kind: %s}
controllers:
  - name: c
    for: namespaces
    reconcile:
      actions:
        - apply:
            manifest: |
              apiVersion: v1
              kind: Secret
              metadata: {name: s, namespace: "%s"}
"""


def perms(kind: str, namespace: str) -> set[str]:
    needs = rbac_needs(plan(load_text(CONFIG % (kind, namespace), file="c.yaml")))
    return {str(p) for p in needs.permissions}


@pytest.mark.parametrize("namespace", ["{{ key }}", "{{ obj.metadata.name }}"])
def test_writing_into_the_reconciled_namespace_is_granted_cluster_wide(namespace):
    assert {"create core/secrets cluster-wide", "patch core/secrets cluster-wide"} <= \
        perms("Namespace", namespace)


@pytest.mark.parametrize("kind, namespace", [
    ("Namespace", "{{ key }}-copies"),
    ("Node", "{{ key }}"),
])
def test_other_templated_namespaces_are_still_refused(kind, namespace):
    with pytest.raises(ConfigError, match="is templated"):
        perms(kind, namespace)


LOOKUP_ONLY = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap, namespaces: [a]}
  nodes: {apiVersion: v1, kind: Node}
  source: {apiVersion: v1, kind: Secret, namespaces: [b]}
controllers:
  - name: c
    for: cms
    watches:
      - informer: source
        mapTo: {template: "{{ list('nodes') | map(attribute='metadata.name') | list }}"}
    reconcile:
      actions:
        - log: "{{ get('nodes', 'n1') }}"
"""


def test_informers_read_only_by_lookups_are_listed_and_watched():
    """Lookups read caches, never the server: what they need is the informer's list/watch."""
    got = {str(p) for p in rbac_needs(plan(load_text(LOOKUP_ONLY, file="c.yaml"))).permissions}
    assert got == {"list core/nodes cluster-wide", "watch core/nodes cluster-wide",
                   "list core/configmaps in a", "watch core/configmaps in a",
                   "list core/secrets in b", "watch core/secrets in b"}
