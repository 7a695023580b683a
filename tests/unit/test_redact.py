"""kinrun.redact: a Secret's values replaced by their sizes (as kubectl describe secret), in
objects, requests and text; everything else untouched."""

from __future__ import annotations

import logging

from kinrun.kube.dry_run import Target, change_summary
from kinrun.logging_setup import JsonFormatter, TextFormatter
from kinrun.kube.http_errors import error_from_response
from kinrun.redact import (
    LAST_APPLIED, redact_echoes, redact_object, redact_request, redact_steps, redact_text,
    redact_value, secret_values,
)

PLAIN = "hunter2-s3cret"
ENCODED = "aHVudGVyMi1zM2NyZXQ="  # base64 of PLAIN, 14 bytes
SECRET = {"apiVersion": "v1", "kind": "Secret",
          "metadata": {"name": "db", "namespace": "shop",
                       "annotations": {LAST_APPLIED: f'{{"data":{{"password":"{ENCODED}"}}}}',
                                       "team": "a"}},
          "data": {"password": ENCODED}, "stringData": {"user": "admin-user"}}


def test_a_secret_keeps_its_keys_and_shows_sizes() -> None:
    """data values -> decoded size, stringData -> UTF-8 size, last-applied -> <redacted>; the
    argument is not changed."""
    shown = redact_object(SECRET)
    assert shown["data"] == {"password": "<redacted: 14 bytes>"}
    assert shown["stringData"] == {"user": "<redacted: 10 bytes>"}
    assert shown["metadata"]["annotations"] == {LAST_APPLIED: "<redacted>", "team": "a"}
    assert SECRET["data"]["password"] == ENCODED
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"password": PLAIN}}
    assert redact_object(configmap) is configmap


def test_requests_about_a_secret() -> None:
    """apply/create bodies, merge patches and JSON patch values on data paths are redacted;
    a Secret inside another request's body (a List) too; other requests are as they are."""
    apply = {"verb": "apply", "apiVersion": "v1", "kind": "Secret", "name": "db",
             "body": SECRET}
    assert ENCODED not in str(redact_request(apply)) and PLAIN not in str(redact_request(apply))
    merge = {"verb": "patch", "apiVersion": "v1", "kind": "Secret", "name": "db",
             "patchType": "merge", "body": {"data": {"password": ENCODED}}}
    assert redact_request(merge)["body"] == {"data": {"password": "<redacted: 14 bytes>"}}
    json_patch = {**merge, "patchType": "json",
                  "body": [{"op": "replace", "path": "/data/password", "value": ENCODED},
                           {"op": "add", "path": "/metadata/labels/a", "value": "b"}]}
    assert redact_request(json_patch)["body"] == [
        {"op": "replace", "path": "/data/password", "value": "<redacted>"},
        {"op": "add", "path": "/metadata/labels/a", "value": "b"}]
    listed = {"verb": "create", "apiVersion": "v1", "kind": "List", "name": "x",
              "body": {"items": [SECRET]}}
    assert ENCODED not in str(redact_request(listed))
    configmap = {"verb": "apply", "apiVersion": "v1", "kind": "ConfigMap", "name": "c",
                 "body": {"data": {"password": PLAIN}}}
    assert redact_steps([configmap, {"log": PLAIN}]) == [configmap, {"log": PLAIN}]


def test_text_loses_the_values_as_stored_and_decoded() -> None:
    """secret_values: base64 and decoded forms and stringData; short values are not searched."""
    values = secret_values(SECRET, {"kind": "ConfigMap", "data": {"x": "not-secret"}},
                           {"apiVersion": "v1", "kind": "Secret", "data": {"pin": "MTI="}})
    assert values == {ENCODED, PLAIN, "admin-user", "MTI="}
    assert redact_text(f"pw {PLAIN} / {ENCODED}, 12", values) == "pw <redacted> / <redacted>, 12"


def test_dry_run_names_changed_secret_fields_without_values() -> None:
    """A dry-run line about a Secret names data.password as changed, without either value."""
    answer = {**SECRET, "data": {"password": "bmV3LXZhbHVl"}}
    line = change_summary("apply", Target("Secret", "shop", "db"), SECRET, answer)
    assert line == "would patch Secret shop/db: data.password (changed)"
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}}
    assert change_summary("apply", Target("ConfigMap", "ns", "c"), cm,
                          {**cm, "data": {"a": "2"}}) == 'would patch ConfigMap ns/c: data.a "1" -> "2"'


def test_log_formatters_redact_secret_arguments_and_extra_fields() -> None:
    """A Secret logged as a % argument or an extra= field shows sizes in both formats."""
    record = logging.LogRecord("kinrun.controller.c", logging.INFO, __file__, 1, "got %s",
                               (SECRET,), None)
    record.obj = SECRET
    for formatter in (TextFormatter(), JsonFormatter()):
        line = formatter.format(record)
        assert ENCODED not in line and "admin-user" not in line and "14 bytes" in line
    assert SECRET["data"]["password"] == ENCODED  # the record and its object unchanged
    assert redact_value([SECRET])[0]["data"] == {"password": "<redacted: 14 bytes>"}


