"""ActionProgram: a controller's compiled action list, rendered per reconcile, then executed.

Two phases per reconcile, so nothing is half-applied because of a template:

1. ``render``: the controller's ``reconcile.vars`` are evaluated in order (each visible to the
   later ones), then every action's ``when:`` is evaluated and every template rendered and
   checked, in order, all spending one budget (``templates.budget``: time, loop steps,
   output). The first failure raises :class:`RenderError` (controller, action index and name,
   config file:line, template line; :class:`BudgetError` past the budget; :class:`VarError` /
   :class:`VarBudgetError` naming the var) and nothing of that reconcile is sent.
2. ``execute``: the steps are carried out in order: ApiRequests through ``client.execute``, log
   lines logged, the smallest requeue delay returned. An API failure propagates (the kube
   layer's ApiError) and the remaining steps are not sent; the controller retries the key.

Flow is decided in the render phase, so what is sent when a reconcile ends midway is exact:

* ``stop`` (when its ``when:`` holds): the render ends there; the steps of the actions before
  it are executed (requests sent, lines logged, requeues kept), then its message is logged at
  info; the actions after it are neither rendered nor sent. The reconcile is a success.
* ``fail``: the render raises :class:`ActionFailed` (a TemporaryError without delay: retried
  with backoff) or, with ``permanent: true``, :class:`ActionFailedPermanently` (a
  PermanentError: the key waits for its next change). The Events and log lines of the actions
  before it are carried out ("record, then return an error", as client-go controllers record
  a Warning Event and return the error); nothing else of that reconcile is sent (no write, no
  requeue). A template error sends nothing at all.

Errors: ``run(..., extra={"error": error_scope(err)})`` is how a reconcile's ``onError`` list
runs (``kinrun.reconcile``): :func:`error_scope` is what its templates see as ``error``.

Results: an action whose templates read ``results.<name>`` (found at compile time,
:mod:`kinrun.actions.results`; the name must be an earlier action's) is *deferred*. ``run``
then goes in stages (:meth:`ActionProgram._run_staged`): the vars and every action that is not
deferred are rendered and checked first, as above, before anything is sent; then the actions
execute in order, each deferred one rendered just before it executes, with ``results`` holding
the answers of the actions before it. So a deferred action's template error or ``fail`` comes
after the earlier actions were sent (the later ones are not), and a ``stop`` in it ends the run
there. Programs without deferred actions run exactly as described above. ``render`` (no
server) renders deferred actions in place with placeholders for the results.

Programs are immutable after compiling and thread-safe: workers of one controller render
concurrently (for different keys).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import jinja2.nodes

from kinrun.actions.errors import ActionError, BudgetError, RenderError
from kinrun.actions.kinds import (
    BUILTIN_KINDS, ApplyAction, CheckError, DeleteAction, EventAction, Fail, FailAction,
    LogAction, PatchAction, PluginAction, RequeueAfterAction, Scope, Stop, StopAction,
    is_true, loop_items, unsecret,
)
from kinrun.actions.status import StatusAction
from kinrun.actions.steps import LOG_LEVELS, ActionKind, LogLine, RenderResult, RequeueAfter
from kinrun.actions.steps import is_compound
from kinrun.actions.applyset import ApplySetAction
from kinrun.actions.children import ChildrenAction
from kinrun.actions.create import CreateAction
from kinrun.actions.results import RESULTS, answer_of, placeholders, result_reads
from kinrun.actions.results import template_sources
from kinrun.clock import Clock, clock_of
from kinrun.config.schema import action_default
from kinrun.errors import ApiError, ConfigError, PermanentError, ReconcileError, TemporaryError
from kinrun.hooks import ReconcileContext
from kinrun.kube.discovery import UnknownKindError
from kinrun.kube.event_recorder import EventRecorder, EventRequest
from kinrun.kube.request import ApiRequest
from kinrun.redact import redact_request
from kinrun.result import smallest_delay
from kinrun.templating import (
    BudgetExceeded, BudgetLimits, RenderBudget, SourceLocation, TemplateEngine,
    TemplateRenderError, as_location, lookup_functions, spend_loop_step,
)

DEFAULT_FIELD_MANAGER: str = action_default("apply", "fieldManager")
"""The server-side apply field manager of ``apply`` actions (the schema's default of
``apply.fieldManager``; overridable per action)."""

_RESERVED_KEYS = ("when", "name", "plugin", "with", "forEach", "as")
_LOOP_SHADOWED = ("obj", "old", "key", "controller", "reason", "results")
"""Template names an action's ``as:`` may not hide (its templates need them)."""

RESERVED_VAR_NAMES = ("obj", "old", "key", "controller", "reason", "initial_list", "get", "list",
                      "by_index", "error", "index_keys", "cron_next", "cron_prev",
                      "now", "range", "env", "read_file", "results", "children",
                      "children_ready", "children_not_ready")
"""Names a ``reconcile.vars`` entry may not take: the template variables and functions every
action sees (a var would shadow them)."""
_JINJA_KEYWORDS = frozenset({"and", "or", "not", "in", "is", "if", "else", "elif", "for",
                             "true", "false", "none", "True", "False", "None", "import",
                             "from", "as", "with", "recursive", "set", "block", "macro"})
"""Words a Jinja2 expression cannot use as a variable name."""


# --- errors of vars and fail -------------------------------------------------------------------


def _var_message(location: SourceLocation, controller: str, name: str, detail: str,
                 template_line: int | None) -> str:
    where = f" (template line {template_line})" if template_line else ""
    return f"{location}: controller {controller!r} var {name!r}: {detail}{where}"


