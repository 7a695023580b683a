"""loads_without_managed_fields: decodes a watch event or a LIST page without building
metadata.managedFields when the byte-level cut is safe, and otherwise returns the full
document; never a third, wrong document."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kinrun.kube.managed_fields import (
    ObjectsOf,
    event_object,
    list_items,
    loads_without_managed_fields,
    cut_managed_fields,
)

_PODGEN = Path(__file__).resolve().parents[3] / "benchmarks" / "podgen.py"
_spec = importlib.util.spec_from_file_location("podgen", _PODGEN)
podgen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(podgen)
make_pod = podgen.make_pod


def event(obj: Any, kind: str = "ADDED") -> bytes:
    """A watch event line as the API server sends it."""
    return orjson.dumps({"type": kind, "object": obj})


def page(items: list[Any]) -> bytes:
    """A LIST page as the API server sends it."""
    return orjson.dumps({"kind": "PodList", "apiVersion": "v1",
                         "metadata": {"resourceVersion": "42", "continue": "abc"}, "items": items})


def stripped(data: bytes, objects_of: ObjectsOf) -> Any:
    """The reference result: full decode, then managedFields deleted from each named object."""
    doc = orjson.loads(data)
    for obj in objects_of(doc):
        if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
            obj["metadata"].pop("managedFields", None)
    return doc


def pod_with_finalizer(finalizer: str) -> dict[str, Any]:
    """A Pod whose managedFields records ``finalizer`` as a fieldsV1 key ``v:"<finalizer>"``."""
    pod = make_pod(1)
    pod["metadata"]["finalizers"] = [finalizer]
    fields = pod["metadata"]["managedFields"][0]["fieldsV1"]["f:metadata"]
    fields["f:finalizers"] = {".": {}, "v:" + orjson.dumps(finalizer).decode(): {}}
    return pod


def pod_with_spec_managed_fields(*, before_metadata: bool) -> dict[str, Any]:
    """A Pod whose spec has a key "managedFields" with an array value (not metadata's own)."""
    pod = make_pod(2)
    spec = {**pod["spec"], "managedFields": [{"manager": "not-metadata", "n": 1}]}
    if before_metadata:
        return {"apiVersion": "v1", "kind": "Pod", "spec": spec, "metadata": pod["metadata"],
                "status": pod["status"]}
    return {**pod, "spec": spec}


# -- fast path ----------------------------------------------------------------------------------


def test_watch_event_decodes_without_the_objects_managed_fields() -> None:
    """A plain watch event: the cut applies and the result is the event minus managedFields."""
    data = event(make_pod(7), "MODIFIED")
    assert cut_managed_fields(data, 1)[1] == 1
    result = loads_without_managed_fields(data, event_object, 1)
    assert result == stripped(data, event_object)
    assert "managedFields" not in result["object"]["metadata"]


def test_list_page_decodes_without_any_items_managed_fields() -> None:
    """A plain LIST page: every item's array is cut and the result is the page minus them."""
    data = page([make_pod(i) for i in range(5)])
    assert cut_managed_fields(data)[1] == 5
    result = loads_without_managed_fields(data, list_items)
    assert result == stripped(data, list_items)
    assert all("managedFields" not in item["metadata"] for item in result["items"])


def test_page_where_only_some_items_have_managed_fields_takes_the_fast_path() -> None:
    """Items without managedFields are left alone; the others lose theirs."""
    items = [make_pod(0), make_pod(1, with_managed_fields=False), make_pod(2)]
    data = page(items)
    assert cut_managed_fields(data)[1] == 2
    assert loads_without_managed_fields(data, list_items) == stripped(data, list_items)


def test_limit_one_cuts_only_the_first_array() -> None:
    """With limit=1 only the first occurrence is replaced."""
    data = page([make_pod(0), make_pod(1)])
    nulled, count = cut_managed_fields(data, 1)
    assert count == 1
    assert nulled.count(b'"managedFields":[') == 1


def test_annotation_quoting_the_key_does_not_disturb_the_cut() -> None:
    """An annotation value with the text "managedFields":[ is escaped in JSON and never cut."""
    pod = make_pod(3)
    pod["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = (
        '{"metadata":{"managedFields":[{"manager":"x"}]}}')
    data = event(pod)
    result = loads_without_managed_fields(data, event_object, 1)
    assert result == stripped(data, event_object)
    assert "managedFields" not in result["object"]["metadata"]


def test_spec_managed_fields_after_metadata_survive_a_watch_event_cut() -> None:
    """With limit=1 only metadata's own array (the first) is cut; spec's stays intact."""
    data = event(pod_with_spec_managed_fields(before_metadata=False))
    result = loads_without_managed_fields(data, event_object, 1)
    assert result == stripped(data, event_object)
    assert result["object"]["spec"]["managedFields"] == [{"manager": "not-metadata", "n": 1}]


# -- fallbacks: the full document ---------------------------------------------------------------


@pytest.mark.parametrize(("data", "objects_of", "limit"), [
    pytest.param(event(make_pod(1)).replace(b'"managedFields":[', b'"managedFields": ['),
                 event_object, 1, id="whitespace-after-the-colon"),
    pytest.param(event(pod_with_finalizer("a]b")), event_object, 1, id="fieldsV1-key-with-]"),
    pytest.param(event(pod_with_finalizer("a[b")), event_object, 1, id="fieldsV1-key-with-["),
    pytest.param(event(pod_with_finalizer('x"]}, "y": [')), event_object, 1,
                 id="fieldsV1-key-with-json-like-text"),
    pytest.param(page([pod_with_finalizer("a]b"), make_pod(2)]), list_items, None,
                 id="page-item-with-]"),
    pytest.param(event(pod_with_spec_managed_fields(before_metadata=True)), event_object, 1,
                 id="spec-managedFields-before-metadata"),
    pytest.param(page([pod_with_spec_managed_fields(before_metadata=True)]), list_items, None,
                 id="page-spec-managedFields-before-metadata"),
    pytest.param(page([pod_with_spec_managed_fields(before_metadata=False)]), list_items, None,
                 id="page-spec-managedFields-after-metadata"),
    pytest.param(page([make_pod(1)]).replace(b'"kind":"PodList"',
                                             b'"kind":"PodList","managedFields":[{"a":1}]'),
                 list_items, None, id="page-level-managedFields"),
])
def test_unsafe_cut_falls_back_to_the_full_document(data: bytes, objects_of: ObjectsOf,
                                                    limit: int | None) -> None:
    """When a check fails the result is the full decode, managedFields included."""
    assert loads_without_managed_fields(data, objects_of, limit) == orjson.loads(data)


@pytest.mark.parametrize(("data", "objects_of", "limit"), [
    pytest.param(event(make_pod(1, with_managed_fields=False)), event_object, 1,
                 id="object-without-managedFields"),
    pytest.param(event({"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "9"}},
                       "BOOKMARK"), event_object, 1, id="bookmark"),
    pytest.param(page([]), list_items, None, id="empty-page"),
    pytest.param(event({"kind": "Status", "code": 410}, "ERROR"), event_object, 1, id="error-event"),
])
def test_documents_without_managed_fields_decode_as_they_are(data: bytes, objects_of: ObjectsOf,
                                                             limit: int | None) -> None:
    """Nothing to cut: the result is the plain decode."""
    assert cut_managed_fields(data, limit)[1] == 0
    assert loads_without_managed_fields(data, objects_of, limit) == orjson.loads(data)


def test_fallback_keeps_the_finalizer_key_exactly() -> None:
    """After a fallback, the fieldsV1 key quoting a value with "]" is the original string."""
    data = event(pod_with_finalizer("a]b"))
    result = loads_without_managed_fields(data, event_object, 1)
    fields = result["object"]["metadata"]["managedFields"][0]["fieldsV1"]["f:metadata"]
    assert fields["f:finalizers"] == {".": {}, 'v:"a]b"': {}}


# -- invalid input ------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [
    pytest.param(b"not json", id="no-key"),
    pytest.param(event(make_pod(1))[:-1], id="truncated-after-the-array"),
    pytest.param(event(make_pod(1))[:200], id="truncated-inside-the-array"),
    pytest.param(event(make_pod(1)).replace(b'"kind":"Pod"', b'"kind":Pod'), id="bad-token-outside"),
])
def test_invalid_json_raises_decode_error(data: bytes) -> None:
    """Invalid JSON raises orjson.JSONDecodeError whether or not a cut was made."""
    with pytest.raises(orjson.JSONDecodeError):
        loads_without_managed_fields(data, event_object, 1)


