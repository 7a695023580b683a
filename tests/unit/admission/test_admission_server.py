"""kinrun.admission.server over real HTTPS on 127.0.0.1: a client trusting the CA posts
AdmissionReviews; 400 for what is not one; metrics; readiness; a renewed pair is served."""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kinrun.clock import REAL_CLOCK, FakeClock, RealClock
from kinrun.admission.server import WebhookOptions, WebhookServer, build_webhook_server
from kinrun.config import load_text
from kinrun.metrics import Metrics
from kinrun.plan import plan
from kinrun.probes import Probes
from kinrun.tls import DEFAULT_VALIDITY, SelfSignedCerts, ServerTLS

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  quotas: {apiVersion: v1, kind: ConfigMap}
controllers: [{name: c, for: quotas, reconcile: {actions: [{log: hi}]}}]
admission:
  webhooks:
    - name: big.quota.example.com
      type: validating
      rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]
      validate:
        - when: "(object.data | default({})) | length > (get('quotas', 'q/max').data.n | int)"
          deny: "too many keys"
    - name: team.example.com
      type: mutating
      rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]
      mutate:
        - mergePatch: |
            metadata: {labels: {team: "{{ userInfo.username }}"}}
"""


class Lister:
    def __init__(self, objects: dict[str, Any]) -> None:
        self.objects = objects

    def get(self, key: str) -> Any:
        return self.objects.get(key)


LISTERS = {"quotas": Lister({"q/max": {"data": {"n": "1"}}})}


class Clock(RealClock):
    """The real clock with a settable wall ``t`` (certificates' validity)."""

    def __init__(self) -> None:
        self.t = time.time() - 3600.0 * 0.7  # issued in the past: renewal is due by now

    def wall(self) -> float:  # type: ignore[override]
        return self.t


@pytest.fixture
def wall() -> Clock:
    return Clock()


@pytest.fixture
def certs(wall: Clock) -> SelfSignedCerts:
    return SelfSignedCerts(["127.0.0.1"], validity=3600.0, clock=wall)


@pytest.fixture
def server(certs: SelfSignedCerts) -> Iterator[WebhookServer]:
    compiled = plan(load_text(CONFIG, file="c.yaml"))
    srv = WebhookServer(compiled.admission, ServerTLS(certs), listers=LISTERS,
                        metrics=Metrics(), workers=2, timeout=5.0)
    srv.start()
    yield srv
    srv.stop()


def client_context(ca: bytes) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cadata=ca.decode())
    return ctx


def post(server: WebhookServer, path: str, body: Any, ca: bytes,
         content_type: str = "application/json") -> tuple[int, bytes, ssl.SSLSocket | None]:
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=client_context(ca),
                                       timeout=5)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn.request("POST", path, data, {"Content-Type": content_type})
    response = conn.getresponse()
    out = response.status, response.read(), conn.sock
    conn.close()
    return out


def review(obj: dict[str, Any], uid: str = "u-1") -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "operation": "CREATE", "object": obj, "namespace": "q",
                        "userInfo": {"username": "alice"}}}


CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
      "data": {"a": "1", "b": "2"}}


def test_validating_webhook_denies_over_https(server: WebhookServer,
                                              certs: SelfSignedCerts) -> None:
    """A validating webhook's deny comes back as allowed: false with the uid, over TLS a
    client verifies with the CA only."""
    status, body, _ = post(server, "/validate/big.quota.example.com", review(CM), certs.ca_pem)
    answer = json.loads(body)
    assert status == 200
    assert answer["kind"] == "AdmissionReview" and answer["response"]["uid"] == "u-1"
    assert answer["response"]["allowed"] is False
    assert answer["response"]["status"]["message"] == "too many keys"


def test_mutating_webhook_answers_a_json_patch(server: WebhookServer,
                                               certs: SelfSignedCerts) -> None:
    """A mutating webhook's answer carries a base64 JSON patch of the label it adds."""
    status, body, _ = post(server, "/mutate/team.example.com", review(CM), certs.ca_pem)
    response = json.loads(body)["response"]
    assert status == 200 and response["allowed"] is True and response["patchType"] == "JSONPatch"
    ops = json.loads(base64.b64decode(response["patch"]))
    assert ops == [{"op": "add", "path": "/metadata/labels", "value": {"team": "alice"}}]