class VarError(RenderError):
    """A ``reconcile.vars`` entry failed to evaluate; nothing of that reconcile was sent
    (retried with backoff, like any RenderError). ``var``: its name; ``index``: its position
    in ``vars``; ``label``: ``vars.NAME``; ``location``: the var's file:line.
    ``str()``: ``file:line: path: controller 'c' var 'name': detail``."""

    def __init__(self, detail: str, *, controller: str, index: int, name: str,
                 location: SourceLocation, template_line: int | None = None) -> None:
        super().__init__(detail, controller=controller, index=index, label=f"vars.{name}",
                         location=location, template_line=template_line)
        self.var = name
        self.args = (_var_message(location, controller, name, detail, template_line),)


class VarBudgetError(BudgetError):
    """A ``reconcile.vars`` entry went over the reconcile's template budget (the budget the
    actions then share): a BudgetError naming the var (``var``; ``label`` ``vars.NAME``)."""

    def __init__(self, exceeded: BudgetExceeded, *, controller: str, index: int, name: str,
                 location: SourceLocation) -> None:
        super().__init__(exceeded, controller=controller, index=index, label=f"vars.{name}",
                         location=location)
        self.var = name
        self.args = (_var_message(location, controller, name, exceeded.detail,
                                  exceeded.template_line),)


class _Failed:
    """What both errors of a ``fail`` action carry: ``controller``, ``index``, ``label``,
    ``location`` (the action's), ``detail`` (the rendered message). ``str()``: ``file:line:
    path: controller 'c' action [i] (label): message``."""

    def _locate(self, message: str, *, controller: str, index: int, label: str,
                location: SourceLocation) -> None:
        self.controller, self.index, self.label = controller, index, label
        self.location, self.detail = location, message
        self.args = (f"{location}: controller {controller!r} action [{index}] ({label}): "
                     f"{message}",)


class ActionFailed(_Failed, TemporaryError):
    """A ``fail`` action ended the reconcile (``permanent: false``): a TemporaryError without
    a delay, so the controller retries the key with its rate limiter's backoff. Of that
    reconcile only the Events and log lines before it were carried out (``kept``: those
    steps, a RenderResult)."""

    def __init__(self, message: str, *, controller: str, index: int, label: str,
                 location: SourceLocation) -> None:
        TemporaryError.__init__(self, message)
        self._locate(message, controller=controller, index=index, label=label,
                     location=location)


class ActionFailedPermanently(_Failed, PermanentError):
    """A ``fail`` action with ``permanent: true`` ended the reconcile: a PermanentError, so
    the key is forgotten (logged) and waits for its next change. As ActionFailed, only the
    Events and log lines before it were carried out (``kept``)."""

    def __init__(self, message: str, *, controller: str, index: int, label: str,
                 location: SourceLocation) -> None:
        PermanentError.__init__(self, message)
        self._locate(message, controller=controller, index=index, label=label,
                     location=location)


@dataclass(frozen=True)
class CompiledVar:
    """One ``reconcile.vars`` entry: ``index`` (its position), ``name``, ``location``, and
    ``value``, the compiled expression (an Expression, or a _TemplateValue for text mixing
    literal parts and ``{{ }}``, whose value is the rendered string)."""

    index: int
    name: str
    location: SourceLocation
    value: Any
    reads: frozenset[str] = frozenset()
    """The template names its expression reads (the earlier vars it needs among them)."""

    def evaluate(self, variables: Mapping[str, Any], controller: str) -> Any:
        """The var's value with ``variables`` in scope, spending the active budget. An
        undefined result (``obj.metdata``) is an error, as in a template. Raises VarError,
        VarBudgetError; a ReconcileError from a plugin filter propagates unchanged."""
        try:
            value = self.value.evaluate(variables)
            if isinstance(value, jinja2.Undefined):
                str(value)  # StrictUndefined: raises UndefinedError naming what is missing
            return value
        except BudgetExceeded as exc:
            raise VarBudgetError(exc, controller=controller, index=self.index, name=self.name,
                                 location=self.location) from exc
        except TemplateRenderError as exc:
            raise self._error(controller, exc.detail, exc.template_line) from exc
        except ReconcileError:
            raise
        except Exception as exc:  # noqa: BLE001 - a plugin filter or lookup failed
            raise self._error(controller, f"{type(exc).__name__}: {exc}", None) from exc

    def _error(self, controller: str, detail: str, line: int | None) -> VarError:
        return VarError(detail, controller=controller, index=self.index, name=self.name,
                        location=self.location, template_line=line)


