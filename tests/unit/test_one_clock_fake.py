"""One clock (issue 27), by behaviour: a component given a FakeClock reads and waits on that
clock only. ``REAL_CLOCK`` is made to refuse every call for the test's length, so a component
that falls back to the default clock (a keyword not handed on) fails here; the syntax scan in
``test_one_clock.py`` catches the ``time`` module read directly.
"""

from __future__ import annotations

import datetime
import email.utils
import io
from typing import Any

import pytest
import urllib3
from cryptography import x509
from kubernetes import client as k8s_client

from kinrun.clock import REAL_CLOCK, FakeClock, RecordingClock
from kinrun.kube import Client
from kinrun.kube.event_recorder import EventRecorder
from kinrun.kube.http_errors import parse_retry_after
from kinrun.kube.ratelimit import TokenBucket
from kinrun.leader_election import now_micro
from kinrun.templating import TemplateEngine
from kinrun.tls import SelfSignedCerts, ServerTLS

WALL = 1_750_000_000.0  # 2025-06-15T15:06:40Z


@pytest.fixture(autouse=True)
def real_clock_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every method of ``REAL_CLOCK`` raises while the test runs."""
    def refuse(*_args: Any) -> Any:
        raise AssertionError("read or waited on REAL_CLOCK although given a FakeClock")
    for name in ("now", "wall", "sleep", "wait", "wait_until"):
        monkeypatch.setattr(REAL_CLOCK, name, refuse)


class _Pool:
    """Stands in for urllib3.PoolManager: hands out ``answers`` in order."""

    def __init__(self, *answers: urllib3.HTTPResponse) -> None:
        self.answers = list(answers)

    def request(self, *_args: Any, **_kwargs: Any) -> urllib3.HTTPResponse:
        return self.answers.pop(0)


def _answer(status: int, headers: dict[str, str] | None = None) -> urllib3.HTTPResponse:
    body = b'{"kind": "Status", "code": %d}' % status if status >= 300 else b'{"kind": "Pod"}'
    return urllib3.HTTPResponse(body=io.BytesIO(body), status=status, headers=headers or {},
                                preload_content=False)


def test_the_real_clock_is_refused_here() -> None:
    with pytest.raises(AssertionError, match="REAL_CLOCK"):
        REAL_CLOCK.now()


def test_a_retry_after_date_is_waited_for_on_the_clients_clock() -> None:
    """A 429's Retry-After as an HTTP date counts from the client's clock's wall (client-go's
    ``retryAfterSeconds`` reads seconds only; RFC 9110 10.2.3 allows the date)."""
    clock = RecordingClock(wall=WALL)
    client = Client(k8s_client.ApiClient(k8s_client.Configuration(host="http://fake:6443")),
                    qps=0, burst=0, clock=clock)
    date = email.utils.formatdate(WALL + 5, usegmt=True)
    client.transport.pool = _Pool(_answer(429, {"Retry-After": date}), _answer(200))
    assert client.transport.request("GET", "/api/v1/pods/a") == {"kind": "Pod"}
    assert clock.slept == [5.0]


def test_a_clients_event_is_stamped_on_its_clock() -> None:
    """``Client.create_event`` stamps the Event's name and timestamps with the client's clock."""
    client = Client(k8s_client.ApiClient(k8s_client.Configuration(host="http://fake:6443")),
                    qps=0, burst=0, clock=FakeClock(wall=WALL))
    sent: list[dict] = []
    client._create = lambda _ref, event, *_: sent.append(event) or event  # type: ignore
    client.create_event({"kind": "Pod", "metadata": {"name": "a", "namespace": "default"}},
                        type="Normal", reason="Synced", message="ok")
    assert sent[0]["firstTimestamp"] == "2025-06-15T15:06:40Z"
    assert sent[0]["metadata"]["name"] == f"a.{int(WALL * 1e9):x}"


def test_parse_retry_after_reads_the_given_wall() -> None:
    date = email.utils.formatdate(WALL + 7, usegmt=True)
    assert parse_retry_after(date, clock=FakeClock(wall=WALL)) == 7.0


def test_the_token_bucket_waits_on_its_clock() -> None:
    clock = RecordingClock()
    bucket = TokenBucket(2.0, 1, clock=clock)
    bucket.accept()
    bucket.accept()
    assert clock.slept == [0.5]


def test_events_are_stamped_and_correlated_on_the_recorders_clock() -> None:
    recorder = EventRecorder("kinrun", clock=FakeClock(wall=WALL))
    request = recorder.event({"kind": "Pod", "namespace": "default", "name": "a"},
                             type="Normal", reason="Synced", message="ok")
    body = request.body
    assert body["firstTimestamp"] == body["lastTimestamp"] == "2025-06-15T15:06:40Z"
    assert body["metadata"]["name"] == f"a.{int(WALL * 1e9):x}"
    assert recorder.correlator.correlate(body).event is not None


def test_lease_times_and_certificates_read_the_given_wall() -> None:
    clock = FakeClock(wall=WALL)
    assert now_micro(clock) == "2025-06-15T15:06:40.000000Z"
    certs = SelfSignedCerts(["localhost"], clock=clock)
    cert = x509.load_pem_x509_certificate(certs.current().cert)
    assert cert.not_valid_before_utc == datetime.datetime.fromtimestamp(
        WALL - 300, datetime.timezone.utc)
    served = ServerTLS(certs, clock=clock)
    assert served.refresh() is False


def test_templates_read_now_and_spend_their_budget_on_the_engines_clock() -> None:
    engine = TemplateEngine(clock=FakeClock(wall=WALL))
    template = engine.template("{{ now().isoformat() }} {% for i in range(3) %}{{ i }}{% endfor %}")
    out = template.render({})
    assert out == "2025-06-15T15:06:40+00:00 012"
