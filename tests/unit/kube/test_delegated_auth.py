"""kinrun.kube.delegated_auth: TokenReview then SubjectAccessReview, as controller-runtime's
secure metrics; decisions cached for the TTL; a failed review is 500, never allowed."""

from __future__ import annotations

from typing import Any

from kinrun.clock import FakeClock
from kinrun.errors import ServerError
from kinrun.kube.delegated_auth import CACHE_TTL, DelegatedAuth


class FakeApi:
    """Answers reviews: tokens -> users; allowed (user, path, verb) triples."""

    def __init__(self) -> None:
        self.users = {"good": {"username": "prom", "uid": "u1", "groups": ["g"]},
                      "weak": {"username": "nobody"}}
        self.allowed = {("prom", "/metrics", "get")}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.fail = False

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((path, body))
        if self.fail:
            raise ServerError("etcd is down", status=503)
        spec = body["spec"]
        if body["kind"] == "TokenReview":
            user = self.users.get(spec["token"])
            return {"status": {"authenticated": user is not None, **({"user": user} if user else {})}}
        attrs = spec["nonResourceAttributes"]
        return {"status": {"allowed": (spec["user"], attrs["path"], attrs["verb"]) in self.allowed}}


def test_allowed_denied_and_unauthenticated() -> None:
    """200 for a user RBAC allows; 403 naming the user for one it does not; 401 without or
    with an unknown token; the SubjectAccessReview carries the user's uid and groups."""
    api = FakeApi()
    auth = DelegatedAuth(api.post, clock=FakeClock())
    ok = auth.check("Bearer good", "/metrics")
    assert (ok.status, ok.user) == (200, "prom")
    sar = api.calls[-1][1]["spec"]
    assert (sar["uid"], sar["groups"]) == ("u1", ["g"])
    denied = auth.check("Bearer weak", "/metrics")
    assert denied.status == 403 and '"nobody" cannot get path "/metrics"' in denied.reason
    assert auth.check(None, "/metrics").status == 401
    assert auth.check("Basic Zm9vOmJhcg==", "/metrics").status == 401
    assert auth.check("Bearer forged", "/metrics").status == 401
    assert "forged" not in auth.check("Bearer forged", "/metrics").reason


def test_decisions_are_cached_for_the_ttl_then_asked_again() -> None:
    """Within CACHE_TTL no review is sent again; after it, one is."""
    api, clock = FakeApi(), FakeClock()
    auth = DelegatedAuth(api.post, clock=clock)
    auth.check("Bearer good", "/metrics")
    sent = len(api.calls)
    clock.step(CACHE_TTL - 1)
    auth.check("Bearer good", "/metrics")
    assert len(api.calls) == sent
    clock.step(2)
    auth.check("Bearer good", "/metrics")
    assert len(api.calls) == sent + 2


def test_a_failed_review_is_500_and_not_cached() -> None:
    """The API server unreachable: 500, never allowed; the next check asks again."""
    api = FakeApi()
    auth = DelegatedAuth(api.post, clock=FakeClock())
    api.fail = True
    assert auth.check("Bearer good", "/metrics").status == 500
    api.fail = False
    assert auth.check("Bearer good", "/metrics").allowed
