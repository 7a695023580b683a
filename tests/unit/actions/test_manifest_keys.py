"""validate flags an apply manifest whose list entries lack their list-map keys (a Service
port without protocol: kube-apiserver 1.20 answers such a server-side apply 500, every time),
from the kind's schema; templated values count as present."""

from __future__ import annotations

import textwrap

import pytest

from kinrun.actions.manifest_keys import apply_key_problems
from kinrun.config import load_text
from kinrun.errors import ConfigError
from kinrun.plan import plan

SERVICE = """\
apiVersion: v1
kind: Service
metadata: {name: "{{ obj.metadata.name }}"}
spec:
  ports:
    - port: 80
      PROTOCOL
"""


def config(manifest: str, kind: str = "apply", key: str = "manifest") -> str:
    body = textwrap.indent(manifest, " " * 14)
    return ("apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"
            "informers:\n  cms: {apiVersion: v1, kind: ConfigMap}\n"
            "controllers:\n  - name: c\n    for: cms\n    reconcile:\n      actions:\n"
            f"        - {kind}:\n            {key}: |\n{body}")


def test_a_service_port_without_protocol_is_refused_at_its_manifest() -> None:
    """The error names the file, the manifest's line, the field and what to do."""
    with pytest.raises(ConfigError) as err:
        plan(load_text(config(SERVICE.replace("      PROTOCOL\n", "")), file="c.yaml"))
    text = str(err.value)
    assert text.startswith("c.yaml:11:") and "spec.ports[0].protocol" in text
    assert "Service:" in text and "write the key out" in text


@pytest.mark.parametrize("protocol", ["protocol: TCP", 'protocol: "{{ obj.data.p }}"'])
def test_a_written_or_templated_key_passes(protocol: str) -> None:
    """A literal or a templated protocol is present: the config compiles."""
    plan(load_text(config(SERVICE.replace("PROTOCOL", protocol)), file="c.yaml"))


def test_apply_sets_and_loops_are_checked_too() -> None:
    """An applySet's manifests, a {% for %} body counted once."""
    looped = ("{% for n in [1, 2] %}\n---\n" + SERVICE.replace("      PROTOCOL\n", "")
              + "{% endfor %}\n")
    with pytest.raises(ConfigError, match="spec.ports\\[0\\].protocol"):
        plan(load_text(config(looped, "applySet", "manifests"), file="c.yaml"))


def test_what_cannot_be_read_statically_is_not_checked() -> None:
    """A templated kind, or a kind without a schema, gives no problem."""
    templated = SERVICE.replace("kind: Service", "kind: '{{ k }}'").replace("      PROTOCOL\n", "")
    assert apply_key_problems(templated) == []
    assert apply_key_problems("apiVersion: example.com/v1\nkind: Foo\nspec: {ports: [{}]}\n") == []


def test_a_container_port_without_protocol_passes() -> None:
    """A container port's ``protocol`` has a default in kube-apiserver 1.20's own schema (the
    ``+default`` marker its /openapi/v2 leaves out), so a server-side apply keys the port
    ``{containerPort, protocol: TCP}`` and succeeds (differential test
    ``test_apply_of_a_port_without_protocol``): validate does not refuse it."""
    deployment = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n"
                  "  selector: {matchLabels: {app: web}}\n  template:\n"
                  "    metadata: {labels: {app: web}}\n    spec:\n      containers:\n"
                  "        - {name: c, image: nginx, ports: [{containerPort: 80}]}\n")
    assert apply_key_problems(deployment) == []
    plan(load_text(config(deployment), file="c.yaml"))
