"""loads_list: a LIST body decoded item by item is the whole-body decode, whatever the items
hold; layouts it cannot split safely fall back to the whole-body decode."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kinrun.kube import list_body
from kinrun.kube.list_body import ListDecoder, NotItemwise, loads_list
from kinrun.kube.listwatch import loads_list_page
from kinrun.kube.managed_fields import list_items, loads_without_managed_fields

_PODGEN = Path(__file__).resolve().parents[3] / "benchmarks" / "podgen.py"
_spec = importlib.util.spec_from_file_location("podgen", _PODGEN)
podgen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(podgen)


class Counting:
    """A loader that records the length of every input it was given."""

    def __init__(self, loads: Any = orjson.loads) -> None:
        self.loads, self.sizes = loads, []

    def __call__(self, data: bytes) -> Any:
        self.sizes.append(len(data))
        return self.loads(data)


def pod_list(items: list[dict[str, Any]], **meta: Any) -> bytes:
    """A typed list as kube-apiserver encodes it: items last, items without kind/apiVersion."""
    return orjson.dumps({"kind": "PodList", "apiVersion": "v1",
                         "metadata": {"resourceVersion": "42", **meta}, "items": items})


def pods(n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        pod = podgen.make_pod(i)
        pod.pop("kind"), pod.pop("apiVersion")
        out.append(pod)
    return out


def itemwise(data: bytes) -> tuple[Any, Counting, Counting]:
    item, whole = Counting(), Counting()
    return loads_list(data, item, whole, min_bytes=0), item, whole


def test_pod_list_is_decoded_item_by_item_into_the_whole_document() -> None:
    """Every item is decoded on its own; the whole-body loader only sees the small envelope."""
    data = pod_list(pods(20))
    doc, item, whole = itemwise(data)
    assert doc == orjson.loads(data)
    assert len(item.sizes) == 20
    assert whole.sizes == [len(data) - sum(item.sizes) - 19]  # less the 19 commas between


def test_items_with_managed_fields_are_cut_one_by_one() -> None:
    """With kinrun's loaders the result is the page without any item's managedFields, as the
    whole-page cut gives."""
    data = pod_list(pods(5))
    doc = loads_list_page(data, drop_managed_fields=True, min_bytes=0)
    assert doc == loads_without_managed_fields(data, list_items)
    assert all("managedFields" not in item["metadata"] for item in doc["items"])
    assert doc["items"][0]["metadata"]["name"] == podgen.make_pod(0)["metadata"]["name"]


def test_nested_arrays_whose_objects_start_like_an_item_are_not_split() -> None:
    """A StatefulSet's volumeClaimTemplates start with "metadata" as its items do: the split at
    those commas does not decode, so the item runs on to its own end."""
    template = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
    items = [{"metadata": {"name": f"s{i}"}, "spec": {"volumeClaimTemplates": [template] * 3}}
             for i in range(4)]
    data = orjson.dumps({"kind": "StatefulSetList", "apiVersion": "apps/v1",
                         "metadata": {"resourceVersion": "7"}, "items": items})
    doc, item, whole = itemwise(data)
    assert doc == orjson.loads(data)
    assert len(whole.sizes) == 1 and whole.sizes[0] < 200  # the envelope only


def test_custom_resource_list_with_sorted_keys_and_items_in_the_middle() -> None:
    """An unstructured list (keys sorted, so kind/metadata follow items) whose items start with
    apiVersion, as their ownerReferences do."""
    owner = {"apiVersion": "example.com/v1", "kind": "Widget", "name": "o", "uid": "u"}
    items = [{"apiVersion": "example.com/v1", "kind": "Widget",
              "metadata": {"name": f"w{i}", "ownerReferences": [owner, owner]},
              "spec": {"list": [{"apiVersion": "example.com/v1"}], "text": "]"}}
             for i in range(5)]
    data = orjson.dumps({"apiVersion": "example.com/v1", "items": items, "kind": "WidgetList",
                         "metadata": {"continue": "a]b", "resourceVersion": "9"}},
                        option=orjson.OPT_SORT_KEYS)
    doc, item, whole = itemwise(data)
    assert doc == orjson.loads(data)
    assert len(whole.sizes) == 1 and whole.sizes[0] < len(data) // 4


def test_strings_quoting_the_separator_do_not_split_an_item() -> None:
    """An annotation holding JSON text (last-applied-configuration) has the separator escaped."""
    applied = orjson.dumps({"items": [{"metadata": {"name": "x"}}, {"metadata": {}}]}).decode()
    items = [{"metadata": {"name": f"p{i}", "annotations": {"applied": applied + '},{"metadata":'}}}
             for i in range(3)]
    data = pod_list(items)
    doc, _, whole = itemwise(data)
    assert doc == orjson.loads(data)
    assert len(whole.sizes) == 1 and whole.sizes[0] < len(data) // 2


@pytest.mark.parametrize("data", [
    pod_list([]),
    orjson.dumps({"kind": "PodList", "metadata": {}, "items": None}),
    orjson.dumps({"kind": "PodList", "metadata": {}}),
    orjson.dumps({"kind": "PodList", "items": [1, 2, 3]}),
    orjson.dumps({"kind": "PodList", "items": [{"metadata": {}}, {"metadata": {}}]},
                 option=orjson.OPT_INDENT_2),
    b'{"kind":"PodList","items":[{"metadata":{}} , {"metadata":{}}]}',
], ids=["empty", "null", "absent", "not-objects", "pretty-printed", "spaces"])
def test_other_layouts_fall_back_to_the_whole_body(data: bytes) -> None:
    doc, _, whole = itemwise(data)
    assert doc == orjson.loads(data)
    assert whole.sizes[-1] == len(data)


@pytest.mark.parametrize("data", [
    b'{"spec":{"items":[{"k":1},{"k":2}]},"items":[{"k":3}]}',
    b'{"spec":{"items":[{"k":1},{"k":2}]}}',
    b'{"spec":{"items":[{"k":1},{"k":2}]},"items":[]}',
], ids=["nested-before-the-list's-own", "nested-only", "nested-and-an-empty-own"])
def test_a_nested_items_array_first_is_not_taken_for_the_lists_own(data: bytes) -> None:
    """Not an API server's layout, but the envelope check guards it: the first "items" array
    must be the document's own."""
    doc, _, whole = itemwise(data)
    assert doc == orjson.loads(data)
    assert whole.sizes[-1] == len(data)


