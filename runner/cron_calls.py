"""``validate``'s check of the template functions ``cron_next``/``cron_prev`` called with a
literal cron expression: a bad one (``cron_next('0 25 * * *')``, or one that never fires such
as ``'0 0 30 2 *'``) fails every render, so it is refused offline, as ``schedule:`` is
(:class:`kinrun.cron.CronSchedule`, one parser for both).

Read from the template's Jinja2 syntax tree (``TemplateEngine.syntax_tree``): the expression
is the first positional argument or ``expression=``, the zone the second or ``time_zone=``
(as ``kinrun.templating`` defines the functions). An argument that is not a string constant
is computed: not checked here (its render reports it); a computed zone leaves the expression
checked in UTC.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from jinja2 import nodes

from kinrun.cron import CronSchedule, ScheduleError

FUNCTIONS = ("cron_next", "cron_prev")
"""The template functions whose first argument is a cron expression."""


@dataclass(frozen=True)
class CronCallProblem:
    """A ``function`` call at template ``line`` (1-based) whose literal arguments
    CronSchedule refuses; ``message`` is its ScheduleError's text."""

    function: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.function}(...): {self.message} (template line {self.line})"


def cron_call_problems(tree: nodes.Node | None) -> Iterator[CronCallProblem]:
    """The calls of :data:`FUNCTIONS` in ``tree`` (None: a template that does not parse,
    nothing) whose literal expression (and zone) are refused, in the template's order."""
    for call in tree.find_all(nodes.Call) if tree is not None else ():
        if not (isinstance(call.node, nodes.Name) and call.node.name in FUNCTIONS):
            continue
        expression = _literal(_argument(call, 0, "expression"))
        if not isinstance(expression, str):
            continue
        zone = _literal(_argument(call, 1, "time_zone"))
        try:
            CronSchedule(expression, zone if isinstance(zone, str) else None)
        except ScheduleError as exc:
            yield CronCallProblem(call.node.name, call.lineno, str(exc))


def _argument(call: nodes.Call, position: int, keyword: str) -> nodes.Node | None:
    if len(call.args) > position:
        return call.args[position]
    return next((kw.value for kw in call.kwargs if kw.key == keyword), None)


def _literal(node: nodes.Node | None) -> Any:
    """A constant argument's value; None for a computed one (or none given)."""
    return node.value if isinstance(node, nodes.Const) else None


__all__ = ["FUNCTIONS", "CronCallProblem", "cron_call_problems"]
