"""kinrun.metrics: no *_created series, and controller_runtime_reconcile_panics_total counts
failures with exceptions that are not kinrun's own errors."""

from __future__ import annotations

from prometheus_client import generate_latest

from kinrun.errors import ApiError, PermanentError
from kinrun.metrics import Metrics
from kinrun.reconcile import Result


def sample(metrics: Metrics, name: str, controller: str = "c") -> float:
    return metrics.registry.get_sample_value(name, {"controller": controller}) or 0.0


def test_no_created_series_are_exported() -> None:
    """After a reconcile and an error, the exposition has no *_created line."""
    metrics = Metrics()
    metrics.timed("c", lambda key, obj: Result("retry", error=RuntimeError("x")))("k", None)
    text = generate_latest(metrics.registry).decode()
    assert "controller_runtime_reconcile_errors_total" in text
    assert "_created" not in text


def test_panics_count_foreign_exceptions_only() -> None:
    """A hook's TypeError or a SystemExit is a panic; an ApiError, a PermanentError or a
    success is not; an exception escaping the reconcile is one."""
    metrics = Metrics()
    outcomes = [Result("retry", error=TypeError("hook bug")),
                Result("retry", error=SystemExit(3)),
                Result("retry", error=ApiError("apply refused", status=409)),
                Result("permanent", error=PermanentError("no")), Result("done")]
    for outcome in outcomes:
        metrics.timed("c", lambda key, obj, o=outcome: o)("k", None)

    def escapes(key: str, obj: object) -> None:
        raise KeyError("bug")
    try:
        metrics.timed("c", escapes)("k", None)
    except KeyError:
        pass
    assert sample(metrics, "controller_runtime_reconcile_panics_total") == 3
    assert sample(metrics, "controller_runtime_reconcile_errors_total") == 5