@dataclass(frozen=True)
class CompiledAction:
    """One action: its place (``index``, ``label``, ``location``), its condition, its kind,
    and ``reads``: the earlier actions whose ``results`` its templates read (empty: none, so
    it renders before anything is sent; None: any, through a computed index;
    :mod:`kinrun.actions.results`)."""

    index: int
    label: str
    location: SourceLocation
    when: Any          # an Expression/_TemplateValue, a bool, or None (always)
    impl: Any          # a kinds.*Action with render(scope) -> list[Step]
    reads: frozenset[str] | None = frozenset()
    loop: ActionLoop | None = None   # forEach + as: rendered once per item

    @functools.cached_property
    def origin(self) -> str:
        """``str(location)``, made once: every step the action renders carries it."""
        return str(self.location)

    @property
    def deferred(self) -> bool:
        """Whether it reads an earlier action's result: rendered just before it executes."""
        return self.reads is None or bool(self.reads)

    def render(self, scope: Scope, controller: str) -> list[Any]:
        """The action's steps for ``scope`` ([] when ``when`` is false); RenderError on failure,
        except that a ReconcileError (PermanentError/TemporaryError) raised by a plugin's action
        kind or filter propagates unchanged, so plugins can steer the retry. A ``stop`` raises
        :class:`~kinrun.actions.kinds.Stop` (for the program); a ``fail`` raises
        ActionFailed or ActionFailedPermanently, located at this action."""
        try:
            if self.loop is not None:
                return self.loop.render(self, scope)
            if not self._wanted(scope):
                return []
            return self.impl.render(scope)
        except Stop:
            raise
        except Fail as exc:
            error = ActionFailedPermanently if exc.permanent else ActionFailed
            raise error(exc.message, controller=controller, index=self.index, label=self.label,
                        location=self.location) from None
        except BudgetExceeded as exc:
            raise BudgetError(exc, controller=controller, index=self.index, label=self.label,
                              location=self.location) from exc
        except TemplateRenderError as exc:
            raise self._error(scope, controller, exc.detail, exc.template_line,
                              getattr(exc, "location", None)) from exc
        except (RenderError, ReconcileError):
            raise
        except CheckError as exc:  # not chained: its message quotes what was rendered
            raise self._error(scope, controller, str(exc), None) from None
        except Exception as exc:  # noqa: BLE001 - a plugin kind or lookup failed
            raise self._error(scope, controller, f"{type(exc).__name__}: {exc}", None) from exc

    def _wanted(self, scope: Scope) -> bool:
        if self.when is None or isinstance(self.when, bool):
            return self.when is not False
        return is_true(self.when.evaluate(scope.variables))

    def _error(self, scope: Scope, controller: str, detail: str, line: int | None,
               location: SourceLocation | None = None) -> RenderError:
        """``location``: the failing key's own place (a TemplateRenderError's ``location``,
        set by the kinds that know it), else the action's. ``detail`` (a check's message may
        quote what the action rendered: ``requeueAfter: '...' is not a duration``, a
        condition's ``reason``) with the reconciled Secret's values hidden (``unsecret``):
        the one place every action error is made, so the live log, ``--dry-run``, ``kinrun
        render`` and ``kinrun test`` show the same message."""
        return RenderError(unsecret(detail, scope), controller=controller, index=self.index,
                           label=self.label, location=location or self.location,
                           template_line=line)


@dataclass(frozen=True)
class ActionLoop:
    """An action's ``forEach`` (an expression giving a list; a mapping gives its (key, value)
    pairs) and ``as`` (the item's template name). The action's ``when:`` and templates are
    evaluated once per item, the item in scope (as Ansible's ``loop`` with ``when``), each
    item one loop step of the reconcile's template budget; the steps of all items, in order."""

    items: Any          # a compiled Expression
    name: str
    location: SourceLocation

    def render(self, action: CompiledAction, scope: Scope) -> list[Any]:
        """The steps of ``action`` for every item; CheckError when forEach gives no list."""
        items = loop_items(self.items, self.location, scope.variables)
        steps: list[Any] = []
        for item in items:
            spend_loop_step()
            each = dataclasses.replace(scope, variables={**scope.variables, self.name: item})
            if action._wanted(each):
                steps.extend(action.impl.render(each))
        return steps


