"""The transport asks the thread's Lease fence before every write (``kinrun.fencing``): a
reconcile that resumes after its replica's renewDeadline passed sends no write; reads go on."""

from __future__ import annotations

import pytest
from kube_fakes import FakePool, make_client, response

from kinrun.errors import TemporaryError
from kinrun.fencing import FENCED_RETRY, FencedError, fenced

PATH = "/api/v1/namespaces/ns/configmaps"


def _transport():
    pool = FakePool(lambda call: response(200, {"kind": "ConfigMap"}))
    return make_client(pool).transport, pool


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_a_write_under_a_closed_fence_is_not_sent(method):
    """FencedError (a TemporaryError retried after FENCED_RETRY s); nothing reaches the pool."""
    transport, pool = _transport()
    with fenced(lambda: False), pytest.raises(FencedError) as caught:
        transport.request(method, PATH, body={"kind": "ConfigMap"})
    assert pool.calls == []
    assert isinstance(caught.value, TemporaryError) and caught.value.delay == FENCED_RETRY


def test_reads_and_writes_under_an_open_fence_or_none_are_sent():
    """A GET under a closed fence, a write under an open one, a write on a thread without one."""
    transport, pool = _transport()
    with fenced(lambda: False):
        transport.request("GET", f"{PATH}/a")
    with fenced(lambda: True):
        transport.request("POST", PATH, body={})
    transport.request("POST", PATH, body={})  # no fence on this thread (a Lease renewal)
    assert [c.method for c in pool.calls] == ["GET", "POST", "POST"]


def test_the_fence_is_restored_after_the_block():
    """Nested blocks restore the outer fence; after the last one none is set."""
    transport, pool = _transport()
    with fenced(lambda: True):
        with fenced(lambda: False), pytest.raises(FencedError):
            transport.request("POST", PATH, body={})
        transport.request("POST", PATH, body={})
    transport.request("POST", PATH, body={})
    assert len(pool.calls) == 2
