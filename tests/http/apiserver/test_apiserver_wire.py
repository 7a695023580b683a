"""Protobuf request bodies and Tables, decoded and built without kubectl."""

from __future__ import annotations

from pathlib import Path

import pytest
from apiserver_http import call

from kinrun.testing.apiserver import protobuf
from kinrun.testing.apiserver.tables import crd_columns, human_duration, table


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (payloads < 128 bytes)."""
    return bytes([number << 3 | 2, len(payload)]) + payload


def _configmap_body() -> bytes:
    meta = _field(1, b"c") + _field(11, _field(1, b"app") + _field(2, b"web"))
    raw = _field(1, meta) + _field(2, _field(1, b"a") + _field(2, b"b"))
    unknown = _field(1, _field(1, b"v1") + _field(2, b"ConfigMap")) + _field(2, raw)
    return protobuf.MAGIC + unknown


def test_protobuf_configmap_is_decoded():
    """A runtime.Unknown-wrapped ConfigMap decodes to its JSON form."""
    assert protobuf.decode_body(_configmap_body()) == {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"app": "web"}}, "data": {"a": "b"}}


def test_protobuf_create_through_http(embedded_api_client):
    """POST with Content-Type application/vnd.kubernetes.protobuf creates the object; a body
    without the magic bytes is 400."""
    path = "/api/v1/namespaces/default/configmaps"
    reply = call(embedded_api_client, "POST", path, body=_configmap_body(),
                 content_type=protobuf.MEDIA_TYPE)
    assert reply.status == 201 and reply.body["data"] == {"a": "b"}
    bad = call(embedded_api_client, "POST", path, body=b"nope", content_type=protobuf.MEDIA_TYPE)
    assert bad.status == 400


@pytest.mark.parametrize(("seconds", "text"), [
    (5, "5s"), (150, "2m30s"), (600, "10m"), (3 * 3600 + 60, "3h1m"), (30 * 3600, "30h"),
    (3 * 86400 + 3600, "3d1h"), (40 * 86400, "40d"), (-5, "<invalid>")])
def test_human_duration(seconds, text):
    """Ages are written as apimachinery's duration.HumanDuration."""
    assert human_duration(seconds) == text


def test_table_of_configmaps(embedded_api_client):
    """A LIST asking for a Table gets NAME/DATA/AGE and rows with PartialObjectMetadata."""
    path = "/api/v1/namespaces/default/configmaps"
    call(embedded_api_client, "POST", path, body={
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}})
    m, url, hdrs, _, _ = embedded_api_client.param_serialize("GET", path, header_params={
        "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"})
    import orjson
    table = orjson.loads(embedded_api_client.call_api(m, url, hdrs).read())
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert table["rows"][0]["cells"][:2] == ["c", 1]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_custom_resource_tables_show_ages_not_timestamps():
    """A custom resource's default AGE cell and a ``type: date`` printer column's cell are
    ages, as kube-apiserver 1.20's tableconvertor writes them (it was the raw RFC 3339
    timestamp); other columns take the type they declare (tests/envtest/
    test_differential_schemas.py::test_custom_resource_tables has the real answers)."""
    web = {"metadata": {"name": "web", "creationTimestamp": "2026-12-04T21:36:01Z"},
           "spec": {"size": 1.5, "since": "2026-12-04T21:00:01Z", "list": ["a"]}}
    now = 1796420161.0 + 90  # 2026-12-04T21:36:01Z plus 90 s
    plain = table(crd_columns([]), [web], now, {})
    assert [(c["name"], c["type"]) for c in plain["columnDefinitions"]] == [
        ("Name", "string"), ("Age", "date")]
    assert plain["rows"][0]["cells"] == ["web", "90s"]
    columns = crd_columns([{"name": n, "type": k, "jsonPath": p} for n, k, p in (
        ("Since", "date", ".spec.since"), ("Size", "integer", ".spec.size"),
        ("Text", "string", ".spec.size"), ("List", "string", ".spec.list"),
        ("Gone", "string", ".spec.gone"))])
    assert table(columns, [web], now, {})["rows"][0]["cells"] == [
        "web", "37m", 1, "1.5", '["a"]', None]


def test_a_service_table_shows_its_cluster_ip_as_the_docs_say(embedded_api_client):
    """A Service gets a cluster IP at create and its Table's CLUSTER-IP shows it, so
    docs/embedded.md does not list the missing ClusterIP allocation as a difference (it did,
    contradicting its Services paragraph)."""
    import orjson
    path = "/api/v1/namespaces/default/services"
    call(embedded_api_client, "POST", path, body={
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80}]}})
    m, url, hdrs, _, _ = embedded_api_client.param_serialize("GET", path, header_params={
        "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    table = orjson.loads(embedded_api_client.call_api(m, url, hdrs).read())
    names = [c["name"] for c in table["columnDefinitions"]]
    row = next(r["cells"] for r in table["rows"] if r["cells"][0] == "s")
    assert row[names.index("Cluster-IP")].count(".") == 3
    docs = (Path(__file__).parents[3] / "docs" / "embedded.md").read_text(encoding="utf-8")
    assert "no ClusterIP allocation" not in docs and "shows `<none>`" not in docs


def test_watch_events_carry_one_row_tables(embedded_api_client):
    """A watch asking for Tables (kubectl get -w) gets each object as a one-row Table."""
    import orjson
    path = "/api/v1/namespaces/default/configmaps"
    call(embedded_api_client, "POST", path, body={
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}})
    m, url, hdrs, _, _ = embedded_api_client.param_serialize(
        "GET", path, query_params=[("watch", "true"), ("timeoutSeconds", "1")],
        header_params={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    lines = embedded_api_client.call_api(m, url, hdrs).read().splitlines()
    event = orjson.loads(lines[0])
    assert event["type"] == "ADDED" and event["object"]["kind"] == "Table"
    assert event["object"]["rows"][0]["cells"][:2] == ["c", 1]


def test_the_docs_list_the_kinds_the_server_serves():
    """docs/embedded.md names every built-in kind the embedded server serves, under its
    group and version, so a user knows what `kinrun test` cannot run."""
    import re

    from kinrun.testing.apiserver.registry import BUILTINS

    docs = (Path(__file__).parents[3] / "docs" / "embedded.md").read_text(encoding="utf-8")
    served = docs[docs.index("- Served built-in kinds:"):docs.index("and the config's CRDs")]
    text = " ".join(served.split())
    for t in BUILTINS:
        group_version = f"{t.group}/{t.versions[0]}" if t.group else "core/v1"
        section = text[text.index(group_version):]
        following = re.split(r"; \S+/v\d", section)[0]
        assert re.search(rf"\b{t.kind}\b", following), (group_version, t.kind)
