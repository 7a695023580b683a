"""`validate` knows the kinds of the built-in API groups offline: a kind in the wrong group
is refused at the informer's file:line, as the API server would refuse it at start."""

from __future__ import annotations

import textwrap

import pytest

from kinrun.config import load_text
from kinrun.errors import ConfigError
from kinrun.kube.builtin_kinds import unserved_builtin
from kinrun.plan import plan

HEAD = "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"


def compile_informer(informer: str) -> None:
    plan(load_text(HEAD + textwrap.dedent(f"""\
        informers:
          x: {informer}
        controllers: [{{name: c, for: x, reconcile: {{actions: [{{log: hi}}]}}}}]
        """), file="c.yaml"))


@pytest.mark.parametrize("informer,message", [
    ("{apiVersion: apps/v1, kind: Pod}", "kind 'Pod' is not served in API group apps; it is "
                                         "served as apiVersion v1"),
    ("{apiVersion: v1, kind: Deployment}", "served as apiVersion apps/<version>"),
    ("{apiVersion: apps/v1, kind: Deploymnt}", "did you mean 'Deployment'?"),
    ("{apiVersion: v1, resource: configmap}", "did you mean 'configmaps'?"),
], ids=["pod-in-apps", "deployment-in-core", "typo", "resource-typo"])
def test_a_kind_outside_its_builtin_group_is_refused_at_its_line(informer: str,
                                                                 message: str) -> None:
    """The error names file:line:column, the informer and where the kind is served."""
    with pytest.raises(ConfigError) as err:
        compile_informer(informer)
    assert str(err.value).startswith("c.yaml:4:")
    assert message in str(err.value)


@pytest.mark.parametrize("informer", [
    "{apiVersion: apps/v1, kind: Deployment}", "{apiVersion: v1, resource: configmaps}",
    "{apiVersion: samplecontroller.k8s.io/v1alpha1, kind: Foo}",  # a CRD: discovery tells
    "{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway}",
    "{apiVersion: admissionregistration.k8s.io/v1, kind: ValidatingAdmissionPolicy}",  # 1.30
    "{apiVersion: networking.k8s.io/v1, kind: ServiceCIDR}",  # 1.33
])
def test_served_builtin_kinds_and_custom_groups_pass(informer: str) -> None:
    """Built-in kinds in their group, any kind of a group that is not built-in, and a kind no
    typo away from one of its group's (added after 1.20, the table's release: discovery
    tells at run time) compile."""
    compile_informer(informer)


def test_unserved_builtin_answers_none_for_a_malformed_api_version() -> None:
    """A malformed apiVersion is the schema's to refuse, not this table's."""
    assert unserved_builtin("a/b/c", "Pod", None) is None
