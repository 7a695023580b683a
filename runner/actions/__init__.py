"""Templated actions: what a controller does per reconcile when configured without code.

A controller's ``reconcile.actions`` (object exists), ``finalize`` (object terminating, held by
the controller's finalizer: ``kinrun.actions.finalizer``) and ``onDelete`` (object gone) lists are
compiled once at start-up into an :class:`ActionProgram`; per reconcile it renders every action
(sandboxed Jinja2, see :mod:`kinrun.templating`) into steps, checks them, and only then sends
them in order. Built-in kinds: ``log``, ``apply`` (server-side apply, optional owner reference),
``patch`` (merge/json/strategic, main or status subresource), ``delete``, ``event``,
``requeueAfter``, ``create`` (POST, ``generateName``), ``applySet`` (children with ApplySet
pruning, ``kinrun.actions.applyset``), ``status`` (the status subresource, conditions merged by
type, written only when it changes: ``kinrun.actions.status``); a later action reads earlier answers as ``results``
(``kinrun.actions.results``); plugins add kinds through the ``kinrun_action_kinds`` hook.

Belongs here: compiling, rendering and checking action specs, and executing rendered steps
through a client's ``execute``. Not here: HTTP (``kinrun.kube``), retries (``kinrun.controller``),
the config model (``kinrun.config``): specs arrive as plain mappings.
"""

from kinrun.durations import parse_duration
from kinrun.actions.errors import ActionError, BudgetError, RenderError
from kinrun.actions.program import (
    DEFAULT_FIELD_MANAGER, ActionProgram, CompiledAction, compile_actions, execute,
    lookup_functions, plugin_action_kinds, plugin_template_filters,
)
from kinrun.actions.steps import (
    LOG_LEVELS, ActionKind, LogLine, RenderResult, RequeueAfter, Step,
)
from kinrun.kube.request import ApiRequest

__all__ = [
    "ActionError", "ActionKind", "ActionProgram", "ApiRequest", "BudgetError", "CompiledAction",
    "DEFAULT_FIELD_MANAGER", "LOG_LEVELS", "LogLine", "RenderError", "RenderResult",
    "RequeueAfter", "Step", "compile_actions", "execute", "lookup_functions", "parse_duration",
    "plugin_action_kinds", "plugin_template_filters",
]
