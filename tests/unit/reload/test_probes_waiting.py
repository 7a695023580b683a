"""/readyz names the informers that wait for their kind (a CRD not installed yet)."""

from __future__ import annotations

from kinrun.probes import Probes


def test_readyz_fails_while_an_informer_waits_for_its_kind() -> None:
    probes = Probes(stuck_reconcile_after=60)
    probes.watch_informers(lambda: [])
    waiting = {"widgets": "kinrun.yaml:5:3: informers.widgets: unknown apiVersion 'x.dev/v1'"}
    probes.watch_waiting(lambda: dict(waiting))
    ok, body = probes.readyz()
    assert not ok
    assert "[-]informer widgets: waiting: kinrun.yaml:5:3: informers.widgets" in body
    waiting.clear()  # the CRD was installed, the informer started
    assert probes.readyz() == (True, "ok\n")
