"""EventCorrelator: what to do with the next core/v1 Event, as client-go's recorder decides it.

The semantics and constants are those of client-go ``tools/record/events_cache.go``
(``NewEventCorrelator``); each Event a recorder is asked to record passes three stages, in order:

1. **Aggregation** (``EventAggregator``, :data:`AGGREGATE_MAX_EVENTS` = 10,
   :data:`AGGREGATE_INTERVAL` = 600 s): events that are *similar* (the same source,
   involvedObject, type, reason, reportingComponent and reportingInstance; only the message
   differs) are counted by distinct message. Once 10 distinct messages were seen, each less
   than 600 s after the previous similar event, the event is replaced by one whose message is
   ``(combined from similar events): <message>``, recorded under the similarity key, so every
   further similar event raises the count of that one combined Event.
2. **Counting** (``eventLogger``, an LRU cache of :data:`LRU_CACHE_ENTRIES` = 4096): an event
   *identical* to one recorded before (the same source, involvedObject with fieldPath, type,
   reason and message) is not created again: the earlier Event is patched with ``count`` + 1,
   the new ``lastTimestamp`` and the message (a strategic merge patch, as client-go sends).
3. **Spam filter** (``EventSourceObjectSpamFilter``): a token bucket per source and
   involvedObject (the reason and message do not matter) of :data:`SPAM_BURST` = 25 tokens
   refilled at :data:`SPAM_QPS` = 1 per 300 s; an event finding the bucket empty is dropped
   (``skip``). Counted events take tokens too.

Pure data and time, no I/O (``kinrun.kube.event_recorder`` sends what this decides). Time is
read from ``clock`` (seconds; only differences are used, so a monotonic or a wall clock both
do; a ``kinrun.clock.FakeClock``'s ``now`` in tests).

Thread-safety: every method may be called from any thread; one lock guards the three caches
(the token buckets lock themselves). Invariant: each cache holds at most ``cache_size``
entries, the least recently used evicted first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kinrun.clock import REAL_CLOCK, Clock
from kinrun.kube.ratelimit import TokenBucket

LRU_CACHE_ENTRIES = 4096
"""Entries of each cache (client-go ``maxLruCacheEntries``)."""
AGGREGATE_MAX_EVENTS = 10
"""Distinct messages of similar events before they are combined (client-go
``defaultAggregateMaxEvents``)."""
AGGREGATE_INTERVAL = 600.0
"""Seconds after the last similar event when counting starts over (client-go
``defaultAggregateIntervalInSeconds``)."""
SPAM_BURST = 25
"""Events a source may record about one object at once (client-go ``defaultSpamBurst``)."""
SPAM_QPS = 1.0 / 300.0
"""Refill of that budget, events per second: one every 5 minutes (client-go
``defaultSpamQPS``)."""
COMBINED_PREFIX = "(combined from similar events): "
"""What an aggregated event's message starts with (client-go
``EventAggregatorByReasonMessageFunc``)."""

Obj = dict[str, Any]
K = TypeVar("K")
V = TypeVar("V")


class _LRU(Generic[K, V]):
    """A size-bounded mapping: ``get`` and ``put`` make an entry the most recent; putting past
    ``size`` evicts the least recent (groupcache ``lru.Cache``). Not thread-safe: the
    correlator's lock guards it."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        if len(self._items) > self._size:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


def _source(event: Mapping[str, Any]) -> tuple[str, str]:
    source = event.get("source") or {}
    return str(source.get("component") or ""), str(source.get("host") or "")


def _involved(event: Mapping[str, Any], *fields: str) -> tuple[str, ...]:
    ref = event.get("involvedObject") or {}
    return tuple(str(ref.get(f) or "") for f in fields)


def spam_key(event: Mapping[str, Any]) -> tuple[str, ...]:
    """Source and involvedObject (kind, namespace, name, uid, apiVersion): what the spam filter
    counts per (client-go ``getSpamKey``)."""
    return (*_source(event), *_involved(event, "kind", "namespace", "name", "uid", "apiVersion"))


def event_key(event: Mapping[str, Any]) -> tuple[str, ...]:
    """What makes two events identical: source, involvedObject (with fieldPath), type, reason
    and message (client-go ``getEventKey``)."""
    return (*_source(event),
            *_involved(event, "kind", "namespace", "name", "fieldPath", "uid", "apiVersion"),
            str(event.get("type") or ""), str(event.get("reason") or ""),
            str(event.get("message") or ""))


def aggregate_key(event: Mapping[str, Any]) -> tuple[str, ...]:
    """What makes two events similar: as :func:`event_key` without the message (and without
    the fieldPath), with reportingComponent and reportingInstance (client-go
    ``EventAggregatorByReasonFunc``)."""
    return (*_source(event), *_involved(event, "kind", "namespace", "name", "uid", "apiVersion"),
            str(event.get("type") or ""), str(event.get("reason") or ""),
            str(event.get("reportingComponent") or ""), str(event.get("reportingInstance") or ""))


