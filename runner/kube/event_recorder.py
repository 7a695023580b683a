"""EventRecorder: records core/v1 Events of one controller through the correlator, as client-go's
``record.EventRecorder`` with its ``EventCorrelator`` and ``recordToSink``.

An ``event`` action renders an :class:`EventRequest`: the create of the Event as it would be
sent the first time (what ``kinrun render`` and dry-run show). At execute time the action
program hands it to the recorder it carries, which asks its
:class:`~kinrun.kube.event_correlator.EventCorrelator` and then:

* creates the Event (a new one, or the combined one for similar events),
* or PATCHes the earlier identical Event (strategic merge patch of ``count``, ``lastTimestamp``
  and ``message``); when that Event is gone (404, e.g. the events TTL removed it), creates it
  again with the raised count and the same name (client-go ``recordEvent``),
* or sends nothing (the spam filter dropped it).

The server's answer updates the correlator (``UpdateState``), so the next patch names the
Event the server holds. Unlike client-go, which sends from a background goroutine and retries
up to 12 times, the request is sent in the reconcile that records it, so ``kinrun test`` sees
it in order and an API failure fails that reconcile like any other step (it is retried with
the key).

The correlator's state lives in the recorder, one per controller and process (plan), shared
by the controller's action programs (``actions``, ``onDelete``, ``finalize``). Thread-safety:
``record`` may be called from every worker at once; the correlator locks its caches, the
sending is not serialized, so two workers recording the same event at the same moment may both
create it (each later occurrence patches the one the server answered last).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kinrun.clock import REAL_CLOCK, Clock
from kinrun.errors import NotFoundError
from kinrun.kube.event_correlator import EventCorrelator
from kinrun.kube.events import event_about
from kinrun.kube.request import ApiRequest

Obj = dict[str, Any]


@dataclass(frozen=True)
class EventRequest(ApiRequest):
    """The create of a core/v1 Event as first sent (an ApiRequest: rendered, described and
    checked like any), plus ``recorder``, which decides at execute time whether it is created,
    patched or dropped (None: sent as is). ``recorder`` is neither compared nor described."""

    recorder: Any = field(default=None, compare=False, repr=False)


class EventRecorder:
    """Records Events from ``component`` (``source.component`` and ``reportingComponent``) on
    ``host`` (``source.host`` and ``reportingInstance``; None: left out, as client-go
    controllers do) through one :class:`EventCorrelator`.

    ``clock``: the run's Clock: its ``wall()`` stamps Event names and timestamps, its
    ``now()`` measures the correlator's intervals. Thread-safe (module docstring)."""

    def __init__(self, component: str, host: str | None = None, *,
                 clock: Clock = REAL_CLOCK,
                 correlator: EventCorrelator | None = None) -> None:
        self.component = component
        self.host = host or None
        self._clock = clock
        self.correlator = correlator or EventCorrelator(clock)

    def event(self, ref: Mapping[str, Any], *, type: str, reason: str,
              message: str) -> EventRequest:
        """The EventRequest of an Event about ``ref`` (an ObjectReference dict with name),
        stamped now (``kinrun.kube.events.event_about``). Raises ValueError without a name."""
        body = event_about(ref, type=type, reason=reason, message=message,
                           component=self.component, host=self.host,
                           now_ns=int(self._clock.wall() * 1e9))
        meta = body["metadata"]
        return EventRequest("create", "v1", "Event", meta["name"], meta["namespace"],
                            body=body, recorder=self)

    def record(self, client: Any, request: ApiRequest) -> tuple[ApiRequest | None, Any]:
        """Correlate ``request``'s Event and send what that decides through
        ``client.execute``; returns (the request sent last: the create or the patch, the
        server's answer to it), or (None, None) when the spam filter dropped the event. Raises
        the client's ApiError (a 404 of the patch is answered by a create)."""
        decided = self.correlator.correlate(request.body)
        if decided.skip or decided.event is None:
            return None, None
        event = decided.event
        meta = event["metadata"]
        sent: ApiRequest
        if decided.patch is not None:
            sent = ApiRequest("patch", "v1", "Event", meta["name"], meta["namespace"],
                              body=decided.patch, patch_type="strategic")
            try:
                answer = client.execute(sent)
            except NotFoundError:
                sent, answer = self._create(client, event)
        else:
            sent, answer = self._create(client, event)
        if isinstance(answer, Mapping) and answer.get("metadata"):
            self.correlator.update_state(answer)
        return sent, answer

    @staticmethod
    def _create(client: Any, event: Obj) -> tuple[ApiRequest, Any]:
        body = dict(event)
        body["metadata"] = {k: v for k, v in (event.get("metadata") or {}).items()
                            if k != "resourceVersion"}
        sent = ApiRequest("create", "v1", "Event", body["metadata"]["name"],
                          body["metadata"]["namespace"], body=body)
        return sent, client.execute(sent)
