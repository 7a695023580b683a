"""Fixtures for the reconcile tests: a fake clock and pipelines built by ``reconcile_fakes``."""

from __future__ import annotations

import pytest
from reconcile_fakes import Pipeline

from kinrun.clock import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def pipeline(clock):
    pipes = []

    def make(**kw) -> Pipeline:
        pipe = Pipeline(clock, **kw)
        pipes.append(pipe)
        return pipe
    yield make
    for pipe in pipes:
        pipe.stop()