@pytest.mark.parametrize("inside", [b'{,}', b'{"manager":"\xff"}'], ids=["syntax", "utf8"])
def test_bytes_inside_a_cut_managed_fields_array_are_not_parsed(inside: bytes) -> None:
    """The documented exception: a cut array is dropped unread, invalid bytes in it included."""
    data = b'{"type":"ADDED","object":{"metadata":{"name":"a","managedFields":[' + inside + b"]}}}"
    result = loads_without_managed_fields(data, event_object, 1)
    assert result == {"type": "ADDED", "object": {"metadata": {"name": "a"}}}


def test_nested_array_before_a_null_metadata_managed_fields_is_kept() -> None:
    """A spec.managedFields array survives even when metadata.managedFields is JSON null."""
    obj = {"kind": "Pod", "spec": {"managedFields": [{"manager": "m"}]},
           "metadata": {"name": "a", "managedFields": None}}
    data = event(obj)
    result = loads_without_managed_fields(data, event_object, 1)
    assert result["object"]["spec"]["managedFields"] == [{"manager": "m"}]


# -- properties ---------------------------------------------------------------------------------

TRICKY = '[]{}":,\\ fkv.managedFields'
texts = st.one_of(st.text(max_size=16), st.text(alphabet=TRICKY, max_size=16))
plain_texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters='[]"'),
                      max_size=16)


