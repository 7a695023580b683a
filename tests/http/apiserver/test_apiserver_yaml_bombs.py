"""YAML request bodies that expand without bound, nest too deep or loop answer 400, as
kube-apiserver does, and the embedded server keeps serving (kinrun.safe_yaml)."""

from __future__ import annotations

import pytest
from apiserver_http import call

CM = "/api/v1/namespaces/default/configmaps"
HEAD = "{apiVersion: v1, kind: ConfigMap, metadata: {name: b}, "


def laughs(levels: int, width: int = 9) -> str:
    return ("[&a0 [lol], " + ", ".join(f"&a{i} [" + ",".join([f"*a{i - 1}"] * width) + "]"
                                       for i in range(1, levels + 1)) + "]")


BODIES = [
    pytest.param(HEAD + "x: " + laughs(6) + "}", id="423-byte-alias-bomb"),
    pytest.param(HEAD + "x: " + laughs(9) + "}", id="billion-laughs"),
    pytest.param("&a {apiVersion: v1, kind: ConfigMap, metadata: {name: b}, data: {x: *a}}",
                 id="recursive-alias"),
    pytest.param(HEAD + "x: " + "[" * 300 + "]" * 300 + "}", id="nested-300-deep"),
]


@pytest.mark.parametrize("body", BODIES)
@pytest.mark.parametrize(("method", "path", "content_type"), [
    pytest.param("POST", CM, "application/yaml", id="create"),
    pytest.param("PATCH", f"{CM}/b?fieldManager=t", "application/apply-patch+yaml", id="apply"),
])
def test_a_yaml_bomb_body_is_a_400_and_the_server_keeps_serving(embedded_api_client, body: str,
                                                               method: str, path: str,
                                                               content_type: str) -> None:
    """The body is refused as bad YAML (400, not 500, a hang or a crash); a GET then works."""
    reply = call(embedded_api_client, method, path, body=body, content_type=content_type)
    assert reply.status == 400, reply.body
    assert call(embedded_api_client, "GET", CM).status == 200