def test_kinrun_test_records_log_lines_with_secrets_redacted() -> None:
    """A hook's log line with a Secret argument is recorded (and so shown by kinrun test)
    with sizes only."""
    from kinrun.testing.recording import Recorder

    recorder = Recorder()
    recorder.add_log(logging.LogRecord("kinrun.controller.c", logging.INFO, __file__, 1,
                                       "saw %s and %s", (SECRET, "x"), None))
    (line,) = recorder.logs()
    assert ENCODED not in line.message and "<redacted: 14 bytes>" in line.message


def test_a_malformed_patch_of_a_secret_does_not_echo_its_values() -> None:
    """The render error of a json patch that is not a list names the type and size of what
    it got, never the value, whatever the target (a ConfigMap's patch may hold a Secret's
    value too: docs/secrets.md)."""
    import pytest

    from kinrun.actions import compile_actions
    from kinrun.actions.errors import RenderError

    program = compile_actions([{"patch": {"type": "json", "target": {
        "apiVersion": "v1", "kind": "Secret", "name": "db"},
        "patch": {"data": {"password": ENCODED}}}}], controller="c")
    with pytest.raises(RenderError) as err:
        program.render(key="shop/x", obj=None)
    assert ENCODED not in str(err.value) and "got a dict of 1 keys" in str(err.value)
    cm = compile_actions([{"patch": {"type": "json", "target": {
        "apiVersion": "v1", "kind": "ConfigMap", "name": "c"},
        "patch": {"data": {"password": ENCODED}}}}], controller="c")
    with pytest.raises(RenderError) as err:
        cm.render(key="shop/x", obj=None)
    assert ENCODED not in str(err.value) and "got a dict of 1 keys" in str(err.value)


def _kube_422(field: str, value: str, why: str) -> dict:
    """kube-apiserver's 422 for one field error (``field.Invalid``: the value Go-quoted)."""
    cause = f'Invalid value: "{value}": {why}'
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 422,
            "reason": "Invalid", "message": f'ConfigMap "app" is invalid: {field}: {cause}',
            "details": {"name": "app", "kind": "configmaps",
                        "causes": [{"reason": "FieldValueInvalid", "message": cause,
                                    "field": field}]}}


def test_server_answer_keeps_field_reason_and_name_and_hides_sent_values() -> None:
    """A value of the body quoted back (a data key, in the field path and the message) is
    replaced; the field path's structure, reason, kind and object name stay."""
    sent = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "app", "namespace": "shop"}, "data": {"tok en": "x"}}
    answer = _kube_422("data[tok en]", "tok en", "a valid config key must consist of ...")
    shown = redact_echoes(answer, sent, shown=["api", "v1", "namespaces", "shop"])
    cause = shown["details"]["causes"][0]
    assert cause == {"reason": "FieldValueInvalid", "field": "data[<redacted>]",
                     "message": 'Invalid value: "<redacted>": a valid config key must '
                                'consist of ...'}
    assert shown["message"].startswith('ConfigMap "app" is invalid: data[<redacted>]: ')
    assert "tok en" not in str(shown) and answer["details"]["causes"][0]["field"] == \
        "data[tok en]"  # the argument is not changed


def test_server_answer_without_sent_values_is_unchanged() -> None:
    """An answer that quotes nothing of the body is returned as it is: a sent word inside the
    field error's own words (``value`` in ``Invalid value``) is not an echo."""
    answer = _kube_422("metadata.labels", "other", "no")
    assert redact_echoes(answer, {"data": {"k": "value", "j": "Invalid"}}) is answer
    echoed = _kube_422("metadata.labels", "other", "no value here")
    assert redact_echoes(echoed, {"data": {"k": "value"}})["details"]["causes"][0][
        "message"] == 'Invalid value: "other": no <redacted> here'


def test_error_from_a_non_status_answer_hides_sent_values() -> None:
    """A plain-text answer (a proxy, a webhook) quoting the body is redacted too, as are
    numbers of 4 or more digits."""
    error = error_from_response(400, b"bad port 31337 for 'hunter2-s3cret'", {}, method="PUT",
                                path="/api/v1/x",
                                sent=b'{"spec": {"port": 31337, "pw": "hunter2-s3cret"}}')
    assert str(error) == "400 : PUT /api/v1/x: bad port <redacted> for '<redacted>'"


MULTILINE = "-----BEGIN KEY-----\nMIIEvQIBADANBgkq \"quoted\" 'x'\n-----END KEY-----"


def test_text_loses_a_value_escaped_folded_or_inside_a_longer_string() -> None:
    """redact_text finds a value JSON-escaped (ASCII or not), repr-escaped, with its line
    breaks folded into spaces or wrapped by a YAML dump, and inside a longer word."""
    import json

    import yaml

    values = frozenset({MULTILINE, "pässwort-42"})
    texts = [f"got {json.dumps(MULTILINE)}", f"got {MULTILINE!r} here",
             f"got {json.dumps('pässwort-42')}", f"got {json.dumps({'v': ['pässwort-42']})}",
             "v: " + MULTILINE.replace("\n", " "),
             yaml.safe_dump({"v": "key=" + MULTILINE.replace("\n", " ") + "=end"}, width=20),
             yaml.safe_dump({"v": MULTILINE}), "xpässwort-42x"]
    for text in texts:
        shown = redact_text(text, values)
        assert "MIIE" not in shown and "BEGIN" not in shown and "sswort" not in shown, shown
        assert "<redacted>" in shown
    assert redact_text(" ab ", frozenset({" ab "})) == " ab "  # too short once trimmed
