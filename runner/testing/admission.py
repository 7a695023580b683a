"""``kinrun test`` admission cases: one AdmissionReview sent to the config's webhooks, and its
answer checked.

A case with ``admission:`` (``schemas/kinrun-test.schema.json``) runs its ``given`` objects
and ``when`` steps as any case, then builds the request the API server would send
(admission.k8s.io/v1: a fixed uid, the object's kind and resource, namespace, name,
operation, ``userInfo``, ``dryRun``; ``object`` and ``oldObject`` as the case gives them
for its operation, DELETE's ``object`` null; the runner decodes and defaults them first, as
the case's server does a write) and answers it in-process through the same
``kinrun.admission.WebhookProgram.review`` that the HTTPS server calls, with the lookups
reading the case's caches. Without ``webhook:`` every webhook whose rules match the request
answers, mutating ones first, each seeing the object the ones before patched, as
kube-apiserver calls them; the first denial ends it. ``expect.admission`` compares the
combined answer: allowed, the denial's message (a regex), code and field, the warnings, the
object after the patches (containment, as requests' bodies) and whether any patch came.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
import orjson

from kinrun.testing.admission_case import AdmissionCase, ExpectedAdmission
from kinrun.testing.expectations import Failure, contains

UID = "00000000-0000-0000-0000-00000000ad01"
"""The uid of every test AdmissionReview (answers echo it)."""


@dataclass
class Answer:
    """The combined answer: ``allowed``, ``status`` (of the denial, or None), ``warnings``,
    ``object`` (after every patch), ``patched``, ``webhooks`` (the names that answered)."""

    allowed: bool = True
    status: Mapping[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    object: Any = None
    patched: bool = False
    webhooks: list[str] = field(default_factory=list)


def answer(program: Any, case: AdmissionCase, resource: Mapping[str, str],
           listers: Mapping[str, Any]) -> Answer:
    """Send ``case`` through ``program``'s webhooks (a ``kinrun.admission.AdmissionProgram``);
    ``resource``: ``{group, version, resource}`` of the object's kind. Raises LookupError
    naming the webhooks for a ``webhook`` that does not exist or no webhook that matches."""
    hooks = _webhooks(program, case, resource)
    out = Answer(object=_copy(case.object))
    for hook in hooks:
        response = hook.review({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                "request": _request(case, resource, out.object)},
                               listers)["response"]
        out.webhooks.append(hook.spec.name)
        out.warnings += response.get("warnings") or []
        if not response.get("allowed"):
            out.allowed, out.status = False, response.get("status") or {}
            return out
        if response.get("patch"):
            ops = orjson.loads(base64.b64decode(response["patch"]))
            out.object, out.patched = jsonpatch.apply_patch(out.object, ops), True
    return out


def _webhooks(program: Any, case: AdmissionCase, resource: Mapping[str, str]) -> list[Any]:
    every = list(program.webhooks.values())
    if case.webhook is not None:
        chosen = [w for w in every if w.spec.name == case.webhook]
        if not chosen:
            raise LookupError(f"no webhook {case.webhook!r} (the config has "
                              f"{', '.join(w.spec.name for w in every) or 'none'})")
        return chosen
    matching = [w for w in every if _matches(w.spec, case.operation, resource)]
    if not matching:
        raise LookupError(f"no webhook of the config matches {case.operation} "
                          f"{resource['resource']}")
    return sorted(matching, key=lambda w: w.spec.type != "mutating")


def _matches(spec: Any, operation: str, resource: Mapping[str, str]) -> bool:
    """The webhook's rules as the API server matches them (``*`` wildcards)."""
    def has(values: Sequence[str], value: str) -> bool:
        return "*" in values or value in values
    return any(has(r["operations"], operation) and has(r["apiGroups"], resource["group"])
               and has(r["apiVersions"], resource["version"])
               and has(r["resources"], resource["resource"]) for r in spec.rules)


def _request(case: AdmissionCase, resource: Mapping[str, str], obj: Any) -> dict[str, Any]:
    """``obj``: the object as patched so far (None for DELETE: the subject is the old one)."""
    subject = obj if obj is not None else case.old_object or {}
    meta = subject.get("metadata") or {}
    group, version = resource["group"], resource["version"]
    kind = {"group": group, "version": version, "kind": subject.get("kind", "")}
    request = {"uid": UID, "kind": kind, "resource": dict(resource), "requestKind": dict(kind),
               "name": meta.get("name", ""), "operation": case.operation,
               "userInfo": dict(case.user_info), "dryRun": case.dry_run,
               "object": _copy(obj), "oldObject": _copy(case.old_object)}
    if meta.get("namespace"):
        request["namespace"] = meta["namespace"]
    return request


def check_admission(expected: ExpectedAdmission, got: Answer) -> list[Failure]:
    """The ``admission`` failure, or []."""
    problems = []
    status = got.status or {}
    causes = (status.get("details") or {}).get("causes") or []
    if expected.allowed is not None and expected.allowed != got.allowed:
        problems.append(f"allowed: expected {expected.allowed}, got {got.allowed}"
                        + (f" ({status.get('message')})" if status.get("message") else ""))
    if expected.message is not None and not re.search(expected.message,
                                                      str(status.get("message", ""))):
        problems.append(f"message: {expected.message!r} not found in "
                        f"{status.get('message', '(allowed: no message)')!r}")
    if expected.code is not None and expected.code != status.get("code"):
        problems.append(f"code: expected {expected.code}, got {status.get('code')}")
    if expected.field is not None and expected.field not in [c.get("field") for c in causes]:
        problems.append(f"field: expected {expected.field!r}, got "
                        f"{[c.get('field') for c in causes]}")
    if expected.warnings is not None and list(expected.warnings) != got.warnings:
        problems.append(f"warnings: expected {list(expected.warnings)}, got {got.warnings}")
    if expected.object is not None and not contains(expected.object, got.object):
        problems.append("object: the expected fields are not in the patched object: "
                        f"{orjson.dumps(got.object).decode()}")
    if expected.patched is not None and expected.patched != got.patched:
        problems.append(f"patched: expected {expected.patched}, got {got.patched}")
    if not problems:
        return []
    return [Failure("admission", f"admission ({', '.join(got.webhooks) or 'no webhook'}): "
                                 + "; ".join(problems))]


def _copy(value: Any) -> Any:
    return None if value is None else orjson.loads(orjson.dumps(value))
