"""The test file of ``kinrun test``: cases for one config, loaded and checked.

A test file (``schemas/kinrun-test.schema.json`` is the truth; docs/testing.md)::

    apiVersion: kinrun.dev/v1alpha1
    kind: ControllerTest
    config: ../configs/pod-logger.yaml      # relative to this file
    cases:
      - name: logs a new pod
        given: [{apiVersion: v1, kind: Pod, metadata: {name: web, namespace: default}}]
        when:
          - updated: {to: {file: web-v2.yaml}}
          - updated: {key: default/web, merge: {metadata: {labels: {tier: front}}}}
          - after: 30s
        expect:
          requests: []
          results: {default/web: done}
          logs: ["Sync/Add/Update for Pod web", {absent: "error", step: 3}]

Loading goes through the config's loader (``kinrun.config.loader.load_yaml``: line/column
marks, YAML 1.1 surprises refused) and a draft 2020-12 validator of that schema, so every
error reads ``file:line:column: key.path: message`` as the config's do; all of a file's
errors are raised together (``ConfigErrors``). ``file:`` references are read here (paths
relative to the test file). Purely data and file reading; frozen dataclasses.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from kinrun import safe_yaml
from kinrun.config import ConfigErrors
from kinrun.config import schema as config_schema
from kinrun.config.loader import LoadedYaml, PathKey, load_yaml
from kinrun.config.parse import read_file_text
from kinrun.durations import parse_duration
from kinrun.errors import ConfigError

SCHEMA_FILE = "kinrun-test.schema.json"

Obj = dict[str, Any]
STEP_KINDS = ("added", "updated", "deleted", "reconcile", "after")
OUTCOMES = ("done", "requeue", "retry", "permanent")
REQUEST_OBJECTS = {"CREATE": ("object",), "UPDATE": ("object", "oldObject"),
                   "DELETE": ("oldObject",), "CONNECT": ("object",)}
"""The objects of an AdmissionReview request per operation, as kube-apiserver sends them
(the others are null)."""


@functools.cache
def test_schema() -> dict[str, Any]:
    """The test file's JSON Schema (package ``kinrun.schemas``; cached, do not modify)."""
    text = importlib.resources.files(config_schema.SCHEMA_PACKAGE).joinpath(SCHEMA_FILE)
    return json.loads(text.read_text("utf-8"))


@functools.cache
def _validator() -> jsonschema.protocols.Validator:
    return config_schema.validator_class()(test_schema())


# -- the model --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ref:
    """An object named by a step: ``api_version``/``kind`` (None: the controller's primary
    kind, resolved by the runner), ``name``, ``namespace`` (None: cluster-scoped)."""

    api_version: str | None
    kind: str | None
    name: str
    namespace: str | None

    def __str__(self) -> str:
        target = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {target}" if self.kind else target


@dataclass(frozen=True)
class Step:
    """One ``when`` step: ``kind`` one of :data:`STEP_KINDS`; ``objects`` (added: what to
    create; updated: ``to``), ``before`` (updated: ``from``, or ()), ``ref`` (deleted, and
    updated with ``merge``), ``merge`` (updated: the JSON merge patch, or None), ``key``
    (reconcile), ``seconds`` (after); ``where``: ``file:line:col: when[i]``."""

    kind: str
    where: str
    objects: tuple[Obj, ...] = ()
    before: tuple[Obj, ...] = ()
    ref: Ref | None = None
    key: str = ""
    seconds: float = 0.0
    merge: Obj | None = None

    def describe(self) -> str:
        """One line for messages: ``added ConfigMap default/x``, ``after 30s``."""
        if self.merge is not None:
            return f"updated {self.ref} (merge)"
        if self.kind in ("added", "updated"):
            return f"{self.kind} " + ", ".join(object_label(o) for o in self.objects)
        if self.kind == "deleted":
            return f"deleted {self.ref}"
        if self.kind == "reconcile":
            return f"reconcile {self.key}"
        return f"after {self.seconds:g}s"


@dataclass(frozen=True)
class ExpectedResult:
    """``outcome`` (:data:`OUTCOMES`), ``after`` (seconds, or None: any), ``message`` (a
    regular expression the error must match, or None)."""

    outcome: str
    after: float | None = None
    message: str | None = None