def test_too_many_nested_candidates_fall_back_to_the_whole_body() -> None:
    nested = [{"metadata": {}}] * (list_body.MAX_TRIES_PER_ITEM + 2)
    data = pod_list([{"metadata": {"name": "a"}, "spec": {"t": nested}},
                     {"metadata": {"name": "b"}}])
    doc, _, whole = itemwise(data)
    assert doc == orjson.loads(data)
    assert whole.sizes[-1] == len(data)


@pytest.mark.parametrize("data", [
    pod_list(pods(2))[:-5],                                  # truncated
    pod_list(pods(2)).replace(b'"items":[{', b'"items":[{,', 1),  # broken first item
    pod_list(pods(2))[:-1] + b"}}",                          # trailing garbage
])
def test_invalid_json_raises_the_whole_body_decode_error(data: bytes) -> None:
    with pytest.raises(orjson.JSONDecodeError):
        loads_list(data, orjson.loads, orjson.loads, min_bytes=0)


def test_small_bodies_are_decoded_whole() -> None:
    data = pod_list(pods(1))
    item, whole = Counting(), Counting()
    assert loads_list(data, item, whole) == orjson.loads(data)
    assert item.sizes == [] and whole.sizes == [len(data)]


# -- property -----------------------------------------------------------------------------------

TRICKY = '[]{}":,\\ metadata'
keys = st.one_of(st.sampled_from(["metadata", "apiVersion", "spec", "items"]),
                 st.text(alphabet=TRICKY, max_size=8))
leaves = st.one_of(st.none(), st.booleans(), st.integers(-2**53, 2**53), st.text(alphabet=TRICKY, max_size=12))
values = st.recursive(leaves, lambda kids: st.one_of(st.lists(kids, max_size=3),
                                                     st.dictionaries(keys, kids, max_size=3)),
                      max_leaves=12)
first_keys = st.sampled_from(["metadata", "apiVersion"])


@st.composite
def lists(draw: st.DrawFn) -> bytes:
    """A list whose items share a first key and hold arbitrary values, nested objects whose
    first key is that key too."""
    first = draw(first_keys)
    items = [{first: draw(values), **draw(st.dictionaries(keys, values, max_size=3))}
             for _ in range(draw(st.integers(0, 4)))]
    doc = {"kind": "List", "metadata": draw(st.dictionaries(keys, leaves, max_size=2)),
           "items": items}
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS if draw(st.booleans()) else 0)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=lists())
def test_the_result_is_always_the_whole_body_decode(data: bytes) -> None:
    """Property: for arbitrary items (strings of brackets, quotes and the key names, nested
    objects that start as the items do), the item-wise result equals ``orjson.loads``."""
    assert loads_list(data, orjson.loads, orjson.loads, min_bytes=0) == orjson.loads(data)


# -- read in pieces (ListDecoder) ----------------------------------------------------------------

def in_pieces(data: bytes, size: int, item: Any = orjson.loads, whole: Any = orjson.loads,
              held: list[int] | None = None) -> Any:
    """``data`` fed to a ListDecoder ``size`` bytes at a time, as a streamed LIST is."""
    decoder = ListDecoder(item, whole, min_bytes=0)
    for offset in range(0, len(data), size):
        decoder.feed(data[offset:offset + size])
        if held is not None:
            held.append(len(decoder.buffered))
    return decoder.close()


def test_a_body_in_pieces_holds_one_piece_and_one_item_at_most() -> None:
    """200 Pods in pieces of 4 KB: the document is the whole decode, and what is buffered
    never exceeds a piece plus the longest item (decoded items are dropped as they end)."""
    items = pods(200)
    data = pod_list(items)
    held: list[int] = []
    assert in_pieces(data, 4096, held=held) == orjson.loads(data)
    longest = max(len(orjson.dumps(pod)) for pod in items)
    assert len(held) > 200 and max(held) <= 4096 + longest + 16


