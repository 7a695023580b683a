"""validate flags an apply manifest whose list entries a server-side apply cannot merge (a
Service port without protocol, a container without name, two env entries of one name:
kube-apiserver 1.20 answers such an apply 500, every time), from the kind's schema; templated
values count as present."""

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
    assert text.startswith("c.yaml:11:")
    assert ('Service: .spec.ports: element 0: associative list with keys has an element that '
            'omits key field "protocol"') in text
    assert "can never succeed" in text and "give each entry its keys" in text


@pytest.mark.parametrize("protocol", ["protocol: TCP", 'protocol: "{{ obj.data.p }}"'])
def test_a_written_or_templated_key_passes(protocol: str) -> None:
    """A literal or a templated protocol is present: the config compiles."""
    plan(load_text(config(SERVICE.replace("PROTOCOL", protocol)), file="c.yaml"))


def test_apply_sets_and_loops_are_checked_too() -> None:
    """An applySet's manifests, a {% for %} body counted once."""
    looped = ("{% for n in [1, 2] %}\n---\n" + SERVICE.replace("      PROTOCOL\n", "")
              + "{% endfor %}\n")
    with pytest.raises(ConfigError, match='spec.ports: element 0: .* key field "protocol"'):
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


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
CONTAINERS
"""


def deployment(containers: str) -> str:
    return DEPLOYMENT.replace("CONTAINERS\n", textwrap.indent(containers, " " * 8))


def test_a_container_without_name_is_refused() -> None:
    """Containers are merged by ``name`` (their patch merge key): one without it cannot be
    typed; the whole config is refused at the manifest."""
    manifest = deployment("- image: nginx\n")
    assert apply_key_problems(manifest) == [
        'Deployment web: .spec.template.spec.containers: element 0: associative list with '
        'keys has an element that omits key field "name" (and doesn\'t have default value)']
    with pytest.raises(ConfigError, match='containers: element 0: .*key field "name"'):
        plan(load_text(config(manifest), file="c.yaml"))


def test_two_entries_of_one_key_are_refused() -> None:
    """Two env entries of one name (and a finalizer written twice in any kind's metadata)."""
    manifest = deployment("- name: c\n  image: nginx\n  env:\n    - {name: A, value: '1'}\n"
                          "    - {name: A, value: '2'}\n")
    assert apply_key_problems(manifest) == [
        'Deployment web: .spec.template.spec.containers[name="c"].env: duplicate entries for '
        'key [name="A"]']
    custom = ("apiVersion: example.com/v1\nkind: Foo\nmetadata:\n  name: f\n"
              "  finalizers: [a/b, a/b]\n")
    assert apply_key_problems(custom) == [
        'Foo f: .metadata.finalizers: duplicate entries for key [="a/b"]']


@pytest.mark.parametrize("containers", [
    # both branches of an if hold the same container: one of them is rendered
    "{% if obj.data.x %}\n- {name: c, image: a}\n{% else %}\n- {name: c, image: b}\n"
    "{% endif %}\n",
    # templated names may differ when rendered
    "- {name: '{{ obj.data.a }}', image: a}\n- {name: '{{ obj.data.b }}', image: b}\n",
    # an entry the template writes whole
    "- {{ obj.data.container }}\n- {name: c, image: b}\n",
])
def test_what_a_template_decides_is_not_refused(containers: str) -> None:
    assert apply_key_problems(deployment(containers)) == []
    plan(load_text(config(deployment(containers)), file="c.yaml"))
