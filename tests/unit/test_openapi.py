"""kinrun.openapi: the shipped 1.20 schemas and the documented lookups later issues rely on."""

from __future__ import annotations

import pytest

from kinrun.openapi import (BUILTIN_DEFAULTS, KUBERNETES_VERSION, apply_defaults,
                            builtin_schemas, crd_schema, decode_errors, prune,
                            required_errors)
from kinrun.openapi.typed import typed_errors


def test_schema_for_gvk_and_field_paths():
    """for_gvk finds a kind's schema; at/field_exists walk properties, list items and maps."""
    deploy = builtin_schemas().for_gvk("apps", "v1", "Deployment")
    assert deploy is not None and deploy.name == "io.k8s.api.apps.v1.Deployment"
    assert deploy.field_exists("spec.template.spec.containers[].image")
    assert deploy.field_exists("spec.template.spec.containers[0].image")
    assert deploy.field_exists("metadata.labels.app")           # any key of a map
    assert not deploy.field_exists("spec.template.spec.containers[].imagee")
    assert deploy.at("spec.replicas").type == "integer"
    assert builtin_schemas().for_gvk("apps", "v1", "Nope") is None
    assert KUBERNETES_VERSION == "1.20.2"


def test_list_map_keys_and_their_defaults():
    """Service ports are a list-map keyed by port and protocol; protocol defaults to TCP."""
    ports = builtin_schemas().for_gvk("", "v1", "Service").at("spec.ports")
    assert ports.list_type == "map" and ports.list_map_keys == ("port", "protocol")
    assert BUILTIN_DEFAULTS[ports.items.name] == {"protocol": "TCP"}


def test_builtin_checks():
    """Wrong JSON types are decode errors; required fields are named with Go's indexed paths;
    entries lacking a list-map key are found; defaults and pruning change the object."""
    schemas = builtin_schemas()
    pod = schemas.for_gvk("", "v1", "Pod")
    assert decode_errors(pod, {"spec": {"containers": "x"}}) == [
        "spec.containers: expected array, got string"]
    assert decode_errors(pod, {"spec": {"containers": [{"name": "c", "resources": {
        "limits": {"cpu": 1}}, "ports": [{"containerPort": 80}]}]}}) == []   # Quantity: number
    assert [p.field for p in required_errors(pod, {"spec": {"containers": [{}]}})] == [
        "spec.containers[0].name"]
    svc = {"spec": {"ports": [{"port": 80}], "bogus": 1}}
    service = schemas.for_gvk("", "v1", "Service")
    assert typed_errors(service, svc) == [
        '.spec.ports: element 0: associative list with keys has an element that omits key '
        'field "protocol" (and doesn\'t have default value)']
    prune(service, svc)
    apply_defaults(service, svc, BUILTIN_DEFAULTS)
    assert svc == {"spec": {"ports": [{"port": 80, "protocol": "TCP"}], "type": "ClusterIP",
                            "sessionAffinity": "None"}}


def test_crd_schema_of_a_version():
    """crd_schema reads a CRD version's openAPIV3Schema (None without one)."""
    version = {"name": "v1", "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}
    schema = crd_schema(version)
    assert schema.at("spec.size").type == "integer" and not schema.field_exists("spec.nope")
    assert crd_schema({"name": "v1"}) is None


@pytest.mark.parametrize(("written", "canonical"), [
    ("0.5", "500m"), ("1024Mi", "1Gi"), ("1536Mi", "1536Mi"), ("2000m", "2"),
    ("1500m", "1500m"), ("2000", "2k"), ("1200", "1200"), ("0.5Gi", "512Mi"), ("0.5Ki", "512"),
    ("0", "0"), ("1000000", "1M"), ("0.0000000001", "1n"), (2, "2"), ("1e3", "1e3"),
    ("lots", "lots"),
])
def test_quantities_take_their_canonical_form(written: object, canonical: object) -> None:
    """As apimachinery's Quantity.CanonicalizeBytes (tests/envtest/test_differential_kinds.py
    compares these with kube-apiserver): decimal rounded up to nano units, largest power of
    1000 (or 1024 for binary suffixes) leaving an integer; exponents and junk as written."""
    from kinrun.openapi._quantity import canonical_quantity
    assert canonical_quantity(written) == canonical
