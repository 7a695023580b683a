"""Fixtures for templated actions (helpers live in actions_fakes.py)."""

from __future__ import annotations

from typing import Any

import pytest
from actions_fakes import FakeLister, load_object

from kinrun.hooks import ReconcileContext


@pytest.fixture
def pod() -> dict[str, Any]:
    return load_object("pod-web")


@pytest.fixture
def listers() -> dict[str, FakeLister]:
    pods = [load_object("pod-web"), load_object("pod-db"), load_object("pod-pending")]
    by_node = {"byNode": lambda o: [o["spec"]["nodeName"]] if o["spec"].get("nodeName") else []}
    return {"pods": FakeLister(pods, by_node), "nodes": FakeLister([load_object("node-a")])}


@pytest.fixture
def ctx(listers: dict[str, FakeLister]) -> ReconcileContext:
    return ReconcileContext(controller="web", key="shop/web-1", listers=listers)
