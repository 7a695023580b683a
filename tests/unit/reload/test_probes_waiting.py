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


def test_served_probes_report_waiting_informers_from_the_first_answer() -> None:
    """``kinrun run`` serves the probes before the Manager starts; an informer waiting for
    its kind is reported then, not only once the reload loop runs (a /readyz between
    ``kinrun running`` and the loop's start answered 200)."""
    import threading

    from kinrun.config import load_text
    from kinrun.runnables import ProbesEndpoint

    class Manager:
        factory = type("F", (), {"informers": staticmethod(dict)})()

        @staticmethod
        def waiting_informers() -> dict[str, str]:
            return {"widgets": "kinrun.yaml:5:3: not served"}

        @staticmethod
        def unhandled_initial_lists() -> list[str]:
            return []

    config = load_text("apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"
                       "probes: {port: 0, address: 127.0.0.1}\n"
                       "informers: {cms: {apiVersion: v1, kind: ConfigMap}}\n"
                       "controllers: [{name: a, for: cms, reconcile: {actions: [{log: x}]}}]\n",
                       file="kinrun.yaml")
    probes = Probes(stuck_reconcile_after=60)
    endpoint = ProbesEndpoint(probes, config.probes, Manager())
    assert endpoint.start(threading.Event())
    try:
        ok, body = probes.readyz()
    finally:
        endpoint.stop()
    assert not ok and "[-]informer widgets: waiting: kinrun.yaml:5:3" in body
