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
