"""``kinrun test``: run the cases of test files against their configs, with no cluster.

Each case runs on a fresh embedded API server (``kinrun.testing.apiserver``) with a fixed
seed and a clock (uids, timestamps, resourceVersions, generated names are reproducible),
through the one path every command takes (``docs/architecture.md``, "One path")::

    plan(config, plugins, clock=wall) .bind(turnstile.client(RecordingClient(client)))
        .manager(clock=StepClock(), wrap=recorder.observe) .start_caches(...)

with no worker thread: the runner's thread drives the pipeline in one fixed order
(``kinrun.testing.quiet``: watch events delivered one at a time in resourceVersion order
through ``kinrun.testing.turnstile``, then one key reconciled, controllers taking turns),
so a case gives the same result every run. ``given`` is already in the cluster (step 0 is
the initial reconciles), each ``when`` step is applied and the pipeline run until quiet, and
what was recorded (``kinrun.testing.recording``) is compared with ``expect``
(``kinrun.testing.expectations``). With ``admission:``, the config's webhook configurations
are on the case's server and answered in-process (``CaseRun._call_webhook``): the
controller's writes are defaulted and refused by them as on a cluster (``given`` and
``when`` objects are put in the store as they are, as seeds); the case's own request sends
its objects decoded and defaulted by the case's server (``_CaseRun._decoded``). Two runs of
one file print the same bytes: the output holds no time but the duration of a failed case,
unless ``durations=False``.

Errors: ConfigError (ConfigErrors) for a bad test file, config or case (exit 2 in the CLI),
raised before any case runs. A case that cannot run to the end (a step that never gets
quiet, an object the server refuses) fails with the reason; it never hangs (``timeout``).
"""

from __future__ import annotations

import fnmatch
import re
import threading
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from kinrun.actions.status import merge_patch
from kinrun.clock import REAL_CLOCK, WallOverride
from kinrun.config import ConfigErrors, load
from kinrun.errors import ConfigError, KinrunError
from kinrun.plan import Plan, plan
from kinrun.plugin_manager import config_plugins
from kinrun.redact import redact_text, secret_values
from kinrun.templating import template_seed
from kinrun.testing.casefile import Case, Step, TestFile, load_test_file, object_label
from kinrun.testing.expectations import (Failure, check, contains, log_view, result_view,
                                         sent_view)
from kinrun.testing.quiet import BOOKMARK_INTERVAL, NotQuiet, Quiet, StepClock
from kinrun.testing.recording import EPOCH, LogCapture, Recorder, RecordingClient
from kinrun.testing.seeds import crd_seeds, load_objects, served_crds, without_served
from kinrun.testing.turnstile import Turnstile

SEED = 20231114
"""The embedded server's seed in every case (uids, generateName suffixes)."""
WEBHOOKS_URL = "https://kinrun-test.invalid"
"""Where a case's webhook configurations point: answered in-process, never dialled."""


@dataclass(frozen=True)
class CaseOutcome:
    """One case's outcome: ``file``, ``name``, ``seconds`` (real time), ``failures`` (empty:
    passed), ``skipped`` (deselected by ``-k``)."""

    file: str
    name: str
    seconds: float
    failures: tuple[Failure, ...] = ()
    skipped: bool = False

    @property
    def passed(self) -> bool:
        return not self.failures and not self.skipped


@dataclass
class Run:
    """The outcomes of a ``kinrun test`` invocation, in run order."""

    outcomes: list[CaseOutcome] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(o.failures for o in self.outcomes)


# -- selecting cases (-k) ---------------------------------------------------------------------


def selector(expression: str | None) -> Callable[[str], bool]:
    """A pytest-like ``-k`` test on case names: words are case-insensitive substrings (or
    glob patterns), combined with ``and``, ``or``, ``not`` and parentheses; None: all.
    Raises ValueError for an expression that does not parse."""
    if not expression:
        return lambda name: True
    return _Selection(expression).parse()


