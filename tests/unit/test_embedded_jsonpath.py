"""The JSONPath subset of the embedded server's custom-resource Tables
(kinrun.testing.apiserver.jsonpath), as client-go's jsonpath finds values."""

from __future__ import annotations

import pytest

from kinrun.testing.apiserver.jsonpath import MISSING, find

OBJ = {"status": {"conditions": [{"type": "Other", "status": "False"},
                                 {"type": "Ready", "status": "True", "n": 3}],
                  "map": {"a": {"type": "Ready", "v": 1}}}}


@pytest.mark.parametrize(("path", "expected"), [
    pytest.param(".status.conditions[1].type", "Ready", id="index"),
    pytest.param('.status.conditions[?(@.type=="Ready")].status', "True", id="filter-eq"),
    pytest.param(".status.conditions[?(@.type=='Ready')].status", "True", id="single-quotes"),
    pytest.param('.status.conditions[?(@.type!="Ready")].status', "False", id="filter-ne"),
    pytest.param(".status.conditions[?(@.n>2)].type", "Ready", id="filter-number"),
    pytest.param(".status.conditions[?(@.n)].type", "Ready", id="filter-exists"),
    pytest.param('.status.map[?(@.type=="Ready")].v', 1, id="filter-map-values"),
    pytest.param('.status.conditions[?(@.type=="Gone")].status', MISSING, id="no-match"),
    pytest.param('.status.conditions[?(@.type==3)].status', MISSING, id="type-mismatch"),
    pytest.param(".status.conditions[5]", MISSING, id="index-out-of-range"),
])
def test_find(path: str, expected: object) -> None:
    """The first value a path finds, filters included (MISSING when there is none)."""
    found = find(OBJ, path)
    assert found is MISSING if expected is MISSING else found == expected