@dataclass(frozen=True)
class Correlated:
    """The correlator's answer for one event. ``skip``: drop it (the spam filter); else
    ``event``: the Event to record (a new dict: the given one, its combined form, or the earlier
    Event's name, firstTimestamp and resourceVersion with the count raised) and ``patch``: None
    to create ``event``, or the strategic merge patch (``count``, ``lastTimestamp``,
    ``message``) to send to the existing Event ``event.metadata.name``."""

    event: Obj | None
    patch: Obj | None = None
    skip: bool = False


@dataclass
class _Aggregate:
    messages: set[str]
    last_seen: float


@dataclass(frozen=True)
class _Logged:
    count: int
    first_timestamp: Any
    name: str
    resource_version: str


class EventCorrelator:
    """Filters, combines and counts events before they are sent (client-go
    ``EventCorrelator``; module docstring for the rules). ``clock``: intervals are measured on
    its ``now()`` (monotonic seconds; differences only), and the spam filter's token buckets
    run on it. The other arguments default to client-go's constants."""

    def __init__(self, clock: Clock = REAL_CLOCK, *, cache_size: int = LRU_CACHE_ENTRIES,
                 max_events: int = AGGREGATE_MAX_EVENTS,
                 max_interval: float = AGGREGATE_INTERVAL, burst: int = SPAM_BURST,
                 qps: float = SPAM_QPS) -> None:
        self._clock = clock
        self._max_events = max_events
        self._max_interval = max_interval
        self._burst, self._qps = burst, qps
        self._lock = threading.Lock()
        self._aggregates: _LRU[tuple[str, ...], _Aggregate] = _LRU(cache_size)
        self._logged: _LRU[tuple[str, ...], _Logged] = _LRU(cache_size)
        self._spam: _LRU[tuple[str, ...], TokenBucket] = _LRU(cache_size)

    def correlate(self, event: Mapping[str, Any]) -> Correlated:
        """Decide what recording ``event`` (a core/v1 Event dict, ``count`` 1) sends: a create,
        a patch of an earlier Event, or nothing (client-go ``EventCorrelate``). Updates the
        caches: the count is raised even when the send then fails (as client-go)."""
        with self._lock:
            now = self._clock.now()
            observed, key = self._aggregate(event, now)
            observed, patch = self._observe(observed, key)
            spam = spam_key(observed)
            bucket = self._spam.get(spam)
            if bucket is None:
                bucket = TokenBucket(self._qps, self._burst, clock=self._clock)
                self._spam.put(spam, bucket)
        if not bucket.try_accept():
            return Correlated(None, skip=True)
        return Correlated(observed, patch)

    def update_state(self, event: Mapping[str, Any]) -> None:
        """Remember the server's answer ``event`` (its name, count, firstTimestamp and
        resourceVersion) under its :func:`event_key`, so the next identical event patches it
        (client-go ``UpdateState``)."""
        with self._lock:
            self._logged.put(event_key(event), _logged(event))

    def _aggregate(self, event: Mapping[str, Any], now: float) -> tuple[Obj, tuple[str, ...]]:
        key = aggregate_key(event)
        record = self._aggregates.get(key)
        if record is None or now - record.last_seen > self._max_interval:
            record = _Aggregate(set(), now)
        record.messages.add(str(event.get("message") or ""))
        record.last_seen = now
        self._aggregates.put(key, record)
        if len(record.messages) < self._max_events:
            return _copy(event), event_key(event)
        record.messages.pop()  # the set never grows past the threshold
        combined = _copy(event)
        combined["message"] = COMBINED_PREFIX + str(event.get("message") or "")
        return combined, key

    def _observe(self, event: Obj, key: tuple[str, ...]) -> tuple[Obj, Obj | None]:
        last = self._logged.get(key)
        patch = None
        if last is not None and last.count > 0:
            meta = event["metadata"] = dict(event.get("metadata") or {})
            meta["name"] = last.name
            if last.resource_version:
                meta["resourceVersion"] = last.resource_version
            event["firstTimestamp"] = last.first_timestamp
            event["count"] = last.count + 1
            patch = {"count": event["count"], "lastTimestamp": event.get("lastTimestamp"),
                     "message": event.get("message")}
        self._logged.put(key, _logged(event))
        return event, patch


def _logged(event: Mapping[str, Any]) -> _Logged:
    meta = event.get("metadata") or {}
    return _Logged(int(event.get("count") or 1), event.get("firstTimestamp"),
                   str(meta.get("name") or ""), str(meta.get("resourceVersion") or ""))


def _copy(event: Mapping[str, Any]) -> Obj:
    """A copy deep enough for what the correlator changes (metadata, top-level fields)."""
    out = dict(event)
    out["metadata"] = dict(event.get("metadata") or {})
    return out