class _Selection:
    """The recursive-descent parser of one ``-k`` expression (``selector``): a disjunction of
    conjunctions of atoms (a word, ``not`` and an atom, or a disjunction in parentheses).
    Each rule returns the test on a name. Used once."""

    def __init__(self, expression: str) -> None:
        self.expression = expression
        self.tokens = re.findall(r"\(|\)|[^\s()]+", expression)
        self.pos = 0

    def parse(self) -> Callable[[str], bool]:
        result = self.disjunction()
        if self.peek() is not None:
            raise ValueError(f"-k {self.expression!r}: unexpected {self.peek()!r}")
        return result

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        self.pos += 1
        return self.tokens[self.pos - 1]

    def atom(self) -> Callable[[str], bool]:
        token = self.peek()
        if token is None or token in (")", "and", "or"):
            raise ValueError(f"-k {self.expression!r}: expected a word at "
                             f"{token or 'the end'!r}")
        self.take()
        if token == "not":
            inner = self.atom()
            return lambda n: not inner(n)
        if token == "(":
            inner = self.disjunction()
            if self.peek() != ")":
                raise ValueError(f"-k {self.expression!r}: missing ')'")
            self.take()
            return inner
        word = token.lower()
        if any(c in word for c in "*?["):
            return lambda n: fnmatch.fnmatchcase(n.lower(), word)
        return lambda n: word in n.lower()

    def conjunction(self) -> Callable[[str], bool]:
        parts = [self.atom()]
        while self.peek() == "and":
            self.take()
            parts.append(self.atom())
        return lambda n: all(p(n) for p in parts)

    def disjunction(self) -> Callable[[str], bool]:
        parts = [self.conjunction()]
        while self.peek() == "or":
            self.take()
            parts.append(self.conjunction())
        return lambda n: any(p(n) for p in parts)


# -- preparing --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prepared:
    """A test file with its config compiled once (to check it): ``tests``, ``config``,
    ``plugins`` (the config's plugin manager, shared by its cases), ``crds``: the config's
    ``crds:`` CRDs (``kinrun.testing.seeds.crd_seeds``), installed in every case's server
    before its ``given``, as ``kinrun --embedded`` installs them before its seeds."""

    tests: TestFile
    config: Any
    plugins: Any
    crds: list[tuple[Path, list[dict]]] = field(default_factory=list)


def prepare(path: str | Path) -> Prepared:
    """Load a test file and its config and check the cases against the config (controller
    names, a ``reconcile:`` or ``deleted: ns/name`` step with no controller to pick). Raises
    ConfigError (ConfigErrors) for any problem, located."""
    tests = load_test_file(path)
    config = load(tests.config)
    plugins = config_plugins(config)
    compiled = plan(config, plugins)
    errors = []
    names = [c.name for c in compiled.controllers]
    for case in tests.cases:
        if case.controller is not None and case.controller not in names:
            errors.append(_located(case.where, f"controller {case.controller!r}: no such "
                                   f"controller in the config (known: {', '.join(names)})"))
        needs = [s for s in case.steps if s.kind == "reconcile" or
                 (s.kind in ("deleted", "updated") and s.ref is not None and s.ref.kind is None)]
        if needs and case.controller is None and len(names) > 1:
            errors.append(_located(needs[0].where, f"{needs[0].describe()}: the config has "
                                   f"several controllers: give the case a controller"))
    if errors:
        raise ConfigErrors(errors)
    return Prepared(tests, config, plugins, crd_seeds(config.crd_paths()))


def _located(where: str, message: str) -> ConfigError:
    file, _, rest = where.partition(":")
    parts = rest.split(":", 2)
    try:
        line, column, path = int(parts[0]), int(parts[1]), parts[2].strip()
    except (IndexError, ValueError):
        return ConfigError(message, file=file)
    return ConfigError(message, file=file, line=line, column=column, path=path)


# -- running ----------------------------------------------------------------------------------