class ActionProgram:
    """A controller's compiled actions (``reconcile.actions`` or ``onDelete``).

    ``render(key=, obj=, old=, ctx=) -> RenderResult``; ``run(...)`` renders then executes.
    ``budgets``: makes the budget one render spends, shared by its vars and all its actions
    (normally the engine's ``TemplateEngine.budget``; None: the default limits). ``vars``: the
    compiled ``reconcile.vars``, evaluated first, in order, at every render. Immutable (but for a
    cache of the lookup functions, ``_lookups``);
    thread-safe.
    """

    def __init__(self, controller: str, actions: Sequence[CompiledAction], *,
                 budgets: Callable[[], RenderBudget] | None = None,
                 vars: Sequence[CompiledVar] = ()) -> None:
        self.controller = controller
        self.actions: tuple[CompiledAction, ...] = tuple(actions)
        self.vars: tuple[CompiledVar, ...] = tuple(vars)
        self._budgets = budgets or functools.partial(RenderBudget, BudgetLimits())
        self.staged = any(a.deferred for a in self.actions)
        """Whether an action reads an earlier one's result (``run`` then executes in stages)."""
        self.writes = any(not isinstance(a.impl, _NEVER_WRITE) for a in self.actions)
        """Whether an action may send a request (False: only ``log``, ``requeueAfter``,
        ``stop`` and ``fail``, which never do; a plugin's kind may)."""
        self._lookups: tuple[Any, dict[str, Any]] = (None, {})
        """(the listers mapping the lookup functions were made over, those functions): a
        Reconciler passes the same mapping to every reconcile, so they are made once, not per
        render (they read the mapping at call time, so sharing them changes nothing). Replaced
        in one assignment: concurrent workers see one pair or the other."""

    def __len__(self) -> int:
        return len(self.actions)

    def render(self, *, key: str, obj: dict[str, Any] | None, old: dict[str, Any] | None = None,
               ctx: ReconcileContext | None = None,
               extra: Mapping[str, Any] | None = None) -> RenderResult:
        """Render and check every action for one reconcile of ``key``.

        ``obj`` is the object (None in ``onDelete``), ``old`` its previous version if known,
        ``ctx`` the reconcile context (its listers back ``get``/``list``/``by_index``; None gives
        an empty context). The vars are evaluated first, in order, each added to the scope by
        name; then the actions render. Vars, ``when:`` and templates all spend one fresh budget
        (seconds, loop steps, output characters: ``templates.budget``). A ``stop`` ends the render
        with the steps so far plus its message as an info LogLine (the later actions are not
        rendered). Raises VarError / VarBudgetError for a var that fails, RenderError for the
        first action that fails, BudgetError (a RenderError) for the one that goes over budget,
        ActionFailed / ActionFailedPermanently for a ``fail`` that fires (its ``kept``: the
        Events and log lines rendered before it, which ``run`` carries out). ``extra``:
        more template variables (``error`` in ``onError``). ``results`` holds a
        :class:`~kinrun.actions.results.Placeholder` per action (no server has answered): an
        action that reads one renders with ``<result of action 'NAME' at PATH>`` there.
        """
        scope = self._scope(key, obj, old, ctx, extra)
        steps: list[Any] = []
        origins: list[str] = []
        with self._budgets():
            for var in self.vars:
                scope.variables[var.name] = var.evaluate(scope.variables, self.controller)
            if self.staged:
                scope.variables[RESULTS] = placeholders(a.label for a in self.actions)
            for action in self.actions:
                if self._render_into(action, scope, steps, origins):
                    break
        return RenderResult(tuple(steps), tuple(origins))

    def _render_into(self, action: CompiledAction, scope: Scope, steps: list[Any],
                     origins: list[str]) -> bool:
        """Render ``action``, appending its steps and their origin; True when it stopped the
        render (its message is the last step). A ``fail`` raises with ``kept``: the Events
        and log lines already in ``steps``."""
        try:
            rendered = action.render(scope, self.controller)
            stopped = False
        except Stop as stop:
            rendered, stopped = [LogLine(stop.level, stop.message)], True
        except (ActionFailed, ActionFailedPermanently) as failed:
            failed.kept = _reports(steps, origins)
            raise
        steps.extend(rendered)
        origins.extend([action.origin] * len(rendered))
        return stopped

    def run(self, *, key: str, obj: dict[str, Any] | None, old: dict[str, Any] | None = None,
            ctx: ReconcileContext | None = None, client: Any = None,
            logger: logging.Logger | None = None,
            extra: Mapping[str, Any] | None = None) -> float | None:
        """Render, then execute: returns the requeue delay in seconds or None. ``client`` and
        ``logger`` default to the context's; ``extra``: more template variables. Raises
        RenderError (nothing sent), ActionFailed(Permanently) (after sending the Events and log
        lines before it), or ApiError. Each raised ActionError or ApiError carries ``action``,
        the failing action's label (``error.action`` in ``onError``). With :attr:`staged` (an
        action reads ``results``), see :meth:`_run_staged`."""
        client = client if client is not None else (ctx.client if ctx else None)
        logger = logger or (ctx.logger if ctx else None) or _logger(self.controller)
        try:
            if self.staged:
                return self._run_staged(key, obj, old, ctx, client, logger, extra)
            try:
                result = self.render(key=key, obj=obj, old=old, ctx=ctx, extra=extra)
            except (ActionFailed, ActionFailedPermanently) as failed:
                execute(failed.kept, client, logger)
                raise
            return execute(result, client, logger)
        except (ActionError, ApiError) as err:
            self._name_action(err)
            raise

    def _name_action(self, err: Exception) -> None:
        """Set ``err.action``: the label of the action it comes from (an ActionError's own; an
        ApiError's by the ``origin`` the executor noted), unless already set."""
        if getattr(err, "action", None) is None:
            origin = getattr(err, "origin", None)
            err.action = getattr(err, "label", None) or next(  # type: ignore[attr-defined]
                (a.label for a in self.actions if str(a.location) == origin), None)

    def _run_staged(self, key: str, obj: dict[str, Any] | None, old: dict[str, Any] | None,
                    ctx: ReconcileContext | None, client: Any,
                    logger: logging.Logger, extra: Mapping[str, Any] | None) -> float | None:
        """Run a program some of whose actions read ``results`` (module docstring, "Results").

        First, as ``render``: the vars, then every action that reads no result, in order, on
        one budget; a failure there (template, check, ``fail``) raises before anything is
        sent, and a ``stop`` there ends the list at it. Then, in order, each action's steps
        are executed; an action that reads results is rendered just before (on a budget of
        its own) with ``results`` holding the answers of the actions before it, so a failure
        or ``fail`` in it raises after the earlier actions' requests were sent, and a ``stop``
        in it ends the run there. Without a client (dry-run), results are placeholders."""
        scope = self._scope(key, obj, old, ctx, extra)
        planned = self._render_staged(scope, client, logger)
        return self._execute_staged(planned, scope, client, logger)

    def _render_staged(self, scope: Scope, client: Any, logger: logging.Logger
                       ) -> list[tuple[CompiledAction, list[Any] | None]]:
        """The first stage of :meth:`_run_staged`: the vars, then the steps of each action
        that reads no result (None for those that do); a failure sends the reports before it
        (Events, log lines) and raises; a ``stop`` ends the list at it."""
        planned: list[tuple[CompiledAction, list[Any] | None]] = []
        with self._budgets():
            for var in self.vars:
                scope.variables[var.name] = var.evaluate(scope.variables, self.controller)
            for action in self.actions:
                if action.deferred:
                    planned.append((action, None))
                    continue
                try:
                    planned.append((action, action.render(scope, self.controller)))
                except Stop as stop:
                    planned.append((action, [LogLine(stop.level, stop.message)]))
                    break
                except (ActionFailed, ActionFailedPermanently) as failed:
                    done = [s for _a, steps in planned for s in steps or ()]
                    failed.kept = _reports(done, [a.origin for a, steps in planned
                                                  for _s in steps or ()])
                    execute(failed.kept, client, logger)
                    raise
        return planned

    def _execute_staged(self, planned: list[tuple[CompiledAction, list[Any] | None]],
                        scope: Scope, client: Any, logger: logging.Logger) -> float | None:
        """The second stage of :meth:`_run_staged`: each action's steps sent in order, an
        action that reads results rendered just before with the answers so far."""
        results: dict[str, Any] = (placeholders(a.label for a in self.actions)
                                   if client is None else {a.label: None for a in self.actions})
        scope.variables[RESULTS] = results
        delay: float | None = None
        for action, steps in planned:
            stopped = False
            if steps is None:
                scope = _after_writes(scope, client)
                with self._budgets():
                    try:
                        steps = action.render(scope, self.controller)
                    except Stop as stop:
                        steps, stopped = [LogLine(stop.level, stop.message)], True
            answers: list[Any] = []
            origin = action.origin
            asked = execute(RenderResult(tuple(steps), (origin,) * len(steps)), client, logger,
                            answers=answers)
            delay = smallest_delay((delay, asked))
            if client is not None:
                results[action.label] = answers if action.loop else answer_of(answers)
            if stopped:
                break
        return delay

    def _scope(self, key: str, obj: dict[str, Any] | None, old: dict[str, Any] | None,
               ctx: ReconcileContext | None, extra: Mapping[str, Any] | None = None) -> Scope:
        ctx = ctx or ReconcileContext(controller=self.controller, key=key, old=old,
                                      logger=_logger(self.controller))
        old = old if old is not None else ctx.old
        namespace = ((obj.get("metadata") or {}).get("namespace") if obj is not None
                     else (key.split("/", 1)[0] if "/" in key else None)) or None
        variables = {"obj": obj, "old": old, "key": key, "controller": self.controller,
                     "reason": ctx.reason,
                     "initial_list": getattr(ctx.cause, "initial_list", False),
                     **self._lookup_functions(ctx.listers), **(extra or {})}
        return Scope(self.controller, key, obj, old, ctx, variables, namespace)

    def _lookup_functions(self, listers: Mapping[str, Any]) -> dict[str, Any]:
        """``lookup_functions(listers)``, made once per listers mapping (``_lookups``)."""
        made_for, functions = self._lookups
        if made_for is not listers:
            functions = lookup_functions(listers)
            self._lookups = (listers, functions)
        return functions