def fields_v1(keys: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    """A fieldsV1 tree: nested dicts keyed by arbitrary text, {} at the leaves."""
    return st.recursive(st.just({}), lambda kids: st.dictionaries(keys, kids, max_size=3),
                        max_leaves=8)


def managed_fields(keys: st.SearchStrategy[str]) -> st.SearchStrategy[list[dict[str, Any]]]:
    """A managedFields array with arbitrary manager names and fieldsV1 keys."""
    entry = st.fixed_dictionaries({
        "manager": keys, "operation": st.sampled_from(["Update", "Apply"]),
        "apiVersion": st.just("v1"), "fieldsType": st.just("FieldsV1"), "fieldsV1": fields_v1(keys)})
    return st.lists(entry, max_size=3)


@st.composite
def objects(draw: st.DrawFn, keys: st.SearchStrategy[str] = texts,
            nested: bool = True) -> dict[str, Any]:
    """A Pod-like object; maybe managedFields, maybe a spec "managedFields" array before or
    after metadata, annotations with arbitrary text."""
    meta: dict[str, Any] = {"name": draw(keys), "annotations": draw(st.dictionaries(keys, keys, max_size=2))}
    if draw(st.booleans()):
        meta["managedFields"] = draw(managed_fields(keys))
    meta["resourceVersion"] = "5"
    spec: dict[str, Any] = {"nodeName": draw(keys)}
    if nested and draw(st.booleans()):
        spec["managedFields"] = draw(st.lists(st.dictionaries(keys, keys, max_size=2), max_size=2))
    if draw(st.booleans()):
        return {"kind": "Pod", "spec": spec, "metadata": meta}
    return {"kind": "Pod", "metadata": meta, "spec": spec}


def full_or_stripped(result: Any, data: bytes, objects_of: ObjectsOf) -> bool:
    return result == orjson.loads(data) or result == stripped(data, objects_of)


PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(obj=objects(), kind=st.sampled_from(["ADDED", "MODIFIED", "DELETED"]))
def test_watch_event_result_is_always_the_full_or_the_stripped_document(obj: dict[str, Any],
                                                                       kind: str) -> None:
    """Property: for arbitrary text in fieldsV1 keys, managers and annotations, the result is
    the full decode or the full decode minus metadata.managedFields, nothing else."""
    data = event(obj, kind)
    assert full_or_stripped(loads_without_managed_fields(data, event_object, 1), data, event_object)


@PROPERTY
@given(items=st.lists(objects(), max_size=3))
def test_list_page_result_is_always_the_full_or_the_stripped_document(items: list[dict[str, Any]]) -> None:
    """Property: as for watch events, for LIST pages of such objects."""
    data = page(items)
    assert full_or_stripped(loads_without_managed_fields(data, list_items), data, list_items)


@PROPERTY
@given(items=st.lists(objects(keys=plain_texts, nested=False), max_size=3))
def test_without_brackets_in_any_text_the_fast_path_always_applies(items: list[dict[str, Any]]) -> None:
    """Property: when no string holds "[", "]" or '"' and only metadata has managedFields, every
    array is cut and the result is the stripped page."""
    data = page(items)
    expected = stripped(data, list_items)
    with_fields = sum("managedFields" in item["metadata"] for item in items)
    assert cut_managed_fields(data)[1] == with_fields
    result = loads_without_managed_fields(data, list_items)
    assert result == expected
    assert all("managedFields" not in item["metadata"] for item in result["items"])

