"""Validation and defaulting as kube-apiserver 1.20 does them (see docs/embedded-server.md)."""

from __future__ import annotations

from apiserver_http import call

CM = "/api/v1/namespaces/default/configmaps"


def test_version_is_the_emulated_release(embedded_api_client):
    """/version says 1.20, the release the embedded server emulates."""
    info = call(embedded_api_client, "GET", "/version").body
    assert (info["major"], info["minor"]) == ("1", "20")
    assert info["gitVersion"].startswith("v1.20.")


def test_metadata_that_is_not_an_object_is_a_bad_request(embedded_api_client):
    """metadata: "x" is refused with 400 BadRequest (kube-apiserver's decoder), not 500."""
    reply = call(embedded_api_client, "POST", CM,
                 body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": "x"})
    assert reply.status == 400 and reply.body["reason"] == "BadRequest"
    assert 'ConfigMap in version "v1" cannot be handled as a ConfigMap' in reply.body["message"]