def _after_writes(scope: Scope, client: Any) -> Scope:
    """``scope`` with ``obj`` the server's answer to the last write of the reconciled object
    sent so far in this reconcile (``written`` of the reconciler's client,
    ``kinrun.reconcile``), for an action rendered after earlier ones were sent; ``scope``
    itself when nothing wrote it (or the client does not track writes)."""
    written = getattr(client, "written", None)
    obj = written(scope.obj) if callable(written) else scope.obj
    if obj is scope.obj or not isinstance(obj, dict):
        return scope
    scope.variables["obj"] = obj
    return dataclasses.replace(scope, obj=obj)


def _reports(steps: Sequence[Any], origins: Sequence[str]) -> RenderResult:
    """The Events and log lines among ``steps`` (what a ``fail`` keeps), with their origins."""
    kept = [(s, o) for s, o in zip(steps, origins) if isinstance(s, (EventRequest, LogLine))]
    return RenderResult(tuple(s for s, _o in kept), tuple(o for _s, o in kept))


def error_scope(err: BaseException) -> dict[str, Any]:
    """What ``onError`` templates see as ``error``: ``message`` (the error's own message: an
    ApiError's Status message from the server, a ``fail``'s rendered message, a template
    error's detail; else ``str(err)``), ``where`` (``str(err)``: the whole line as logged, with
    the config's file:line and the request), ``reason``
    (an ApiError's Status reason such as ``AlreadyExists``, else its HTTP class name;
    ``ActionFailed`` for a ``fail``; else the error's type name), ``code`` (an ApiError's HTTP
    status, else None), ``action`` (the failing action's label, ``finalizer`` for the
    finalizer patch, None when unknown: a hook)."""
    if isinstance(err, ApiError):
        reason, code = err.reason or type(err).__name__, err.status or None
    elif isinstance(err, (ActionFailed, ActionFailedPermanently)):
        reason, code = "ActionFailed", None
    else:
        reason, code = type(err).__name__, None
    own = err.message if isinstance(err, ApiError) else getattr(err, "detail", None)
    return {"message": own if isinstance(own, str) and own else str(err), "where": str(err),
            "reason": reason, "code": code,
            "action": getattr(err, "action", None) or getattr(err, "label", None)}


_NEVER_WRITE = (LogAction, RequeueAfterAction, StopAction, FailAction)
"""The action kinds whose steps are never requests (:attr:`ActionProgram.writes`)."""


def _logger(controller: str) -> logging.Logger:
    return logging.getLogger(f"kinrun.controller.{controller}")


def _locate(err: ApiError | UnknownKindError, where: str, origin: str = "") -> None:
    """Prefix ``err``'s message with ``where`` (once), keeping its class and attributes: the
    controller's retry decisions go by class, the log line by message. ``origin``: the
    action's location, kept as ``err.origin`` (which action failed: ``error.action``)."""
    if not getattr(err, "located", False) and err.args:
        err.args = (f"{where}: {err.args[0]}", *err.args[1:])
        err.located = True  # type: ignore[attr-defined]
        err.origin = origin  # type: ignore[attr-defined]


def _execute_request(step: ApiRequest, origin: str, client: Any, logger: logging.Logger,
                     answers: list[Any] | None) -> None:
    """One request of :func:`execute`: logged instead with no client (dry-run), else sent
    (an Event through its recorder), its answer appended to ``answers``, logged once sent;
    an ApiError (or UnknownKindError: no such kind served) located at ``origin`` and the
    request, then raised."""
    if client is None:
        logger.info("dry-run: %s", json.dumps(redact_request(step.describe()), sort_keys=True))
        return
    sent: ApiRequest | None = step
    try:
        if isinstance(step, EventRequest) and step.recorder is not None:
            sent, answer = step.recorder.record(client, step)  # create, patch, nothing
        else:
            answer = client.execute(step)
        if answers is not None:
            answers.append(answer)
    except (ApiError, UnknownKindError) as err:
        _locate(err, f"{origin + ': ' if origin else ''}{step.summary()}", origin)
        raise
    if sent is None:
        logger.debug("event dropped by the spam filter: %s", step.summary())
    elif not getattr(client, "dry_run", False):  # a dry-run client logs what it would do
        logger.info("%s", _summary(sent, answer))


