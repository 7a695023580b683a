"""A plugin's kinrun_reconcile may return a kinrun.Result (the core's typed outcome) as well
as the original None / seconds, and a reconcile acts on it."""

from __future__ import annotations

import pytest

import kinrun
from kinrun import PermanentError, Result, TemporaryError, hookimpl
from kinrun.hooks import ReconcileContext
from kinrun.plugin_manager import new_plugin_manager, reconcile_caller
from kinrun.reconcile import Reconciler


def caller_returning(*answers: object):
    pm = new_plugin_manager()
    for i, answer in enumerate(answers):
        class Plugin:
            @hookimpl
            def kinrun_reconcile(self, controller, key, obj, ctx, answer=answer):
                return answer
        pm.register(Plugin(), name=f"p{i}")
    return reconcile_caller(pm, True)


@pytest.mark.parametrize(("answers", "delay"), [
    pytest.param((Result.after(5.0),), 5.0, id="requeue"),
    pytest.param((Result("done"),), None, id="done"),
    pytest.param((Result.after(30.0), 7, None), 7.0, id="mixed-with-seconds"),
    pytest.param((Result("done"), Result.after(2.5)), 2.5, id="smallest-wins"),
])
def test_a_hook_may_return_a_result(answers, delay):
    """Results combine with numbers: the smallest requeue delay wins; done asks none."""
    assert caller_returning(*answers)("c", "ns/x", None, ReconcileContext("c", "ns/x")) == delay


@pytest.mark.parametrize(("answer", "error"), [
    pytest.param(Result.failed(PermanentError("bad spec")), PermanentError, id="permanent"),
    pytest.param(Result("retry", 3.0), TemporaryError, id="retry-after"),
])
def test_a_failed_result_fails_the_reconcile_as_raising_would(answer, error):
    """A retry/permanent Result makes the reconcile's outcome what raising its error makes."""
    reconcile = Reconciler("c", hooks=caller_returning(answer))
    result = reconcile("ns/x", {"metadata": {"name": "x", "namespace": "ns", "uid": "u"}})
    assert isinstance(result.error, error)
    assert result.outcome == ("permanent" if error is PermanentError else "retry")


def test_the_public_face_names_result_and_cause():
    """Plugin authors import the typed result and the cause from kinrun itself."""
    assert kinrun.Result is Result and kinrun.Cause.__name__ == "Cause"
    assert kinrun.DeletedFinalStateUnknown.__name__ == "DeletedFinalStateUnknown"
    assert {kinrun.ApiRequest.__name__, kinrun.LogLine.__name__, kinrun.RequeueAfter.__name__} \
        == {"ApiRequest", "LogLine", "RequeueAfter"}
    assert sorted(kinrun.__all__) == kinrun.__all__


@pytest.mark.parametrize("answer", [
    pytest.param(float("nan"), id="nan-seconds"),
    pytest.param(float("inf"), id="infinite-seconds"),
    pytest.param(-5, id="negative-seconds"),
    pytest.param(Result("requeue", float("nan")), id="nan-result-delay"),
])
def test_a_delay_that_is_no_number_of_seconds_fails_the_reconcile(answer):
    """NaN, infinite or negative delays are a plugin's bug: the reconcile fails (retried)
    naming the answer; a NaN was taken as done before."""
    reconcile = Reconciler("c", hooks=caller_returning(answer))
    result = reconcile("ns/x", {"metadata": {"name": "x", "namespace": "ns", "uid": "u"}})
    assert result.outcome == "retry" and "kinrun_reconcile returned" in str(result.error)


def test_a_result_with_an_unknown_outcome_is_refused_where_it_is_built():
    with pytest.raises(ValueError, match="'whatever' is not one of done, requeue, retry"):
        Result("whatever")  # type: ignore[arg-type]
