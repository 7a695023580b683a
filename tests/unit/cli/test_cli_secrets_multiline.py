"""A multi-line Secret value (a PEM key) copied through ``b64decode`` into a ConfigMap is hidden
in ``kinrun render`` (YAML and JSON) and in a failed ``kinrun test`` case's diff, although
the manifest's YAML folded its line breaks into spaces and the dump wraps and quotes it; so
is a value inside a longer string, and one a dump can only write escaped."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from kinrun import cli

PEM = ("-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n"
       "-----END KEY-----")
ESCAPED = "Esc\x1bSecret\tValue-42"
"""A control character: YAML dumps it double-quoted as ``\\e``, JSON as ``\\u001b`` (copied
with ``tojson``: YAML text could not hold it raw)."""

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  secrets: {apiVersion: v1, kind: Secret}
controllers:
  - name: inj
    for: secrets
    reconcile:
      actions:
        - apply:
            ownerReference: false
            manifest: |
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: "{{ obj.metadata.name }}-x", namespace: default}
              data:
                v: "{{ obj.data.password | b64decode }}"
                w: "key=[{{ obj.data.password | b64decode }}] end"
"""

TREE = CONFIG.replace('"{{ obj.data.password | b64decode }}"',
                      "{{ obj.data.password | b64decode | tojson }}").replace(
    '"key=[{{ obj.data.password | b64decode }}] end"',
    "{{ ('key=[' ~ obj.data.password | b64decode ~ '] end') | tojson }}")
"""The same, the copy written as JSON (which YAML reads: its escapes, ``\\u001b`` too)."""

TESTS = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerTest
config: c.yaml
cases:
  - name: copy
    given:
      - {apiVersion: v1, kind: Secret, metadata: {name: s, namespace: default},
         data: {password: %s}}
    expect:
      requests:
        - {verb: apply, kind: ConfigMap, body: {data: {v: something else, w: other}}}
"""


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _files(tmp_path: Path, value: str) -> Path:
    (tmp_path / "c.yaml").write_text(CONFIG if value == PEM else TREE)
    (tmp_path / "c.test.yaml").write_text(TESTS % _b64(value))
    (tmp_path / "s.yaml").write_text(json.dumps(
        {"apiVersion": "v1", "kind": "Secret",
         "metadata": {"name": "s", "namespace": "default", "uid": "u-1"},
         "data": {"password": _b64(value)}}))
    return tmp_path


def _assert_hidden(text: str, value: str) -> None:
    pieces = [p for line in value.splitlines() for p in line.split("\t") if len(p) > 3]
    pieces += ["Esc", "Secret"] if value == ESCAPED else []
    leaked = [p for p in pieces if p in text]
    assert not leaked, f"{leaked} in:\n{text}"


@pytest.mark.parametrize("output", ["yaml", "json"])
def test_render_hides_a_folded_copy(tmp_path: Path, capsys, output: str) -> None:
    """render: the ConfigMap's copy, its line breaks folded into spaces by the manifest's
    YAML, is <redacted>, alone and inside a longer string."""
    value = PEM
    files = _files(tmp_path, value)
    assert cli.main(["render", str(files / "c.yaml"), "--object", str(files / "s.yaml"),
                     "-o", output]) == 0
    out = capsys.readouterr().out
    _assert_hidden(out, value)
    assert "key=[<redacted>] end" in out


@pytest.mark.parametrize("value", [PEM, ESCAPED], ids=["pem", "control-character"])
def test_a_failed_case_diff_hides_a_folded_or_escaped_copy(tmp_path: Path, capsys,
                                                           value: str) -> None:
    """kinrun test: the sent ConfigMap in the diff shows <redacted>, alone and inside a
    longer string; --show-secrets shows the copy."""
    files = _files(tmp_path, value)
    assert cli.main(["test", str(files / "c.test.yaml")]) == 1
    out = capsys.readouterr().out
    _assert_hidden(out, value)
    assert "+      v: <redacted>" in out and "+      w: key=[<redacted>] end" in out
    assert cli.main(["test", str(files / "c.test.yaml"), "--show-secrets"]) == 1
    assert "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" in capsys.readouterr().out or value == ESCAPED
