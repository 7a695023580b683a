"""The config's webhooks compiled, and one AdmissionReview answered by them.

A webhook's rules run in order, each under its optional ``when`` (admission.k8s.io/v1 names
throughout):

* ``deny: MESSAGE`` refuses the request: ``allowed: false``, ``status.code`` 403, reason
  ``Forbidden``, the message (the API server shows it as ``admission webhook "NAME" denied
  the request: MESSAGE``); ``field`` adds ``status.details.causes: [{field, message}]``. The
  first deny ends the review.
* ``warn: MESSAGE`` adds an admission warning (kubectl prints ``Warning: MESSAGE``).
* ``mergePatch`` (RFC 7386) / ``jsonPatch`` (RFC 6902) change the object (mutating webhooks
  only); each applies to the result of the ones before, and the answer carries one JSON patch
  (``patchType: JSONPatch``) from the object as sent to the result (``jsonpatch.make_patch``),
  none when nothing changed.

Templates see ``request`` (the AdmissionReview's request as the API server sent it),
``object``, ``oldObject``, ``operation``, ``userInfo``, ``dryRun``, ``namespace``, ``name``
and the lookups (``get``, ``list``, ``by_index``) over the listers handed in; one budget per
review (``templates.budget``). Nothing a rule does has a side effect, so ``sideEffects:
None`` holds and ``dryRun`` requests are answered as any other.

A rule that fails (a template error, the budget, a patch that does not apply) is the
webhook's own failure: the answer follows the webhook's ``failurePolicy`` as the API server
would had kinrun not answered: ``Fail`` denies with code 500 and the error, ``Ignore``
allows the request unchanged with a warning. Error texts name the rule and the error's type
and template line, never a value (the request may carry a Secret).

Thread-safety: compiled programs are immutable; ``review`` may run on many threads at once.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jsonpatch
import orjson

from kinrun.actions.status import merge_patch
from kinrun.config.model import AdmissionRuleSpec, AdmissionSpec, WebhookSpec
from kinrun.errors import KinrunError
from kinrun.templating import (Expression, Template, TemplateEngine, from_yaml,
                               lookup_functions)

REVIEW_API = "admission.k8s.io/v1"
"""The AdmissionReview version kinrun answers (the only one since Kubernetes 1.22; 1.16+)."""


class RuleFailed(KinrunError):
    """A rule could not be carried out (``rule`` names it); never carries request values."""

    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(f"rule {rule}: {detail}")
        self.rule = rule


@dataclass(frozen=True)
class _Rule:
    name: str
    when: Expression | None
    deny: Template | None
    field: Template | None
    warn: Template | None
    merge_patch: Template | None
    json_patch: Template | None


@dataclass(frozen=True)
class Verdict:
    """What the rules came to: ``denied`` (message, field or None) or None; ``warnings``;
    ``patched``: the object after every patch (None: no patch rule applied)."""

    denied: tuple[str, str | None] | None
    warnings: tuple[str, ...]
    patched: Any


class WebhookProgram:
    """One compiled webhook (``spec``); :meth:`review` answers an AdmissionReview."""

    def __init__(self, spec: WebhookSpec, engine: TemplateEngine) -> None:
        self.spec, self._engine = spec, engine
        rules = spec.mutate if spec.type == "mutating" else spec.validate
        self.rules = tuple(_compile_rule(r, engine, spec.type == "mutating") for r in rules)

    def review(self, review: Mapping[str, Any], listers: Mapping[str, Any] | None = None
               ) -> dict[str, Any]:
        """The AdmissionReview (v1) answering ``review`` (its ``request``). Raises ValueError
        for a body that is not an AdmissionReview with a request (the server answers 400)."""
        request = review.get("request") if isinstance(review, Mapping) else None
        if not isinstance(request, Mapping) or not request.get("uid"):
            raise ValueError("not an AdmissionReview with a request and its uid")
        try:
            verdict = self.decide(request, listers or {})
        except RuleFailed as exc:
            return _answer(request, self._failed(str(exc)))
        return _answer(request, self._response(request, verdict))

    def decide(self, request: Mapping[str, Any], listers: Mapping[str, Any]) -> Verdict:
        """Run the rules on ``request``; RuleFailed when one cannot be carried out."""
        variables = _variables(request, listers)
        warnings: list[str] = []
        current, patched = request.get("object"), False
        with self._engine.budget():
            for rule in self.rules:
                step = _run_rule(rule, variables, current, warnings)
                if isinstance(step, _Denied):
                    return Verdict((step.message, step.field), tuple(warnings), None)
                if step is not None:
                    current, patched = step.object, True
                    variables["object"] = current
        return Verdict(None, tuple(warnings), current if patched else None)

    def _response(self, request: Mapping[str, Any], verdict: Verdict) -> dict[str, Any]:
        out: dict[str, Any] = {"allowed": verdict.denied is None}
        if verdict.denied is not None:
            message, field = verdict.denied
            status: dict[str, Any] = {"code": 403, "reason": "Forbidden", "message": message}
            if field:
                status["details"] = {"causes": [{"field": field, "message": message}]}
            out["status"] = status
        elif verdict.patched is not None:
            ops = jsonpatch.make_patch(request.get("object"), verdict.patched).patch
            if ops:
                out["patchType"] = "JSONPatch"
                out["patch"] = base64.b64encode(orjson.dumps(ops)).decode()
        if verdict.warnings:
            out["warnings"] = list(verdict.warnings)
        return out

    def _failed(self, error: str) -> dict[str, Any]:
        text = f"kinrun webhook {self.spec.name}: {error}"
        if self.spec.failure_policy == "Ignore":
            return {"allowed": True, "warnings": [f"{text} (failurePolicy Ignore: allowed)"]}
        return {"allowed": False, "status": {"code": 500, "reason": "InternalError",
                                             "message": text}}


class AdmissionProgram:
    """Every webhook of ``admission:``, by URL path (``WebhookSpec.path``)."""

    def __init__(self, spec: AdmissionSpec, engine: TemplateEngine,
                 builtins: Mapping[str, Any] | None = None) -> None:
        self.spec = spec
        self.webhooks = {w.path: (builtins or {})[w.path] if w.builtin else
                         WebhookProgram(w, engine) for w in spec.webhooks}

    def webhook(self, path: str) -> WebhookProgram | None:
        """The webhook served at ``path``, or None."""
        return self.webhooks.get(path)


def compile_admission(spec: AdmissionSpec | None, engine: TemplateEngine,
                      builtins: Mapping[str, Any] | None = None) -> AdmissionProgram | None:
    """``admission:`` compiled (None when absent). ``builtins``: path -> the program of each
    webhook kinrun serves itself (``WebhookSpec.builtin``: ``kinrun.sharding.admission``'s
    shard webhook), with ``spec`` and ``review`` as WebhookProgram. Raises ConfigError at the
    rule's file:line for template syntax, a patch in a validating webhook, rules of the other
    type, a rule that does nothing, two webhooks of one name."""
    if spec is None:
        return None
    seen: set[str] = set()
    for w in spec.webhooks:
        if w.name in seen:
            raise w.location.error(f"two webhooks are named {w.name}")
        seen.add(w.name)
        other = w.validate if w.type == "mutating" else w.mutate
        if other:
            key = "validate" if w.type == "mutating" else "mutate"
            raise w.location.error(f"a {w.type} webhook takes "
                                   f"{'mutate' if key == 'validate' else 'validate'}:, not {key}:")
    return AdmissionProgram(spec, engine, builtins)


# -- rules -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Denied:
    message: str
    field: str | None


@dataclass(frozen=True)
class _Patched:
    object: Any


def _compile_rule(spec: AdmissionRuleSpec, engine: TemplateEngine, mutating: bool) -> _Rule:
    loc = spec.location
    if not mutating and (spec.merge_patch or spec.json_patch):
        raise loc.error("mergePatch and jsonPatch need a mutating webhook")
    if spec.merge_patch and spec.json_patch:
        raise loc.error("a rule has mergePatch or jsonPatch, not both")
    if not (spec.deny or spec.warn or spec.merge_patch or spec.json_patch):
        raise loc.error("a rule does nothing: give deny, warn, mergePatch or jsonPatch")
    if spec.field and not spec.deny:
        raise loc.error("field names the field of a deny")

    def template(source: str | None) -> Template | None:
        return engine.template(source, loc) if source else None
    when = engine.value(spec.when, loc) if spec.when else None
    return _Rule(spec.name, when, template(spec.deny),  # type: ignore[arg-type]
                 template(spec.field), template(spec.warn), template(spec.merge_patch),
                 template(spec.json_patch))


def _run_rule(rule: _Rule, variables: dict[str, Any], current: Any,
              warnings: list[str]) -> _Denied | _Patched | None:
    """What ``rule`` did: denied, patched (the new object), or nothing more than warn."""
    try:
        if rule.when is not None and not rule.when.evaluate(variables):
            return None
        if rule.deny is not None:
            field = rule.field.render(variables).strip() if rule.field is not None else None
            return _Denied(rule.deny.render(variables).strip(), field or None)
        if rule.warn is not None:
            warnings.append(rule.warn.render(variables).strip())
        if rule.merge_patch is not None:
            return _Patched(_merge(rule, rule.merge_patch.render(variables), current))
        if rule.json_patch is not None:
            return _Patched(_json_patch(rule, rule.json_patch.render(variables), current))
    except RuleFailed:
        raise
    except KinrunError as exc:
        raise RuleFailed(rule.name, f"{type(exc).__name__}: {_line(exc)}") from None
    return None


def _merge(rule: _Rule, text: str, current: Any) -> Any:
    patch = _document(rule, text, "mergePatch")
    if not isinstance(patch, dict):
        raise RuleFailed(rule.name, f"mergePatch rendered a {type(patch).__name__}, not a "
                                    "mapping")
    return merge_patch(current, patch)


def _json_patch(rule: _Rule, text: str, current: Any) -> Any:
    ops = _document(rule, text, "jsonPatch")
    if not isinstance(ops, list):
        raise RuleFailed(rule.name, f"jsonPatch rendered a {type(ops).__name__}, not a list")
    try:
        return jsonpatch.apply_patch(current, ops)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError,
            KeyError) as exc:
        raise RuleFailed(rule.name, f"jsonPatch does not apply: {type(exc).__name__}") from None


def _document(rule: _Rule, text: str, what: str) -> Any:
    try:
        return from_yaml(text)
    except Exception as exc:  # a YAML error quotes the text: name its type only
        raise RuleFailed(rule.name, f"{what} is not YAML/JSON: {type(exc).__name__}") from None


def _line(exc: KinrunError) -> str:
    line = getattr(exc, "template_line", None)
    detail = str(getattr(exc, "detail", "") or exc).splitlines()[0]
    return f"{detail} (template line {line})" if line else detail


def _variables(request: Mapping[str, Any], listers: Mapping[str, Any]) -> dict[str, Any]:
    return {"request": request, "object": request.get("object"),
            "oldObject": request.get("oldObject"), "operation": request.get("operation"),
            "userInfo": request.get("userInfo") or {}, "dryRun": bool(request.get("dryRun")),
            "namespace": request.get("namespace") or "", "name": request.get("name") or "",
            **lookup_functions(listers)}


def _answer(request: Mapping[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": REVIEW_API, "kind": "AdmissionReview",
            "response": {"uid": request["uid"], **response}}