@dataclass(frozen=True)
class ExpectedLog:
    """One ``logs`` entry: ``pattern`` (a regular expression, ``re.search``); ``step`` (the
    line must be of that step: 0 the start, i after ``when[i-1]``; None: any); ``absent``
    (no line may match; such entries take no part in the order)."""

    pattern: str
    step: int | None = None
    absent: bool = False


@dataclass(frozen=True)
class Expect:
    """What a case checks; None: not checked. ``requests``: expected request mappings (as
    written, ``key``/``body``/``bodyEquals`` included); ``results``: key -> ExpectedResult;
    ``logs``: ExpectedLogs, the present ones in order."""

    requests: tuple[Mapping[str, Any], ...] | None = None
    results: Mapping[str, ExpectedResult] | None = None
    logs: tuple[ExpectedLog, ...] | None = None
    admission: Any = None  # kinrun.testing.admission.ExpectedAdmission | None


@dataclass(frozen=True)
class Case:
    """One case: ``name``, ``controller`` (None: every controller), ``given`` objects,
    ``steps``, ``expect``; ``where``: ``file:line:col: cases[i]`` (for errors); ``admission``:
    the AdmissionReview request to send after the steps (``kinrun.testing.admission``)."""

    name: str
    controller: str | None
    given: tuple[Obj, ...]
    steps: tuple[Step, ...]
    expect: Expect
    where: str
    admission: Any = None  # kinrun.testing.admission.AdmissionCase | None (``admission:``)


@dataclass(frozen=True)
class TestFile:
    """A loaded test file: ``file`` (as given), ``config`` (the config's path, resolved),
    ``config_where`` (location of ``config:``), ``timeout`` (seconds per step), ``cases``."""

    __test__ = False  # not a pytest class

    file: str
    config: Path
    config_where: str
    timeout: float
    cases: tuple[Case, ...]


def object_label(obj: Obj) -> str:
    """``Kind namespace/name`` (``Kind name`` when cluster-scoped)."""
    meta = obj.get("metadata") or {}
    target = f"{meta['namespace']}/{meta.get('name')}" if meta.get("namespace") \
        else str(meta.get("name"))
    return f"{obj.get('kind')} {target}"


# -- loading ----------------------------------------------------------------------------------


def load_test_file(path: str | Path) -> TestFile:
    """Load, validate and build the test file at ``path``.

    Raises ConfigErrors listing every problem (unreadable file, YAML, schema, a missing
    ``config`` or ``file:`` reference, a ``file:`` that holds no Kubernetes object), each
    ``file:line:column: key.path: message``. The config itself is not loaded here."""
    file = str(path)
    loaded = load_yaml(read_file_text(path), file)
    if loaded.errors:
        raise ConfigErrors(loaded.errors)
    errors = validate(loaded)
    if errors:
        raise ConfigErrors(errors)
    builder = _Builder(loaded, Path(path).resolve().parent)
    result = builder.build()
    if builder.errors:
        raise ConfigErrors(config_schema.sort_errors(builder.errors))
    return result


def validate(loaded: LoadedYaml) -> list[ConfigError]:
    """Every schema error of ``loaded.data``, located and worded as the config's
    (``kinrun.config.schema``), sorted by position."""
    errors = []
    for error in _validator().iter_errors(loaded.data):
        described = config_schema.describe_error(error)
        if not described:  # a oneOf of scalars: say why the closest branch refused it
            described = [(tuple(error.absolute_path), _closest_branch(error), False)]
        for key_path, message, at_key in described:
            errors.append(config_schema.locate(loaded, key_path, message, at_key=at_key))
    return config_schema.sort_errors(errors)


def _closest_branch(error: jsonschema.ValidationError) -> str:
    best = jsonschema.exceptions.best_match(error.context) if error.context else None
    hint = (best.schema.get("x-kinrun-message") if best is not None else None) \
        or error.schema.get("description") or error.message
    return f"{config_schema.show(error.instance)} {hint}" if best is not None \
        and best.schema.get("x-kinrun-message") else f"{config_schema.show(error.instance)}: {hint}"