@pytest.mark.parametrize("body, ctype", [
    pytest.param(b"not json", "application/json", id="not-json"),
    pytest.param({"kind": "ConfigMap", "apiVersion": "v1"}, "application/json", id="other-kind"),
    pytest.param({**review(CM), "apiVersion": "admission.k8s.io/v1beta1"}, "application/json",
                 id="v1beta1"),
    pytest.param({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"},
                 "application/json", id="no-request"),
    pytest.param(review(CM), "text/plain", id="content-type"),
])
def test_not_an_admission_review_is_400(server: WebhookServer, certs: SelfSignedCerts,
                                        body: Any, ctype: str) -> None:
    """Bodies that are not an AdmissionReview v1 with a request are answered 400."""
    status, _, _ = post(server, "/validate/big.quota.example.com", body, certs.ca_pem, ctype)
    assert status == 400


def test_unknown_path_is_404_and_get_is_405(server: WebhookServer,
                                            certs: SelfSignedCerts) -> None:
    """Only the webhooks' paths answer; a GET on one is 405 with Allow: POST."""
    assert post(server, "/validate/nope.example.com", review(CM), certs.ca_pem)[0] == 404
    conn = http.client.HTTPSConnection("127.0.0.1", server.port,
                                       context=client_context(certs.ca_pem), timeout=5)
    conn.request("GET", "/validate/big.quota.example.com")
    response = conn.getresponse()
    assert response.status == 405 and response.getheader("Allow") == "POST"
    conn.close()


def test_metrics_count_requests_by_webhook_and_code(certs: SelfSignedCerts) -> None:
    """controller_runtime_webhook_* series count each request by its path and HTTP code."""
    metrics = Metrics()
    compiled = plan(load_text(CONFIG, file="c.yaml"))
    srv = WebhookServer(compiled.admission, ServerTLS(certs), listers=LISTERS, metrics=metrics,
                        workers=1)
    srv.start()
    try:
        path = "/validate/big.quota.example.com"
        post(srv, path, review(CM), certs.ca_pem)
        post(srv, path, b"{", certs.ca_pem)
    finally:
        srv.stop()
    sample = metrics.registry.get_sample_value
    assert sample("controller_runtime_webhook_requests_total",
                  {"webhook": path, "code": "200"}) == 1
    assert sample("controller_runtime_webhook_requests_total",
                  {"webhook": path, "code": "400"}) == 1
    assert sample("controller_runtime_webhook_latency_seconds_count", {"webhook": path}) == 2
    assert sample("controller_runtime_webhook_requests_in_flight", {"webhook": path}) == 0


def test_renewed_certificate_is_served_without_restart(server: WebhookServer,
                                                       certs: SelfSignedCerts,
                                                       wall: Clock) -> None:
    """Past two thirds of its lifetime the pair is renewed and the next handshake gets it."""
    before = peer_cert(server, certs.ca_pem)
    wall.t = time.time()
    server.tls.refresh()
    after = peer_cert(server, certs.ca_pem)
    assert before != after
    assert post(server, "/validate/big.quota.example.com", review(CM), certs.ca_pem)[0] == 200


def peer_cert(server: WebhookServer, ca: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw:
        with client_context(ca).wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            return tls.getpeercert(binary_form=True) or b""


def test_a_silent_connection_does_not_block_the_others(certs: SelfSignedCerts) -> None:
    """With one worker held by a client that never sends, another worker still answers
    (bounded pool), and the silent one is dropped after its timeout."""
    compiled = plan(load_text(CONFIG, file="c.yaml"))
    srv = WebhookServer(compiled.admission, ServerTLS(certs), listers=LISTERS, workers=2,
                        timeout=30.0)
    srv.start()
    try:
        with socket.create_connection(("127.0.0.1", srv.port)):
            status, _, _ = post(srv, "/validate/big.quota.example.com", review(CM),
                                certs.ca_pem)
            assert status == 200
    finally:
        srv.stop(timeout=0.1)


def test_readiness_registered_on_probes(certs: SelfSignedCerts) -> None:
    """/readyz fails until the server listens, passes while it does (a standby replica
    included), fails after stop."""
    compiled = plan(load_text(CONFIG, file="c.yaml"))
    probes = Probes(stuck_reconcile_after=60)
    probes.watch_informers(lambda: [])
    probes.standby("ns/lease")
    srv = build_webhook_server(compiled, None, LISTERS, None, probes,
                               WebhookOptions(namespace="ns", hosts=("127.0.0.1",), port=0,
                                              address="127.0.0.1", workers=1))
    assert srv is not None
    assert probes.readyz() == (False, "readyz check failed\n[-]webhook server: not listening\n")
    srv.start()
    try:
        assert probes.readyz()[0] is True
    finally:
        srv.stop()
    assert probes.readyz()[0] is False


def test_built_server_serves_the_service_names(tmp_path: Any) -> None:
    """Without a client the built server's certificate names SERVICE.NAMESPACE.svc (and the
    hosts given) and is self-signed by a fresh CA."""
    compiled = plan(load_text(CONFIG, file=str(tmp_path / "quota.yaml")))
    srv = build_webhook_server(compiled, None, LISTERS, None, None,
                               WebhookOptions(namespace="ns", hosts=("127.0.0.1",), port=0))
    assert srv is not None
    assert srv.tls.source.hosts[:2] == ("kinrun-quota-webhook.ns.svc",  # type: ignore[attr-defined]
                                         "kinrun-quota-webhook.ns.svc.cluster.local")


def test_a_built_server_runs_on_the_clock_it_is_given(tmp_path: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """One clock (issue 27): the certificates' validity and the serving TLS's checks read the
    run's clock, never REAL_CLOCK (made to refuse here)."""
    def refuse(*_args: Any) -> Any:
        raise AssertionError("read REAL_CLOCK although given a FakeClock")
    for name in ("now", "wall", "sleep", "wait", "wait_until"):
        monkeypatch.setattr(REAL_CLOCK, name, refuse)
    wall = 1_750_000_000.0
    compiled = plan(load_text(CONFIG, file=str(tmp_path / "quota.yaml")), clock=FakeClock())
    srv = build_webhook_server(compiled, None, LISTERS, None, None,
                               WebhookOptions(namespace="ns", port=0,
                                              clock=FakeClock(wall=wall)))
    assert srv is not None
    assert srv.tls.source.current().not_after == wall + DEFAULT_VALIDITY  # type: ignore[attr-defined]
    assert srv.tls.refresh() is False


def test_no_admission_builds_nothing() -> None:
    """A config without admission: gets no webhook server."""
    text = CONFIG.split("admission:")[0]
    assert build_webhook_server(plan(load_text(text, file="c.yaml")), None, {}, None,
                                None) is None


def test_concurrent_requests_all_answered(server: WebhookServer,
                                          certs: SelfSignedCerts) -> None:
    """More concurrent clients than workers: every request is answered 200, its own uid."""
    results: list[tuple[int, str]] = []

    def one(i: int) -> None:
        status, body, _ = post(server, "/validate/big.quota.example.com",
                               review(CM, uid=f"u-{i}"), certs.ca_pem)
        results.append((status, json.loads(body)["response"]["uid"]))
    threads = [threading.Thread(target=one, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(results) == sorted((200, f"u-{i}") for i in range(12))


def test_long_service_names_get_a_certificate(tmp_path: Any) -> None:
    """SERVICE.NAMESPACE.svc.cluster.local longer than a CN's 64 characters still gets a
    serving certificate (the names are SANs; the CN is cut)."""
    compiled = plan(load_text(CONFIG, file=str(tmp_path / "quota.yaml")))
    srv = build_webhook_server(compiled, None, LISTERS, None, None,
                               WebhookOptions(namespace="n" * 63, port=0))
    assert srv is not None
    assert srv.tls.source.hosts[0] == f"kinrun-quota-webhook.{'n' * 63}.svc"  # type: ignore[attr-defined]


def test_keep_alive_connection_answers_several_requests(server: WebhookServer,
                                                        certs: SelfSignedCerts) -> None:
    """An HTTP/1.1 client's connection stays open: three reviews, one TLS session."""
    conn = http.client.HTTPSConnection("127.0.0.1", server.port,
                                       context=client_context(certs.ca_pem), timeout=5)
    sockets = set()
    for i in range(3):
        conn.request("POST", "/validate/big.quota.example.com",
                     json.dumps(review(CM, uid=f"k-{i}")).encode(),
                     {"Content-Type": "application/json"})
        response = conn.getresponse()
        assert json.loads(response.read())["response"]["uid"] == f"k-{i}"
        assert response.getheader("Connection") != "close"
        sockets.add(id(conn.sock))
    conn.close()
    assert len(sockets) == 1


def test_a_body_over_the_limit_is_refused_unread(server: WebhookServer,
                                                 certs: SelfSignedCerts) -> None:
    """A Content-Length over MAX_BODY is answered 400 without reading it, and the connection
    is closed (its unread body would be taken for the next request)."""
    from kinrun.admission.server import MAX_BODY

    conn = http.client.HTTPSConnection("127.0.0.1", server.port,
                                       context=client_context(certs.ca_pem), timeout=5)
    conn.putrequest("POST", "/validate/big.quota.example.com")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(MAX_BODY + 1))
    conn.endheaders()
    response = conn.getresponse()
    assert response.status == 400 and response.getheader("Connection") == "close"
    conn.close()


def test_self_signed_renewal_under_load_loses_no_request(server: WebhookServer,
                                                          certs: SelfSignedCerts,
                                                          wall: Clock) -> None:
    """Clients posting on new connections while the pair is renewed: every request is
    answered 200, and connections after the renewal get the new certificate."""
    before = peer_cert(server, certs.ca_pem)
    statuses: list[int] = []
    stop, lock = threading.Event(), threading.Lock()
    marks = {20: threading.Event(), 60: threading.Event()}  # answers seen so far

    def loop() -> None:
        while not stop.is_set():
            status = post(server, "/validate/big.quota.example.com", review(CM),
                          certs.ca_pem)[0]
            with lock:
                statuses.append(status)
                for count, reached in marks.items():
                    if len(statuses) >= count:
                        reached.set()
    clients = [threading.Thread(target=loop) for _ in range(4)]
    for c in clients:
        c.start()
    try:
        assert marks[20].wait(30)
        wall.t = time.time()  # renewal due
        assert server.tls.refresh()
        assert marks[60].wait(30)
    finally:
        stop.set()
        for c in clients:
            c.join(30)
    assert set(statuses) == {200}
    assert peer_cert(server, certs.ca_pem) != before
