"""A docker config Secret's value is read as Go's encoding/json reads it (kube-apiserver
1.20's ``ValidateSecret``): the edge cases Python's json reads differently, on the wire."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from apiserver_http import call

from kinrun.testing.apiserver.kind_validation import go_json_error

SECRETS = "/api/v1/namespaces/default/secrets"
GO_MAP = "map[string]interface {}"


@pytest.mark.parametrize("raw,why", [
    (b"[" * 200_000, "exceeded max depth"),
    (b'{"auths":{"r":{"auth":"\xff"}}}', None),          # Go takes invalid UTF-8 in strings
    (b'{"a": NaN}', "invalid character 'N' looking for beginning of value"),
    (b'{"a": -Infinity}', "invalid character 'I' in numeric literal"),
    (b"\xef\xbb\xbf{}", "invalid character '\u00ef' looking for beginning of value"),  # a BOM
    (b'{"a":' * 3_000 + b"1" + b"}" * 3_000, None),    # deeper than Python's parser, not Go's
    (b"[" * 3_000 + b"]" * 3_000, f"json: cannot unmarshal array into Go value of type {GO_MAP}"),
])
def test_go_json_error_reads_as_encoding_json(raw: bytes, why: str | None) -> None:
    """Each was a 500 (RecursionError), a wrong refusal or a wrong acceptance."""
    assert go_json_error(raw, GO_MAP) == why


def test_a_deeply_nested_docker_config_is_refused_not_a_crash(embedded_api_client: Any) -> None:
    """200,000 nested arrays: 422 naming the key, as kube-apiserver; it was a 500."""
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "deep"},
            "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": base64.b64encode(b"[" * 200_000).decode()}}
    refused = call(embedded_api_client, "POST", SECRETS, body=body)
    assert refused.status == 422
    assert "exceeded max depth" in refused.body["message"]