class _Builder:
    """Schema-valid data -> TestFile; collects located errors for file references."""

    def __init__(self, loaded: LoadedYaml, base: Path) -> None:
        self.loaded, self.base = loaded, base
        self.errors: list[ConfigError] = []

    def error(self, path: PathKey, message: str) -> None:
        self.errors.append(config_schema.locate(self.loaded, path, message))

    def where(self, path: PathKey) -> str:
        """``file:line:column: key.path`` of ``path``."""
        err = config_schema.locate(self.loaded, path, "")
        return str(err)[:-2]  # drop the empty message's ": "

    def build(self) -> TestFile:
        data = self.loaded.data
        config = (self.base / data["config"]).resolve()
        if not config.is_file():
            self.error(("config",), f"no such config file: {config}")
        default_timeout = test_schema()["properties"]["timeout"]["default"]
        timeout = parse_duration(data.get("timeout", default_timeout))
        cases = tuple(self.case(c, ("cases", i)) for i, c in enumerate(data["cases"]))
        names = [c.name for c in cases]
        for i, name in enumerate(names):
            if name in names[:i]:
                self.error(("cases", i, "name"), f"duplicate case name {name!r}")
        return TestFile(self.loaded.file, config, self.where(("config",)), timeout, cases)

    def case(self, data: Obj, path: PathKey) -> Case:
        given = self.given(data.get("given") or [], path + ("given",))
        steps = tuple(self.step(s, path + ("when", i)) for i, s in enumerate(data.get("when") or []))
        from kinrun.testing.admission_case import case_from

        admission = None
        if "admission" in data:
            self.request_objects(data["admission"], path + ("admission",))
            admission = case_from(data["admission"])
        expect = self.expect(data["expect"], path + ("expect",))
        self.log_steps(expect, len(steps), path + ("expect", "logs"))
        return Case(data["name"], data.get("controller"), given, steps, expect,
                    self.where(path), admission)

    def request_objects(self, data: Obj, path: PathKey) -> None:
        """The objects an admission case's ``operation`` sends (:data:`REQUEST_OBJECTS`, as
        kube-apiserver): each one it sends is required, any other absent or null."""
        operation = data.get("operation", "CREATE")
        sends = REQUEST_OBJECTS[operation]
        for key, what in (("object", "the object as sent"), ("oldObject", "the object before")):
            if key in sends and data.get(key) is None:
                self.error(path, f"{operation} needs {key!r} ({what})")
            elif key not in sends and data.get(key) is not None:
                hint = ": give the object being deleted as oldObject" \
                    if operation == "DELETE" else ""
                self.error(path + (key,), f"{operation} sends no {key} "
                           f"(kube-apiserver sends {key}: null){hint}")

    def given(self, items: list[Obj], path: PathKey) -> tuple[Obj, ...]:
        """The ``given`` objects; two with one identity (apiVersion, kind, namespace, name) are
        an error at the second's entry: the server would hold only the last (as it refuses an
        ``added:`` step of an object that exists)."""
        given: list[Obj] = []
        seen: dict[tuple[Any, ...], int] = {}
        for i, item in enumerate(items):
            for obj in self.objects(item, path + (i,)):
                meta = obj.get("metadata") or {}
                identity = (obj.get("apiVersion"), obj.get("kind"), meta.get("namespace"),
                            meta.get("name"))
                if identity in seen:
                    self.duplicate(obj, path, seen[identity], i, "file" in item)
                seen.setdefault(identity, i)
                given.append(obj)
        return tuple(given)

    def duplicate(self, obj: Obj, path: PathKey, first: int, second: int, file: bool) -> None:
        """The error of ``given[second]`` repeating an object of ``given[first]``."""
        def line(i: int) -> str:
            return f"given[{i}] (line {config_schema.locate(self.loaded, path + (i,), '').line})"
        both = f"{line(first)}, in two of its documents" if first == second \
            else f"{line(first)} and {line(second)}"
        self.error(path + (second,) + (("file",) if file else ()),
                   f"{object_label(obj)} is given twice: {both}; the server would hold only "
                   f"the last: give it once")

    def step(self, data: Obj, path: PathKey) -> Step:
        kind = next(k for k in STEP_KINDS if k in data)
        value, where = data[kind], self.where(path)
        if kind == "added":
            return Step(kind, where, objects=self.objects(value, path + (kind,)))
        if kind == "updated" and "merge" in value:
            ref = _ref(value["key"])
            if "kind" in value:
                ref = Ref(value["apiVersion"], value["kind"], ref.name, ref.namespace)
            return Step(kind, where, ref=ref, merge=value["merge"])
        if kind == "updated":
            before = self.objects(value["from"], path + (kind, "from")) if "from" in value else ()
            return Step(kind, where, objects=self.objects(value["to"], path + (kind, "to")),
                        before=before)
        if kind == "deleted":
            return Step(kind, where, ref=_ref(value))
        if kind == "reconcile":
            return Step(kind, where, key=value)
        return Step(kind, where, seconds=parse_duration(value))

    def objects(self, item: Obj, path: PathKey) -> tuple[Obj, ...]:
        """An inline object, or the objects of a ``file:`` (every YAML document)."""
        if "file" not in item:
            return (item,)
        target = (self.base / item["file"]).resolve()
        try:
            docs = [d for d in safe_yaml.load_all(target.read_text(encoding="utf-8"),
                                                    safe_yaml.StrictObjectLoader)
                    if d is not None]
        except OSError as exc:
            self.error(path + ("file",), f"cannot read {target}: {exc.strerror}")
            return ()
        except yaml.YAMLError as exc:
            self.error(path + ("file",), f"{target}: not YAML: {exc}")
            return ()
        bad = [d for d in docs if not _is_object(d)]
        if bad or not docs:
            self.error(path + ("file",), f"{target}: every document must be a Kubernetes "
                       f"object (apiVersion, kind, metadata.name)")
            return ()
        return tuple(docs)

    def expect(self, data: Obj, path: PathKey) -> Expect:
        requests = tuple(data["requests"]) if "requests" in data else None
        results = {key: _result(value) for key, value in data["results"].items()} \
            if "results" in data else None
        logs = tuple(_log(item) for item in data["logs"]) if "logs" in data else None
        for i, entry in enumerate(logs or ()):
            self.regex(entry.pattern, path + ("logs", i) + (() if isinstance(
                data["logs"][i], str) else ("absent" if entry.absent else "match",)))
        for i, request in enumerate(requests or ()):
            if "error" in request:
                self.regex(request["error"], path + ("requests", i, "error"))
        for key, value in (results or {}).items():
            if value.message is not None:
                self.regex(value.message, path + ("results", key, "message"))
        admission = None
        if "admission" in data:
            from kinrun.testing.admission_case import expected_from

            admission = expected_from(data["admission"])
            if admission.message is not None:
                self.regex(admission.message, path + ("admission", "message"))
        return Expect(requests, results, logs, admission)

    def log_steps(self, expect: Expect, steps: int, path: PathKey) -> None:
        """A ``logs`` entry's ``step`` must be one the case has: 0 (the start) to ``steps``
        (its ``when`` steps); a check of a step that never runs would pass or fail vacuously."""
        for i, entry in enumerate(expect.logs or ()):
            if entry.step is not None and entry.step > steps:
                has = "and it has no when steps" if not steps else \
                    f"{steps} its when step" if steps == 1 else f"1 to {steps} its when steps"
                self.error(path + (i, "step"), f"the case has no step {entry.step}: step 0 is "
                           f"the start, {has}")

    def regex(self, pattern: str, path: PathKey) -> None:
        try:
            re.compile(pattern)
        except re.error as exc:
            self.error(path, f"{pattern!r} is not a regular expression: {exc}")


def _is_object(doc: Any) -> bool:
    return isinstance(doc, dict) and bool(doc.get("apiVersion")) and bool(doc.get("kind")) \
        and isinstance(doc.get("metadata"), dict) and bool(doc["metadata"].get("name"))


def _ref(value: str | Obj) -> Ref:
    if isinstance(value, str):
        namespace, _, name = value.rpartition("/")
        return Ref(None, None, name, namespace or None)
    return Ref(value["apiVersion"], value["kind"], value["name"], value.get("namespace"))


def _log(value: str | Obj) -> ExpectedLog:
    if isinstance(value, str):
        return ExpectedLog(value)
    absent = "absent" in value
    return ExpectedLog(value["absent" if absent else "match"], value.get("step"), absent)


def _result(value: str | Obj) -> ExpectedResult:
    if isinstance(value, str):
        return ExpectedResult(value)
    after = parse_duration(value["after"]) if "after" in value else None
    return ExpectedResult(value["outcome"], after, value.get("message"))