def run_files(paths: Sequence[str | Path], *, select: Callable[[str], bool] = lambda n: True,
              report: Callable[[CaseOutcome], None] = lambda o: None,
              timeout: float | None = None, show_secrets: bool = False) -> Run:
    """Prepare every file (ConfigError before anything runs), then run each selected case,
    calling ``report`` after each. ``timeout``: seconds per step, overriding the files'.
    ``show_secrets``: failure diffs show Secret values (default: redacted, ``kinrun.redact``)."""
    prepared = [prepare(p) for p in paths]
    run = Run()
    for item in prepared:
        for case in item.tests.cases:
            if not select(case.name):
                outcome = CaseOutcome(item.tests.file, case.name, 0.0, skipped=True)
            else:
                outcome = run_case(item, case, timeout=timeout or item.tests.timeout,
                                   show_secrets=show_secrets)
            run.outcomes.append(outcome)
            report(outcome)
    return run


def run_case(prepared: Prepared, case: Case, *, timeout: float,
             show_secrets: bool = False, recorder: Recorder | None = None) -> CaseOutcome:
    """Run one case (module docstring) and compare; never raises for what the case does.
    ``show_secrets``: the failure diffs show Secret values (default: redacted).
    ``recorder``: record into this one (a fresh Recorder), to read it afterwards
    (:func:`transcript`)."""
    started = REAL_CLOCK.now()
    recorder = recorder if recorder is not None else Recorder()
    capture = LogCapture(recorder).install()
    case_run = _CaseRun(prepared, case, recorder, timeout)
    try:
        failure = case_run.run()
    finally:
        capture.uninstall()
    failures = [failure] if failure is not None else []
    if failure is None and case.expect.admission is not None:
        from kinrun.testing.admission import check_admission

        got = case_run.admission_answer
        failures += check_admission(case.expect.admission, got) if got is not None else [
            Failure("admission", "expect.admission: the case sends no admission: request")]
    wanted, secrets = case.controller, frozenset() if show_secrets else case_secrets(case)
    failures += check(case.expect,
                      [s for s in recorder.requests() if wanted in (None, s.controller)],
                      [r for r in recorder.results() if wanted in (None, r.controller)],
                      [line for line in recorder.logs() if wanted in (None, line.controller, "")],
                      show_secrets=show_secrets, secrets=secrets)
    if failures and secrets:
        failures = [Failure(f.what, redact_text(f.message, secrets), redact_text(f.diff, secrets))
                    for f in failures]
    return CaseOutcome(prepared.tests.file, case.name, REAL_CLOCK.now() - started,
                       tuple(failures))


def transcript(recorder: Recorder) -> list[str]:
    """What a case run recorded, one line per request, Result and log line, in the order of
    each kind (as a test file would write them): two runs of a case are the same run when
    their transcripts are equal."""
    return ([f"request {sent_view(s)}" for s in recorder.requests()]
            + [f"result {r.controller} {r.key} [{r.step}] {result_view(r.result)}"
               for r in recorder.results()]
            + [f"log {log_view(line)}" for line in recorder.logs()])


def case_secrets(case: Case) -> frozenset[str]:
    """The values of every Secret the case creates (given, added, updated; as stored and
    decoded: ``kinrun.redact.secret_values``), which a failed case's report hides wherever
    a template copied them: in the data of its diffs before they are dumped
    (``kinrun.testing.expectations.check``), then in the text of every failure (the
    messages, an admission diff)."""
    return secret_values(*case.given, *(o for step in case.steps
                                        for o in (*step.objects, *step.before)))


class _Refused(Exception):
    """An admission case's object the case's server refuses (its message says which)."""


