"""kinrun test installs the config's ``crds:`` in each case's server before its ``given``, as
``kinrun --embedded`` does (one code path, ``kinrun.testing.seeds``): custom resources are
defaulted by the CRD's schema and written through its status subresource."""

from __future__ import annotations

from pathlib import Path

from kinrun.testing.runner import prepare, run_case

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
crds: [crds/]
informers: {foos: {apiVersion: example.com/v1, kind: Foo}}
controllers:
  - name: c
    for: foos
    reconcile:
      actions:
        - log: "replicas {{ obj.spec.replicas }}"
        - status: {fields: {seen: "yes"}, observedGeneration: false}
"""
CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: foos.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Foo, plural: foos, singular: foo, listKind: FooList}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, properties: {replicas: {type: integer, default: 1}}}
            status: {type: object, properties: {seen: {type: string}}}
"""
CASE = """\
  - name: {name}
    given:{crd}
      - {{apiVersion: example.com/v1, kind: Foo, metadata: {{name: a, namespace: default}},
         spec: {{}}}}
    expect:
      logs: ["replicas 1"]
      requests:
        - {{verb: patch, kind: Foo, name: a, subresource: status, body: {{status: {{seen: "yes"}}}}}}
      results: {{default/a: done}}
"""


def test_a_case_serves_the_config_crds(tmp_path: Path) -> None:
    """A Foo given without its CRD is served (crds:), defaulted (spec.replicas 1) and its
    status written to /status; a case that also gives the CRD file loads it once."""
    (tmp_path / "crds").mkdir()
    (tmp_path / "crds" / "foo.yaml").write_text(CRD)
    (tmp_path / "c.yaml").write_text(CONFIG)
    path = tmp_path / "t.test.yaml"
    path.write_text("apiVersion: kinrun.dev/v1alpha1\nkind: ControllerTest\nconfig: c.yaml\n"
                    "cases:\n" + CASE.format(name="from crds", crd="")
                    + CASE.format(name="also given", crd="\n      - file: crds/foo.yaml"))
    prepared = prepare(path)
    outcomes = [run_case(prepared, case, timeout=10) for case in prepared.tests.cases]
    assert [(o.name, o.failures) for o in outcomes] == [("from crds", ()), ("also given", ())]
