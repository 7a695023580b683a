"""An answer no retry can change, as the embedded server gives it on the wire, ends the
reconcile permanently (kinrun.errors.never_succeeds)."""

from __future__ import annotations

import pytest

from kinrun.errors import ServerError
from kinrun.kube import Client
from kinrun.reconcile import Result
from kinrun.testing.apiserver import EmbeddedAPIServer


def test_an_apply_its_schema_refuses_is_permanent(embedded_server: EmbeddedAPIServer) -> None:
    """The embedded server's own answer to ``dat:`` (kube-apiserver 1.20's, by the differential
    test) is a ServerError that ends the reconcile permanently instead of retrying forever."""
    client = Client.from_config(kubeconfig=embedded_server.kubeconfig_path, qps=0)
    with pytest.raises(ServerError) as caught:
        client.apply({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "c", "namespace": "default"}, "dat": {"a": "b"}})
    assert Result.failed(caught.value).outcome == "permanent"
    assert ".dat: field not declared in schema" in str(caught.value)
