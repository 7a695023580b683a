"""kube-apiserver's own 422 quoting a sent value (an invalid label value built from a Secret)
reaches a kinrun error with the value redacted and the field path, reason and name kept, as
the embedded server's does (tests/http/test_server_answer_redaction.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from kinrun.errors import InvalidError
from kinrun.kube import Client
from kinrun.testing.envtest import EnvtestServer

SECRET = "hunter2 opens the vault"


@pytest.fixture(scope="module")
def client(envtest_server: EnvtestServer) -> Iterator[Any]:
    with Client.from_config(kubeconfig=envtest_server.kubeconfig_path) as c:
        yield c


@pytest.mark.parametrize("verb", ["create", "apply"])
def test_kube_apiserver_422_quoting_a_sent_value_is_redacted(client: Client, verb: str) -> None:
    """The label value is not in the error's text or body; field, reason and name are."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "redact-me", "namespace": "default",
                       "labels": {"token": SECRET.upper()}}}
    with pytest.raises(InvalidError) as info:
        getattr(client, verb)(cm)
    error = info.value
    assert SECRET.upper() not in str(error) + json.dumps(error.body)
    assert 'ConfigMap "redact-me" is invalid: metadata.labels: Invalid value: "<redacted>"' \
        in str(error)
    assert ("metadata.labels", "FieldValueInvalid") in [
        (c.get("field"), c.get("reason")) for c in error.body["details"]["causes"]]