class _CaseRun:
    """The server, client, manager and steps of one case. Used once."""

    def __init__(self, prepared: Prepared, case: Case, recorder: Recorder,
                 timeout: float) -> None:
        self.prepared, self.case, self.recorder, self.timeout = prepared, case, recorder, timeout
        self.clock = StepClock(0.0)
        self.admission_answer: Any = None  # the answer to case.admission, once sent
        self.clock.set_wall(EPOCH)  # wall(): EPOCH + fake time (Events, the server's clock)

    def run(self) -> Failure | None:
        from kinrun.kube import Client
        from kinrun.testing.apiserver import StatusError

        server = self._server()
        client = manager = None
        try:
            refused = self._seed(server)
            if refused is not None:
                return refused
            client = Client.from_config(kubeconfig=server.kubeconfig_path, qps=0)
            wall = self.recorder.wall_clock(self.clock.wall)
            compiled: Plan = plan(self.prepared.config, self.prepared.plugins,
                                  clock=WallOverride(self.clock, wall), render_clock=REAL_CLOCK,
                                  template_seed=template_seed(self.case.name))
            turnstile = Turnstile()
            manager = compiled.bind(turnstile.client(RecordingClient(
                client, self.recorder, wall))).manager(clock=self.clock,
                                                        wrap=self.recorder.observe)
            turnstile.seal()  # the informers are wired: later LISTs are a reconcile's own
            self.manager, self.server, self.compiled = manager, server, compiled
            self._register_webhooks()
            self.quiet = Quiet(lambda: server.store.resource_version, turnstile,
                               manager.factory.informers().values(),
                               list(manager.controllers.items()), self.clock,
                               running=self.recorder.running)
            if not manager.start_caches(threading.Event(), self.timeout):
                return Failure("run", f"the informers did not sync within {self.timeout:g}s")
            for scheduler in manager.schedules.values():  # no workers: the runner reconciles
                scheduler.start()
            return self._steps() or self._admission(compiled, client)
        except (KinrunError, StatusError) as exc:
            return Failure("run", f"the run failed: {exc}")
        finally:
            if manager is not None:
                manager.stop(self.timeout)
            if client is not None:
                client.close()
            server.stop()

    def _seed(self, server: Any) -> Failure | None:
        """Load the config's ``crds:`` and then the case's ``given`` (less a CRD ``crds:``
        serves already), as ``--embedded`` loads ``crds:`` and its seeds
        (``kinrun.testing.seeds``). A Failure when the server refuses a ``given`` object;
        ConfigError naming the file for a ``crds:`` CRD it refuses."""
        from kinrun.testing.apiserver import StatusError

        for path, crds in self.prepared.crds:
            load_objects(server, path, crds)
        try:
            server.load(without_served(self.case.given, served_crds(self.prepared.crds)),
                        admit=True)
        except StatusError as exc:
            return Failure("run", f"given: the server refused an object: {exc}")
        return None

    def _server(self) -> Any:
        """The case's embedded API server, started: seeded, on the case's clock, its
        admission webhooks answered in-process (``_call_webhook``)."""
        from kinrun.testing.apiserver import EmbeddedAPIServer, controllers_default

        server = EmbeddedAPIServer(seed=SEED, clock=self.clock.wall,
                                   bookmark_interval=BOOKMARK_INTERVAL,
                                   controllers=controllers_default(),
                                   webhook_caller=self._call_webhook)
        server.start()
        return server

    def _register_webhooks(self) -> None:
        """The config's webhook configurations on the case's server (pointing at
        ``WEBHOOKS_URL``): the controller's writes meet its webhooks, as on a cluster."""
        if self.compiled.admission is None:
            return
        from kinrun.admission.manifests import local_configurations

        for obj in local_configurations(self.compiled.admission.spec, "kinrun-test",
                                        WEBHOOKS_URL, b""):
            self.server.store.create(obj)

    def _call_webhook(self, hook: Any, url: str, body: bytes) -> bytes:
        """The embedded server's call of one of the config's webhooks, answered in-process
        by its rules over the case's caches (no HTTPS: ``WEBHOOKS_URL`` is never dialled)."""
        path = urllib.parse.urlsplit(url).path
        program = self.compiled.admission.webhook(path)
        if program is None:
            raise OSError(f"no webhook of the config at {path}")
        listers = {name: inf.lister for name, inf in self.manager.informers.items()}
        return orjson.dumps(program.review(orjson.loads(body), listers))

    def _steps(self) -> Failure | None:
        from kinrun.testing.apiserver import StatusError

        where = "the start (given)"
        try:
            self.quiet.wait(self.timeout)
            for i, step in enumerate(self.case.steps, 1):
                where = f"{step.where} ({step.describe()})"
                self.recorder.step = i
                problem = self._apply(step)
                if problem:
                    return Failure("run", f"{where}: {problem}")
                self.quiet.wait(self.timeout)
        except NotQuiet as exc:
            return Failure("run", f"{where}: not quiet: {exc}")
        except StatusError as exc:
            return Failure("run", f"{where}: the server refused it: {exc}")
        return None

    def _admission(self, compiled: Plan, client: Any) -> Failure | None:
        """The case's AdmissionReview answered by the config's webhooks, kept in
        ``self.admission_answer`` (``kinrun.testing.admission``)."""
        from kinrun.testing.admission import answer

        case = self.case.admission
        if case is None:
            return None
        if compiled.admission is None:
            return Failure("run", "admission: the config has no admission webhooks")
        obj = case.object if case.object is not None else case.old_object
        try:
            ref = client.resolve(obj.get("apiVersion", ""), obj.get("kind", ""))
            case = self._decoded(case)
            listers = {name: inf.lister for name, inf in self.manager.informers.items()}
            self.admission_answer = answer(
                compiled.admission, case,
                {"group": ref.group, "version": ref.version, "resource": ref.resource}, listers)
        except _Refused as exc:
            return Failure("run", str(exc))
        except (LookupError, KinrunError) as exc:
            return Failure("run", f"admission: {exc}")
        return None

    def _decoded(self, case: Any) -> Any:
        """``case`` with its ``object`` and ``oldObject`` decoded and defaulted as the case's
        server does a write of their kind before calling webhooks (``EmbeddedAPIServer.admit``
        without validation: built-in kinds' defaults, a CRD's schema defaults; a required
        field a mutating webhook fills is not missing yet), as kube-apiserver sends them.
        Raises _Refused naming the one the server refuses to decode."""
        import dataclasses

        from kinrun.testing.apiserver import StatusError

        decoded = {}
        for key, attr in (("object", "object"), ("oldObject", "old_object")):
            value = getattr(case, attr)
            try:
                decoded[attr] = None if value is None else self.server.admit(dict(value),
                                                                             validate=False)
            except StatusError as exc:
                raise _Refused(f"admission: the server refused {key}: {exc}") from exc
        return dataclasses.replace(case, **decoded)

    def _apply(self, step: Step) -> str | None:
        store = self.server.store
        if step.kind == "added":
            for obj in step.objects:
                if _get(store, obj) is not None:
                    return f"{object_label(obj)} already exists (use updated:)"
                self.server.load([obj], admit=True)
        elif step.kind == "updated":
            return self._update(step)
        elif step.kind == "deleted":
            api_version, kind = self._kind(step)
            ref = step.ref
            if store.delete(api_version, kind, ref.name, ref.namespace) is None:
                return f"{_label(kind, ref)} does not exist"
        elif step.kind == "reconcile":
            self._controller().enqueue(step.key)
        else:
            self.clock.step(step.seconds)
        return None

    def _update(self, step: Step) -> str | None:
        store = self.server.store
        if step.merge is not None:
            return self._merge(step)
        for before in step.before:
            current = _get(store, before)
            if current is None:
                self.server.load([before], admit=True)
                self.quiet.wait(self.timeout)
            elif not contains(before, current):
                return f"updated.from does not match {object_label(before)} in the cluster"
        for obj in step.objects:
            if _get(store, obj) is None:
                return f"{object_label(obj)} does not exist (use added:)"
            store.update(self.server.admit(obj))
        return None

    def _merge(self, step: Step) -> str | None:
        """``updated: {key, merge}``: the merge patch onto the object as the server holds it."""
        api_version, kind = self._kind(step)
        ref = step.ref
        current = self.server.store.get(api_version, kind, ref.name, ref.namespace)
        if current is None:
            return f"{_label(kind, ref)} does not exist (use added:)"
        self.server.store.update(merge_patch(current, step.merge))
        return None

    def _controller(self) -> Any:
        name = self.case.controller or next(iter(self.manager.controllers))
        return self.manager.controllers[name]

    def _kind(self, step: Step) -> tuple[str, str]:
        ref = step.ref
        if ref is not None and ref.kind is not None:
            return ref.api_version or "v1", ref.kind
        name = self.case.controller or self.prepared.config.controllers[0].name
        primary = self.prepared.config.controller(name).primary
        resolved = self.manager.refs[primary]
        return resolved.api_version, resolved.kind