def execute(result: RenderResult, client: Any, logger: logging.Logger, *,
            answers: list[Any] | None = None) -> float | None:
    """Carry out a render's steps in order; return the smallest requeue delay (seconds) or None.

    ApiRequests go through ``client.execute(req)``, each logged at INFO once sent (``apply
    ConfigMap ns/name``), except that an event's EventRequest goes to its recorder
    (``kinrun.kube.event_recorder``), which creates the Event, patches an earlier one (the
    line says which) or drops it (spam filter; logged at DEBUG; its answer None); with
    ``client=None`` (dry-run) each is logged at INFO as ``dry-run: <request as JSON>``
    instead, a Secret's values redacted (``kinrun.redact``). An ApiError from the client
    propagates, its message prefixed with the action's place and the request (``file:line:
    path: patch ConfigMap ns/x: 404 NotFound: ...``), and the later steps are not carried
    out. A compound step (an ``applySet``'s) sends its writes through the same path, one by
    one (``dry-run:`` lines of its planned writes without a client). ``answers``: when given, the server's answer of each
    request or compound step is appended to it, in order (``results``).
    """
    delay: float | None = None
    for index, step in enumerate(result.steps):
        if isinstance(step, LogLine):  # the commonest step, first: no compound-step probe
            logger.log(LOG_LEVELS[step.level], step.message)  # the message as msg, no % args
        elif is_compound(step):
            origin = result.origins[index] if index < len(result.origins) else ""
            answer = _execute_compound(step, origin, client, logger)
            if answers is not None:
                answers.append(answer)
        elif isinstance(step, ApiRequest):
            origin = result.origins[index] if index < len(result.origins) else ""
            _execute_request(step, origin, client, logger, answers)
        elif isinstance(step, RequeueAfter):
            delay = smallest_delay((delay, step.seconds))
    return delay


def _summary(sent: ApiRequest, answer: Any) -> str:
    """The log line of a sent request: ``sent.summary()``, a create by ``generateName`` naming
    the object the server made (``create Job ns/run-x7k2p``, not ``run-<generated>``)."""
    if sent.verb == "create" and not sent.name and isinstance(answer, dict):
        name = (answer.get("metadata") or {}).get("name")
        if isinstance(name, str) and name:
            return dataclasses.replace(sent, name=name).summary()
    return sent.summary()


def _execute_compound(step: Any, origin: str, client: Any, logger: logging.Logger) -> Any:
    """Carry out a CompoundStep: its writes sent and logged as ``execute`` sends requests
    (an ApiError located at ``origin`` and the write); without a client, its planned writes
    logged as ``dry-run:`` lines. Returns its answer."""
    if client is None:
        for described in step.describe_all():
            logger.info("dry-run: %s", json.dumps(redact_request(described), sort_keys=True))
        return None

    def send(request: ApiRequest) -> Any:
        try:
            answer = client.execute(request)
        except (ApiError, UnknownKindError) as err:
            _locate(err, f"{origin + ': ' if origin else ''}{request.summary()}", origin)
            raise
        if not getattr(client, "dry_run", False):
            logger.info("%s", request.summary())
        return answer
    return step.execute(send, client)


# --- compiling -------------------------------------------------------------------------------


def compile_actions(specs: Sequence[Any], *, controller: str, templates_options: Any = None,
                    plugin_manager: Any = None, source: Any = None,
                    locations: Sequence[Any] | None = None, engine: TemplateEngine | None = None,
                    base_dir: Path | None = None,
                    clock: Clock | None = None,
                    field_manager: str = DEFAULT_FIELD_MANAGER,
                    vars: Any = (), recorder: EventRecorder | None = None,
                    field_locations: Sequence[Mapping[str, Any]] | None = None
                    ) -> ActionProgram:
    """Compile a controller's action list once, at start-up.

    ``specs``: the actions as plain mappings (``{"log": "...", "when": "..."}``), each with exactly
    one kind key (built-in, or a plugin's ``kinrun_action_kinds`` name: ``{K: args}`` or the
    config form ``{plugin: K, with: args}``) plus optional ``when:`` (an expression) and
    ``name:`` (used in messages); objects with a mapping in ``.raw``/``.data``
    and a ``.location`` are accepted too. ``templates_options``: the config's ``templates:``
    (mapping or object; see TemplateOptions). ``plugin_manager``: supplies extra filters and action
    kinds. ``source``: the location of the list itself (file, line, path such as
    ``controllers[0].reconcile.actions``); ``locations``: per-action locations, if known.
    ``engine``: share one TemplateEngine (then ``templates_options``, ``base_dir`` and the
    plugins' filters are not used again). ``base_dir``: the config's folder, for ``read_file``.
    ``clock``: the run's Clock (None: ``REAL_CLOCK``; a bare callable of Unix seconds is
    deprecated): its ``wall()`` stamps Event names and timestamps, and the engine built here
    (no ``engine``) reads it for ``now()`` and its budgets. ``vars``: the controller's
    ``reconcile.vars``, in order: a mapping name -> expression, or a sequence of objects with
    ``name``, ``expression`` and ``location`` (``kinrun.config.model.VarSpec``); see
    :func:`compile_vars`. ``recorder``: the controller's EventRecorder, shared by all its
    programs so repeated Events are counted across them (None: one of this program's own,
    component ``kinrun``, stamped by ``clock``). ``field_locations``: per action, the location
    of each key of its kind's value (``ActionSpec.field_locations``), so that errors of
    ``applySet.forEach``/``manifests`` name their own key's line (None: the action's).

    Raises ConfigError (file:line: path: message) for unknown kinds, bad literal values,
    template syntax errors and bad vars. It runs over 40 lines by its signature and this
    docstring: each keyword is public API, said here; the body is a dozen lines.
    """
    kinds = plugin_action_kinds(plugin_manager)
    run_clock = clock_of(clock, where="compile_actions")
    engine = engine or TemplateEngine(templates_options, base_dir=base_dir,
                                      extra_filters=plugin_template_filters(plugin_manager),
                                      clock=run_clock)
    base = as_location(source)
    recorder = recorder or EventRecorder("kinrun", clock=run_clock)
    actions = []
    for index, spec in enumerate(specs):
        data, loc = _unwrap(spec, locations[index] if locations else None, base, index)
        fields = field_locations[index] if field_locations else None
        actions.append(_compile_one(index, data, loc, engine, kinds, recorder, field_manager,
                                    fields or {}))
    _check_result_reads(actions)
    datas = [_unwrap(spec, None, base, i)[0] for i, spec in enumerate(specs)]
    return ActionProgram(controller, actions, budgets=engine.budget,
                         vars=read_vars(compile_vars(vars, engine), datas))


