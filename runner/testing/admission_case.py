"""The model of a ``kinrun test`` admission case (``admission:``, ``expect.admission``):
pure data, built from a test file's mappings (already schema-checked); run and compared by
``kinrun.testing.admission``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_USER = {"username": "kinrun-test"}
"""``userInfo`` of a request that names none."""


@dataclass(frozen=True)
class AdmissionCase:
    """A case's ``admission:``: ``webhook`` (a name, or None: every matching one),
    ``operation``, ``object`` (None for DELETE), ``old_object`` (UPDATE, DELETE; else None),
    ``user_info``, ``dry_run``."""

    object: Mapping[str, Any] | None = None
    operation: str = "CREATE"
    webhook: str | None = None
    old_object: Mapping[str, Any] | None = None
    user_info: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULT_USER))
    dry_run: bool = False


@dataclass(frozen=True)
class ExpectedAdmission:
    """``expect.admission``; None parts are not checked."""

    allowed: bool | None = None
    message: str | None = None
    code: int | None = None
    field: str | None = None
    warnings: tuple[str, ...] | None = None
    object: Mapping[str, Any] | None = None
    patched: bool | None = None


def case_from(data: Mapping[str, Any]) -> AdmissionCase:
    """The model of a case's ``admission:`` mapping (already schema-checked)."""
    return AdmissionCase(object=data.get("object"), operation=data.get("operation", "CREATE"),
                         webhook=data.get("webhook"), old_object=data.get("oldObject"),
                         user_info=data.get("userInfo") or dict(DEFAULT_USER),
                         dry_run=bool(data.get("dryRun", False)))


def expected_from(data: Mapping[str, Any]) -> ExpectedAdmission:
    """The model of ``expect.admission``."""
    warnings = data.get("warnings")
    return ExpectedAdmission(data.get("allowed"), data.get("message"), data.get("code"),
                             data.get("field"), tuple(warnings) if warnings is not None else None,
                             data.get("object"), data.get("patched"))