def _label(kind: str, ref: Any) -> str:
    """``Kind ns/name`` of a step's Ref (whose kind may be left to the primary's)."""
    return str(ref) if ref.kind else f"{kind} {ref}"


def _get(store: Any, obj: dict[str, Any]) -> Any:
    meta = obj.get("metadata") or {}
    return store.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))


# -- reporting --------------------------------------------------------------------------------


def outcome_lines(outcome: CaseOutcome, *, durations: bool = True) -> list[str]:
    """``PASS name`` / ``SKIP name`` / ``FAIL name (0.12s)`` and, for a failure, each part
    indented by four spaces."""
    if outcome.skipped:
        return []
    if outcome.passed:
        return [f"PASS {outcome.name}"]
    head = f"FAIL {outcome.name}" + (f" ({outcome.seconds:.2f}s)" if durations else "")
    body = [("    " + line) if line else "" for f in outcome.failures
            for line in f.text().splitlines()]
    return [head, *body]


def summary_line(run: Run) -> str:
    """``3 passed, 1 failed, 2 deselected``."""
    counts = {"passed": sum(o.passed for o in run.outcomes),
              "failed": sum(bool(o.failures) for o in run.outcomes),
              "deselected": sum(o.skipped for o in run.outcomes)}
    return ", ".join(f"{n} {what}" for what, n in counts.items() if n or what == "passed")


