"""What rendering a reconcile's actions produces: steps, described as data before anything runs.

A render gives a :class:`RenderResult`: an ordered list of steps, each an
:class:`~kinrun.kube.request.ApiRequest` (sent through ``client.execute``), a :class:`LogLine`
(logged), a :class:`RequeueAfter` (the reconcile asks to run again) or a :class:`CompoundStep`
(several writes of which some depend on what the server answers, such as an ``applySet``'s
prune: ``kinrun.actions.applyset.ApplySetStep``). Plugins extend the action vocabulary with an
:class:`ActionKind`, which returns the first three. Pure data; no I/O here.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, Union

from kinrun.kube.request import ApiRequest
from kinrun.result import smallest_delay

if TYPE_CHECKING:  # pragma: no cover
    from kinrun.hooks import ReconcileContext

LOG_LEVELS: Mapping[str, int] = {
    "debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
    "error": logging.ERROR,
}
"""Level names a ``log`` action accepts, and their ``logging`` numbers."""


@dataclass(frozen=True)
class LogLine:
    """Log ``message`` at ``level`` (a :data:`LOG_LEVELS` name) on the controller's logger."""

    level: str
    message: str

    def describe(self) -> dict[str, Any]:
        """A JSON-ready dict, as ``kinrun render`` prints it."""
        return {"log": self.message, "level": self.level}


@dataclass(frozen=True)
class RequeueAfter:
    """Reconcile the key again after ``seconds`` (>= 0); the smallest of a render wins."""

    seconds: float

    def describe(self) -> dict[str, Any]:
        """A JSON-ready dict, as ``kinrun render`` prints it."""
        return {"requeueAfter": self.seconds}


class CompoundStep(Protocol):
    """A step of several writes, carried out by the program's executor (``execute``).

    ``execute(send, client)``: ``send(ApiRequest) -> answer`` sends one write as the executor
    sends any request (logged, recorded by ``kinrun test``, errors located at the action);
    ``client`` is for reads (LIST, discovery). Returns the step's answer (``results``).
    ``describe_all()``: the planned writes as JSON-ready dicts (``kinrun render``, dry-run
    without a client); ``summary()``: one line for logs."""

    def execute(self, send: Any, client: Any) -> Any: ...

    def describe_all(self) -> list[dict[str, Any]]: ...

    def summary(self) -> str: ...


Step = Union[ApiRequest, LogLine, RequeueAfter, CompoundStep]
STEP_TYPES = (ApiRequest, LogLine, RequeueAfter)
"""The step types a plugin action kind may return."""


def is_compound(step: Any) -> bool:
    """Whether ``step`` is a :class:`CompoundStep` (carried out by its own ``execute``)."""
    return hasattr(step, "describe_all") and hasattr(step, "execute")


@dataclass(frozen=True)
class RenderResult:
    """The steps of one reconcile, in action order; nothing has been sent yet. ``origins``:
    where each step comes from (``file:line: controllers[0].reconcile.actions[1]``), one per
    step, or empty when unknown."""

    steps: tuple[Step, ...] = ()
    origins: tuple[str, ...] = ()

    @property
    def requests(self) -> list[ApiRequest]:
        """The API requests, in order."""
        return [s for s in self.steps if isinstance(s, ApiRequest)]

    @property
    def log_lines(self) -> list[LogLine]:
        """The log lines, in order."""
        return [s for s in self.steps if isinstance(s, LogLine)]

    @property
    def requeue_after(self) -> float | None:
        """The smallest requested requeue delay in seconds, or None."""
        return smallest_delay(s.seconds for s in self.steps if isinstance(s, RequeueAfter))

    def describe(self) -> list[dict[str, Any]]:
        """Every step as a JSON-ready dict (``kinrun render``); a compound step gives one per
        planned write."""
        out: list[dict[str, Any]] = []
        for step in self.steps:
            if is_compound(step):
                out.extend(step.describe_all())
            else:
                out.append(_shown(step))
        return out


def _shown(step: Any) -> dict[str, Any]:
    """``step.describe()``; a create of an object the server names (``name: ''``) shows its
    ``generateName`` in the place of the name, as no name is known before the server answers."""
    out = step.describe()
    if isinstance(step, ApiRequest) and step.verb == "create" and not step.name:
        generate = ((step.body or {}).get("metadata") or {}).get("generateName")
        if isinstance(generate, str) and generate:
            out = {("generateName" if k == "name" else k): (generate if k == "name" else v)
                   for k, v in out.items()}
    return out


class ActionKind(Protocol):
    """An action kind contributed by a plugin (``kinrun_action_kinds`` hook).

    Called once per action per reconcile while rendering, before anything is sent:
    ``args`` is the action's value (mapping, list or scalar) with every string rendered as a
    template; ``obj`` the reconciled object (None in ``onDelete``); ``ctx`` the
    :class:`kinrun.hooks.ReconcileContext`. It returns the steps to run (may be empty) and must
    not do I/O itself. Any exception fails the render of that reconcile (retried with backoff).
    """

    def __call__(self, args: Any, *, obj: dict[str, Any] | None,
                 ctx: ReconcileContext) -> Iterable[Step]: ...
