"""Fixtures for the pipeline tests: a fake clock and an in-memory API server."""

from __future__ import annotations

import pytest

from kinrun.cache import SharedIndexInformer
from kinrun.clock import FakeClock
from kinrun.testing.memory import MemoryListerWatcher


@pytest.fixture
def clock() -> FakeClock:
    """A fake clock at t=1000 s that moves only when stepped."""
    return FakeClock()


@pytest.fixture
def server() -> MemoryListerWatcher:
    """An in-memory Pod collection."""
    return MemoryListerWatcher()


@pytest.fixture
def make_informer():
    """``make(lister_watcher, **kwargs)`` -> a SharedIndexInformer, stopped after the test."""
    informers = []

    def make(lw, **kw):
        informer = SharedIndexInformer(lw, **kw)
        informers.append(informer)
        return informer
    yield make
    for informer in informers:
        informer.stop()
