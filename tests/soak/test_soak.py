"""The short fault soak: kinrun through FaultProxy on a real kube-apiserver, then the checks.

One soak runs per session (``soak_result``); each test reads one check of its result, so a
failure names what broke. Figures are printed with ``-s`` and kept in ``result.log_dir``.
"""

from __future__ import annotations

import pytest

from kinrun.hooks import ReconcileContext

from .driver import SoakResult

HAS_REASON = "reason" in getattr(ReconcileContext, "__dataclass_fields__", {})


def _violations(result: SoakResult, name: str) -> list[str]:
    return result.violations.get(name, [])


def test_the_soak_reached_every_kind_of_fault(soak_result: SoakResult) -> None:
    """Faults reached open streams or requests (not only requested), a restart and a wipe among them."""
    reached = {k for k, v in soak_result.faults.items() if v["reached"]}
    assert {"close", "expire", "restart", "wipe"} <= reached, soak_result.summary()
    assert soak_result.faults_reached >= 30, soak_result.summary()


def test_the_cache_equals_the_server_after_it_settles(soak_result: SoakResult) -> None:
    """No missing, extra or stale key against a quorum LIST, and it settled in time."""
    assert soak_result.divergence == {"missing": 0, "extra": 0, "stale": 0}, soak_result.summary()
    assert soak_result.settle_seconds is not None


def test_every_live_objects_last_version_was_reconciled_last(soak_result: SoakResult) -> None:
    """Each object on the server had its final (uid, resourceVersion) reconciled last."""
    assert _violations(soak_result, "final version not reconciled last") == []


@pytest.mark.parametrize("check", [
    "onDelete for a live object",
    "more than one onDelete per departure",
    "onDelete for an object the cache never saw",
    "onDelete without the final state (ctx.old)",
])
def test_deletions_are_sound(soak_result: SoakResult, check: str) -> None:
    """onDelete only after the object stopped matching, at most once per departure, with ctx.old."""
    assert _violations(soak_result, check) == []


def test_every_departure_ends_with_one_ondelete(soak_result: SoakResult) -> None:
    """Every object the cache saw that was deleted, relabelled out or wiped ends with an onDelete."""
    assert _violations(soak_result, "departed object without a final onDelete") == []


@pytest.mark.skipif(not HAS_REASON, reason="ReconcileContext.reason not there yet (Manager)")
def test_deletion_reasons_match_the_op_log(soak_result: SoakResult) -> None:
    """ctx.reason is "deleted", "left" or "unknown" as the writes allow."""
    assert soak_result.reason_checked
    assert _violations(soak_result, "wrong deletion reason") == []


def test_no_key_was_reconciled_by_two_workers_at_once(soak_result: SoakResult) -> None:
    """Per key, reconcile intervals on different threads never overlap."""
    assert _violations(soak_result, "key reconciled by two workers at once") == []


def test_kinrun_drained_and_exited_zero(soak_result: SoakResult) -> None:
    """Nothing hung: SIGTERM after the soak ends kinrun with exit code 0 within 30 s."""
    assert soak_result.exit_code == 0