def read_vars(compiled: Sequence[CompiledVar], datas: Sequence[Any]) -> tuple[CompiledVar, ...]:
    """The vars a list of actions reads (``datas``: their mappings), in order: those its
    templates, ``when:`` and ``forEach:`` name, and the earlier vars those read, transitively.
    The others are never evaluated by this list (so ``onDelete``, where ``obj`` is None, does
    not evaluate a var written for the live object)."""
    needed = set().union(*(template_names(template_sources(d)) for d in datas))
    kept = []
    for var in reversed(compiled):
        if var.name in needed:
            needed |= var.reads
            kept.append(var)
    return tuple(reversed(kept))


_NAMES_PARSER = jinja2.Environment()
"""Parses sources for :func:`template_names` (no filters or tests are resolved)."""


def template_names(sources: Any) -> frozenset[str]:
    """Every name (variable, function) that (text, is_expression) ``sources`` load: the
    ``Name`` nodes of their syntax trees, a superset of what they read from the context (a
    loop variable named as a var counts too: that var is then evaluated, never wrongly
    skipped). A source that does not parse reads nothing (its syntax error is reported where
    it is compiled)."""
    names: set[str] = set()
    for text, expression in sources:
        if expression and "{{" not in text and "{%" not in text:
            text = "{{ " + text + " }}"
        try:
            tree = _NAMES_PARSER.parse(text)
        except jinja2.TemplateSyntaxError:
            continue
        names.update(n.name for n in tree.find_all(jinja2.nodes.Name) if n.ctx == "load")
    return frozenset(names)


def compile_vars(vars: Any, engine: TemplateEngine) -> tuple[CompiledVar, ...]:
    """Compile ``reconcile.vars`` (a mapping name -> expression, in order, or a sequence of
    objects with ``name``, ``expression``, ``location``) with ``engine``: each expression with
    or without ``{{ }}`` (text mixing literal parts renders as a string). Raises ConfigError at
    the var for a syntax error, a name that is not an identifier, a Jinja2 keyword, a name of
    :data:`RESERVED_VAR_NAMES`, or a name given twice."""
    if isinstance(vars, Mapping):
        vars = [(name, expr, None) for name, expr in vars.items()]
    compiled: list[CompiledVar] = []
    for index, var in enumerate(vars):
        name, expr, where = var if isinstance(var, tuple) else (
            var.name, var.expression, getattr(var, "location", None))
        loc = as_location(where, f"vars.{name}")
        if not isinstance(name, str) or not name.isidentifier() or name in _JINJA_KEYWORDS:
            raise loc.config_error(f"vars: {name!r} is not a valid var name (a letter or '_', "
                                   "then letters, digits or '_'; no Jinja2 keyword)")
        if name in RESERVED_VAR_NAMES:
            raise loc.config_error(f"vars: {name!r} would shadow the template name {name!r} "
                                   f"(reserved: {', '.join(RESERVED_VAR_NAMES)})")
        if any(c.name == name for c in compiled):
            raise loc.config_error(f"vars: {name!r} is given twice")
        if not isinstance(expr, str) or not expr.strip():
            raise loc.config_error(f"vars: {name} must be a non-empty expression string")
        if result_reads([(expr, True)]) != frozenset():
            raise loc.config_error(f"vars: {name} reads results: vars are evaluated before any "
                                   "action runs; read results in the action that needs them")
        compiled.append(CompiledVar(index, name, loc, engine.value(expr, loc),
                                    template_names([(expr, True)])))
    return tuple(compiled)


def _unwrap(spec: Any, given: Any, base: SourceLocation, index: int
            ) -> tuple[Mapping[str, Any], SourceLocation]:
    loc = given if given is not None else getattr(spec, "location", None)
    data = spec
    if not isinstance(spec, Mapping):
        data = next((getattr(spec, a) for a in ("raw", "data", "spec")
                     if isinstance(getattr(spec, a, None), Mapping)), spec)
    default = base.child(f"[{index}]")
    return data, (as_location(loc, default.path) if loc is not None else default)


def _compile_one(index: int, data: Any, loc: SourceLocation, engine: TemplateEngine,
                 kinds: Mapping[str, ActionKind], recorder: EventRecorder,
                 field_manager: str, fields: Mapping[str, Any]) -> CompiledAction:
    if not isinstance(data, Mapping):
        raise loc.config_error(f"an action must be a mapping, got {type(data).__name__}")
    if isinstance(data.get("plugin"), str):  # the config form {plugin: K, with: W} -> {K: W}
        data = {**{k: v for k, v in data.items() if k in _RESERVED_KEYS},
                data["plugin"]: data.get("with") or {}}
    kind_keys = [k for k in data if k not in _RESERVED_KEYS]
    if len(kind_keys) != 1:
        known = ", ".join([*BUILTIN_KINDS, *sorted(kinds)])
        raise loc.config_error(f"an action needs exactly one kind ({known}), got "
                               f"{', '.join(map(str, kind_keys)) or 'none'}")
    kind = kind_keys[0]
    if kind not in BUILTIN_KINDS and kind not in kinds:
        known = ", ".join([*BUILTIN_KINDS, *sorted(kinds)])
        raise loc.config_error(f"unknown action kind {kind!r} (known: {known})")
    impl = _builtin(kind, data[kind], engine, loc.child(f".{kind}"), recorder, field_manager,
                    fields) \
        if kind in BUILTIN_KINDS else PluginAction(kind, kinds[kind], data[kind], engine,
                                                   loc.child(f".{kind}"))
    label = str(data.get("name") or kind)
    reads = result_reads(template_sources(data))
    return CompiledAction(index, label, loc, _compile_when(data.get("when"), engine, loc), impl,
                          reads, _compile_loop(data, kind, engine, loc, fields))


