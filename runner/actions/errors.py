"""Errors of templated actions: which controller, which action, where in the config, and why.

    KinrunError
    └── ActionError            an action of a reconcile could not be carried out (retried)
        └── RenderError        rendering or checking failed; nothing of the reconcile was sent
            └── BudgetError    the reconcile's templates went over templates.budget
"""

from __future__ import annotations

from kinrun.errors import KinrunError
from kinrun.templating import BudgetExceeded, SourceLocation


class ActionError(KinrunError):
    """An action of a reconcile could not be carried out.

    Not a ReconcileError: the controller retries the key with backoff, like any other failure,
    and other keys and controllers go on. Attributes: ``controller``; ``index`` (0-based position
    in its list); ``label`` (the action's ``name:``, else its kind); ``location``
    (:class:`~kinrun.templating.SourceLocation` of the action); ``detail`` (what went wrong);
    ``template_line`` (1-based line inside the failing template, or None).
    ``str()``: ``file:line: path: controller 'c' action [i] (label): detail (template line n)``.
    """

    def __init__(self, detail: str, *, controller: str, index: int, label: str,
                 location: SourceLocation, template_line: int | None = None) -> None:
        self.detail = detail
        self.controller = controller
        self.index = index
        self.label = label
        self.location = location
        self.template_line = template_line
        where = f" (template line {template_line})" if template_line else ""
        super().__init__(f"{location}: controller {controller!r} action [{index}] ({label}): "
                         f"{detail}{where}")


class RenderError(ActionError):
    """Rendering or checking an action failed; nothing of that reconcile was sent."""


class BudgetError(RenderError):
    """The templates of one reconcile went over their shared budget (``templates.budget``) in
    this action: ``exceeded`` is the :class:`~kinrun.templating.BudgetExceeded` (``reason``,
    ``used``, ``limit``, ``setting``). A RenderError, so the controller retries the key with
    backoff and the worker goes on with the next key; ``detail`` reads ``template budget
    exceeded: more than 100000 loop steps (templates.budget.maxLoopSteps)``."""

    def __init__(self, exceeded: BudgetExceeded, *, controller: str, index: int, label: str,
                 location: SourceLocation) -> None:
        self.exceeded = exceeded
        super().__init__(exceeded.detail, controller=controller, index=index, label=label,
                         location=location, template_line=exceeded.template_line)