def test_a_body_in_another_layout_is_kept_whole_and_decoded_at_the_end() -> None:
    """Pretty-printed (a proxy's layout: no ``},{"`` between items): nothing is dropped, the
    whole-body loader decodes all of it at close."""
    data = orjson.dumps(orjson.loads(pod_list(pods(30))), option=orjson.OPT_INDENT_2)
    whole = Counting()
    held: list[int] = []
    assert in_pieces(data, 1000, whole=whole, held=held) == orjson.loads(data)
    assert whole.sizes == [len(data)] and held[-1] == len(data)


def test_a_failure_after_items_were_dropped_raises_not_itemwise() -> None:
    """A pathological item after decoded items were dropped: the decoder cannot decode the
    body whole any more and says so; loads_list, which holds ``data``, decodes it whole."""
    nested = [{"metadata": {}}] * (list_body.MAX_TRIES_PER_ITEM + 2)
    data = pod_list(pods(20) + [{"metadata": {"name": "a"}, "spec": {"t": nested}},
                                {"metadata": {"name": "b"}}])
    with pytest.raises(NotItemwise):
        in_pieces(data, 2048)
    whole = Counting()
    assert loads_list(data, orjson.loads, whole, min_bytes=0) == orjson.loads(data)
    assert whole.sizes[-1] == len(data)


def test_an_envelope_that_does_not_check_after_drops_raises_not_itemwise() -> None:
    """The last item does not end at one of the last ``]``: NotItemwise from close."""
    data = pod_list(pods(10))[:-2] + b"]" * (list_body.MAX_LAST_ENDS + 1) + b"}"
    with pytest.raises(NotItemwise):
        in_pieces(data, 2048)
    with pytest.raises(orjson.JSONDecodeError):
        loads_list(data, orjson.loads, orjson.loads, min_bytes=0)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=lists(), size=st.integers(1, 64))
def test_pieces_of_any_size_give_the_whole_body_decode(data: bytes, size: int) -> None:
    """Property: in pieces of any size (the opening, separators and items split anywhere),
    the decoder gives ``orjson.loads``'s document, split item by item whenever the decode in
    one piece splits it; NotItemwise (a reader reads the body again) only for a body that the
    decode in one piece could not split either."""
    whole = Counting()
    assert loads_list(data, orjson.loads, whole, min_bytes=0) == orjson.loads(data)
    split_in_one_piece = len(data) not in whole.sizes
    whole_in_pieces = Counting()
    try:
        doc = in_pieces(data, size, whole=whole_in_pieces)
    except NotItemwise:
        assert not split_in_one_piece
        return
    assert doc == orjson.loads(data)
    assert (len(data) not in whole_in_pieces.sizes) == split_in_one_piece  # split as often


def test_an_array_of_other_values_is_decoded_whole_without_searching_it_again() -> None:
    """``"items":[0,1,...]`` of 900 KB in pieces of 1 KB: seen to be another layout at its first
    bytes (kept whole, decoded at the end), not searched for an item's key on every piece
    (which made a long body of such values quadratic). Counted: the searches the decoder ran."""
    data = orjson.dumps({"kind": "List", "metadata": {}, "items": list(range(150_000))})
    decoder = ListDecoder(orjson.loads, orjson.loads, min_bytes=0)
    searches = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "c_call" and getattr(arg, "__name__", "") in ("find", "rfind"):
            searches.append(arg)
    sys.setprofile(profile)
    try:
        for offset in range(0, len(data), 1024):
            decoder.feed(data[offset:offset + 1024])
    finally:
        sys.setprofile(None)
    assert decoder.close() == orjson.loads(data)
    assert len(data) > 900 * 1024 and len(searches) <= 2


@pytest.mark.parametrize("size", [64, 1 << 20])
def test_the_items_text_at_the_end_of_an_escaped_key_is_not_the_array(size: int) -> None:
    """Found by review: ``"a\\"items":[...]`` (a key ending in an escaped quote) was taken for
    the list's own array. It is not: the body is decoded whole."""
    items = b",".join(orjson.dumps(pod) for pod in pods(3))
    data = b'{"kind":"List","a\\"items":[%s],"metadata":{},"items":[]}' % items
    assert orjson.loads(data)["items"] == []
    whole = Counting()
    assert in_pieces(data, size, whole=whole) == orjson.loads(data)
    assert whole.sizes == [len(data)]


@pytest.mark.parametrize("size", [64, 1 << 20])
def test_a_second_items_key_after_the_array_is_not_taken_for_it(size: int) -> None:
    """Found by review: ``{..."items":[...],"items":[]}`` gave the first array's items, where
    ``orjson.loads`` keeps the last. The envelope does not check: read again (in pieces), or
    decoded whole (in memory)."""
    items = b",".join(orjson.dumps(pod) for pod in pods(3))
    data = b'{"kind":"List","metadata":{},"items":[%s],"items":[]}' % items
    with pytest.raises(NotItemwise):
        in_pieces(data, size)
    assert loads_list(data, orjson.loads, orjson.loads, min_bytes=0) == orjson.loads(data)