def _compile_loop(data: Mapping[str, Any], kind: str, engine: TemplateEngine,
                  loc: SourceLocation, fields: Mapping[str, Any]) -> ActionLoop | None:
    """An action's ``forEach``/``as`` (None without forEach). ConfigError for ``as`` without
    ``forEach``, a forEach that is not an expression, an ``as`` that is no name or hides one
    the templates need, for ``applySet``, which loops inside (``applySet.forEach``), and for
    ``children`` (one set per parent)."""
    each, name = data.get("forEach"), data.get("as", "item")
    if each is None:
        if "as" in data:
            raise loc.child(".as").config_error("as names the forEach item: give forEach too")
        return None
    where = as_location(fields["forEach"], f"{loc.path}.forEach") if fields.get("forEach") \
        else loc.child(".forEach")
    if kind in ("applySet", "stop", "children"):
        raise where.config_error(
            "applySet loops inside: write applySet.forEach (its children form one set)"
            if kind == "applySet" else "children is one set per parent: name each child "
            "under resources (a loop would make sets that prune each other)"
            if kind == "children" else "stop ends the whole reconcile, so it does not loop: "
            "test the list in its when (such as items | selectattr(...) | list)")
    if not isinstance(each, str) or not each.strip():
        raise where.config_error(f"forEach must be an expression giving a list, got {each!r}")
    if not isinstance(name, str) or not name.isidentifier() or name in _LOOP_SHADOWED \
            or name in _JINJA_KEYWORDS:
        raise loc.child(".as").config_error(
            f"as must be a variable name other than {', '.join(_LOOP_SHADOWED)}, got {name!r}")
    return ActionLoop(engine.value(each, where), name, where)


def _check_result_reads(actions: Sequence[CompiledAction]) -> None:
    """Each name an action reads from ``results`` is the name of one earlier action; at most
    one ``applySet`` per list (two would share the parent's ApplySet id), none in ``onDelete``
    (no parent). ConfigError at the action otherwise."""
    sets = [a for a in actions if isinstance(a.impl, ApplySetAction)]
    for action in sets:
        if ".onDelete[" in action.location.path:
            raise action.location.config_error(
                "applySet cannot run in onDelete: its parent, the reconciled object, is gone "
                "(owned children go with it through the garbage collector)")
    if len(sets) > 1:
        raise sets[1].location.config_error(
            f"a second applySet in one list ({sets[0].location.path} is the first): both would "
            "be the ApplySet of the same parent; put every child in one applySet")
    for action in actions:
        for name in sorted(action.reads or ()):
            earlier = [a for a in actions[:action.index] if a.label == name]
            if len(earlier) == 1:
                continue
            if earlier:
                raise action.location.config_error(
                    f"results.{name}: {len(earlier)} earlier actions are named {name!r}; "
                    "give them distinct names")
            later = any(a.label == name for a in actions[action.index:])
            known = ", ".join(a.label for a in actions[:action.index]) or "none"
            raise action.location.config_error(
                f"results.{name}: " + ("that action runs at or after this one; only earlier "
                                       "actions have results" if later else
                                       f"no earlier action is named {name!r} (earlier: {known})"))


def _builtin(kind: str, value: Any, engine: TemplateEngine, loc: SourceLocation,
             recorder: EventRecorder, field_manager: str, fields: Mapping[str, Any]) -> Any:
    if kind == "apply":
        return ApplyAction(value, engine, loc, field_manager)
    if kind == "event":
        return EventAction(value, engine, loc, recorder)
    if kind == "status":  # lastTransitionTime from the plan's clock, as now() in templates
        return StatusAction(value, engine, loc, engine.clock)
    if kind == "applySet":
        return ApplySetAction(value, engine, loc, field_manager, fields)
    if kind == "children":
        return ChildrenAction(value, engine, loc, field_manager, fields)
    if kind == "create":
        return CreateAction(value, engine, loc)
    return {"log": LogAction, "patch": PatchAction, "delete": DeleteAction,
            "requeueAfter": RequeueAfterAction, "stop": StopAction,
            "fail": FailAction}[kind](value, engine, loc)


def _compile_when(when: Any, engine: TemplateEngine, loc: SourceLocation) -> Any:
    if when is None or isinstance(when, bool):
        return when
    if not isinstance(when, str):
        raise loc.child(".when").config_error(f"when must be an expression string, got {when!r}")
    return engine.value(when, loc.child(".when"))


def plugin_action_kinds(plugin_manager: Any) -> dict[str, ActionKind]:
    """Merge every plugin's ``kinrun_action_kinds``; a clash is a ConfigError."""
    merged: dict[str, ActionKind] = {}
    for name, func in _merged_hook(plugin_manager, "kinrun_action_kinds", "action kind").items():
        if name in BUILTIN_KINDS or name in _RESERVED_KEYS:
            raise ConfigError(f"plugin action kind {name!r} clashes with a built-in name")
        if not callable(func):
            raise ConfigError(f"plugin action kind {name!r} is not callable")
        merged[name] = func
    return merged


def plugin_template_filters(plugin_manager: Any) -> dict[str, Callable[..., Any]]:
    """Merge every plugin's ``kinrun_template_filters``; a clash is a ConfigError."""
    return _merged_hook(plugin_manager, "kinrun_template_filters", "template filter")


def _merged_hook(plugin_manager: Any, hook: str, what: str) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    if plugin_manager is None:
        return merged
    for answer in getattr(plugin_manager.hook, hook)():
        for name, value in (answer or {}).items():
            if name in merged:
                raise ConfigError(f"two plugins define the {what} {name!r}")
            merged[name] = value
    return merged