def junit_xml(run: Run) -> bytes:
    """JUnit XML (one ``testsuite`` per test file, one ``testcase`` per case; a failed case
    has a ``failure`` with the first line as message and the whole text as content;
    deselected cases are ``skipped``), as CI systems read it."""
    suites = ET.Element("testsuites", name="kinrun test")
    by_file: dict[str, list[CaseOutcome]] = {}
    for outcome in run.outcomes:
        by_file.setdefault(outcome.file, []).append(outcome)
    for file, outcomes in by_file.items():
        suite = ET.SubElement(suites, "testsuite", name=file, tests=str(len(outcomes)),
                              failures=str(sum(bool(o.failures) for o in outcomes)),
                              skipped=str(sum(o.skipped for o in outcomes)),
                              time=f"{sum(o.seconds for o in outcomes):.3f}")
        for outcome in outcomes:
            case = ET.SubElement(suite, "testcase", classname=Path(file).name,
                                 name=outcome.name, time=f"{outcome.seconds:.3f}")
            if outcome.skipped:
                ET.SubElement(case, "skipped", message="deselected by -k")
            elif outcome.failures:
                text = "\n".join(f.text() for f in outcome.failures)
                failure = ET.SubElement(case, "failure", message=outcome.failures[0].message,
                                        type=outcome.failures[0].what)
                failure.text = text
    ET.indent(suites)
    return ET.tostring(suites, encoding="utf-8", xml_declaration=True) + b"\n"


def iter_lines(run: Run) -> Iterable[str]:
    """Every outcome's lines, then the summary."""
    for outcome in run.outcomes:
        yield from outcome_lines(outcome)
    yield summary_line(run)
