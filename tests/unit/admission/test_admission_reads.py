"""Admission rules' reads at validate (issue "templates that know their objects"): object and
oldObject are checked against the kinds the webhook's rules name (built-in, or from crds:),
lookups against their informers' kinds; a read is refused only when no kind of the webhook has
the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinrun.config import load_text
from kinrun.errors import ConfigError
from kinrun.plan import plan

ROOT = Path(__file__).resolve().parents[3]
CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
crds: [%(crd)s]
informers:
  cms: {apiVersion: v1, kind: ConfigMap}
controllers:
  - {name: c, for: cms, reconcile: {actions: [{log: x}]}}
admission:
  webhooks:
    - name: check.example.com
      type: validating
      rules:
        - {operations: [CREATE], apiGroups: [%(groups)s], apiVersions: [%(versions)s], resources: [%(resources)s]}
      validate:
        - deny: "{{ 'no' if %(read)s else '' }}"
"""


def _plan(read: str, groups: str = "apps", versions: str = "v1",
          resources: str = "deployments") -> None:
    plan(load_text(CONFIG % {"crd": ROOT / "examples" / "crds" / "foo.yaml", "read": read,
                             "groups": groups, "versions": versions, "resources": resources},
                   file="a.yaml"))


def test_a_typo_in_object_is_refused_with_the_kind() -> None:
    with pytest.raises(ConfigError, match=r"object.spec.replicaz: spec has no field 'replicaz'; "
                                          r"did you mean 'replicas'\? .*checked against Deployment"):
        _plan("object.spec.replicaz")


def test_old_object_and_a_custom_kind_from_crds() -> None:
    _plan("oldObject.spec.deploymentName", "samplecontroller.k8s.io", "v1alpha1", "foos")
    with pytest.raises(ConfigError, match="against Foo"):
        _plan("oldObject.spec.deploymentNme", "samplecontroller.k8s.io", "v1alpha1", "foos")


def test_a_field_of_any_kind_of_the_webhook_passes() -> None:
    """Deployments and ConfigMaps: data is a ConfigMap field, so it passes; a field of
    neither is refused."""
    _plan("object.data", '"", apps', "v1", "deployments, configmaps")
    with pytest.raises(ConfigError, match="object.nope"):
        _plan("object.nope", '"", apps', "v1", "deployments, configmaps")


def test_lookups_are_checked_and_unnamed_kinds_are_not() -> None:
    with pytest.raises(ConfigError, match=r"get\('cms'.*dta|dta"):
        _plan("get('cms', 'default/x').dta")
    _plan("object.anything", '"*"', '"*"', '"*"')
