"""Paged LIST and streamed WATCH of one collection, as raw dicts: the HTTP ListerWatcher.

Implements ``kinrun.cache.listwatch.ListerWatcher`` over ``Transport``.

LIST follows client-go ``tools/pager.ListPager.List``: pages of ``limit`` objects chained by
``continue`` tokens; only the first page carries the requested resourceVersion (the server
rejects a resourceVersion next to a continue token); when a continue token expires part-way
(410), the partial pages are dropped and one unpaged LIST with the original resourceVersion is
made instead. Items get ``apiVersion``/``kind`` from the list (the server omits them on items).
Each page is decoded item by item while its body is read (``Transport.request_pieces`` feeding
``kinrun.kube.list_body.ListDecoder``): the body is never held whole.

WATCH is decoded line by line as bytes arrive: a chunked body is de-chunked by ``ChunkedBody``
straight from the connection's socket reader (every event that has arrived, per read), split
on newlines, and each line is one ``orjson.loads`` (with ``drop_managed_fields``, after
``metadata.managedFields`` was cut from the bytes: ``kinrun.kube.managed_fields``). No model
classes, no per-event copies. The
socket read timeout is longer than the server's ``timeoutSeconds`` (the kubernetes client sets
none, so a silently dead connection would otherwise block the reflector forever). ERROR events
raise typed errors (410 -> ExpiredError with the server's message).

Metadata only (``metadata_only``): LIST and WATCH ask for PartialObjectMetadata with the Accept
headers of client-go's ``metadata`` client (``as=PartialObjectMetadataList;g=meta.k8s.io;v=v1``
for a LIST, ``as=PartialObjectMetadata`` for a WATCH, each with ``application/json`` as the
fallback), so the server sends only ``metadata`` per object. The objects are given the watched
resource's ``apiVersion`` and ``kind`` (not ``meta.k8s.io/v1`` ``PartialObjectMetadata``), as
controller-runtime's metadata cache sets the requested GVK on what it returns: owner references,
events and GETs built from them name the real kind. A server that ignores the Accept header and
sends whole objects gets them cut down to ``apiVersion``/``kind``/``metadata`` here, so the cache
holds the same either way.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import urllib3

from kinrun.cache.listwatch import ObjectList, WatchEvent
from kinrun.errors import ApiError, ExpiredError
from kinrun.gc import observer as gc_observer
from kinrun.gc.pause import gc_paused
from kinrun.kube.http_errors import error_from_exception, error_from_status
from kinrun.kube.chunked import READ_SIZE, ChunkedBody
from kinrun.kube.list_body import (
    MIN_BYTES,
    PIECE_BYTES,
    ListDecoder,
    Loads,
    NotItemwise,
    loads_list,
)
from kinrun.kube.managed_fields import (
    event_object,
    list_items,
    loads_without_managed_fields,
    the_object,
)
from kinrun.kube.projection import Projection
from kinrun.kube.resources import ResourceRef
from kinrun.kube.transport import (
    PARTIAL_OBJECT_METADATA,
    PARTIAL_OBJECT_METADATA_LIST,
    Transport,
    not_json,
)

log = logging.getLogger(__name__)

DEFAULT_WATCH_TIMEOUT = 300
"""Server-side ``timeoutSeconds`` when the caller gives none (client-go's reflector picks 5-10
minutes): every watch ends cleanly at some point, so its read timeout is finite too."""

WATCH_READ_GRACE = 30.0
"""Seconds the socket read timeout exceeds ``timeoutSeconds``: the server ends the stream
itself first; only a dead connection runs into the read timeout."""

PARTIAL_KIND = "PartialObjectMetadata"
PARTIAL_LIST_KIND = "PartialObjectMetadataList"


def item_kind(list_kind: str, fallback: str) -> str:
    """``Pod`` from ``PodList``; ``fallback`` when the list kind does not end in ``List``."""
    return list_kind[:-4] if list_kind.endswith("List") and len(list_kind) > 4 else fallback


class KubeListerWatcher:
    """LIST and WATCH one collection: a resource in one namespace (or all), fixed selectors.

    ``page_size``: objects per LIST page (0 = unpaged). ``watch_read_timeout``: socket read
    timeout of watches in seconds; None = the watch's ``timeoutSeconds`` + 30 s.
    ``drop_managed_fields``: objects come without ``metadata.managedFields`` where it can be cut
    from the raw JSON before decoding (``kinrun.kube.managed_fields``; where it cannot, they
    keep it, so an informer still strips it with its transform). ``metadata_only``: objects
    are listed and watched as PartialObjectMetadata (see the module docstring).
    ``projection``: objects are decoded with only its paths (``kinrun.kube.projection``;
    ignored with ``metadata_only``, which asks the server for less still).

    Thread-safety: as the ListerWatcher protocol says, ``list``/``watch`` run on the
    reflector's thread; the returned Watch's ``close`` may be called from any thread. Holds no
    mutable state itself.
    """

    def __init__(self, transport: Transport, ref: ResourceRef, *, namespace: str | None = None,
                 label_selector: str | None = None, field_selector: str | None = None,
                 page_size: int = 500, watch_read_timeout: float | None = None,
                 drop_managed_fields: bool = False, metadata_only: bool = False,
                 projection: Projection | None = None) -> None:
        self.transport = transport
        self.drop_managed_fields = drop_managed_fields
        self.metadata_only = metadata_only
        self.projection = None if metadata_only else projection
        # only a metadata-only watcher passes ``accept`` (test transports need not know it)
        self._list_accept = {"accept": PARTIAL_OBJECT_METADATA_LIST} if metadata_only else {}
        self._watch_accept = {"accept": PARTIAL_OBJECT_METADATA} if metadata_only else {}
        self.ref = ref
        self.namespace = namespace if ref.namespaced else None
        self.label_selector = label_selector or None
        self.field_selector = field_selector or None
        self.page_size = page_size
        self.watch_read_timeout = watch_read_timeout
        self.path = ref.path(self.namespace)

    def __repr__(self) -> str:
        return (f"KubeListerWatcher({self.ref.id}, namespace={self.namespace!r}, "
                f"labels={self.label_selector!r}, fields={self.field_selector!r}"
                + (", metadataOnly" if self.metadata_only else "")
                + (f", {self.projection!r}" if self.projection is not None else "") + ")")

    def _selectors(self) -> dict[str, Any]:
        return {"labelSelector": self.label_selector, "fieldSelector": self.field_selector}

    def list(self, *, resource_version: str = "") -> ObjectList:
        """Every object of the collection (all pages); see the module docstring for paging.

        Raises ExpiredError when ``resource_version`` itself is too old (410 on the first
        page), other ApiErrors as the transport maps them.

        A LIST at a specific resourceVersion (not "" or "0") is not paged, as client-go's
        reflector does: with a limit the server reads etcd at exactly that revision (possibly
        older than its watch cache, so the following watch answers 410 again and again); without
        one it serves "not older than" from the watch cache.
        """
        with gc_paused(freeze=True):  # pages decoded so far are not traversed between pages
            return self._list_pages(resource_version)

    def _list_pages(self, resource_version: str) -> ObjectList:
        paged = self.page_size and resource_version in ("", "0")
        query = {**self._selectors(), "resourceVersion": resource_version or None,
                 "limit": self.page_size if paged else None}
        items: list[dict[str, Any]] = []
        pages = 0
        while True:
            try:
                page = self._page(query)
            except ExpiredError:
                if not query.get("continue"):
                    raise
                return self._list_unpaged(resource_version, pages)
            pages += 1
            items.extend(page.get("items") or ())
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return self._object_list(page, items, {"pages": pages})
            query = {**self._selectors(), "limit": self.page_size, "continue": token}

    def _list_unpaged(self, resource_version: str, pages_dropped: int) -> ObjectList:
        """client-go pager's fallback: a continue token expired, so LIST everything at once."""
        query = {**self._selectors(), "resourceVersion": resource_version or None}
        page = self._page(query)
        extra = {"pages": 1, "pages_dropped": pages_dropped, "unpaged_after_expired": True}
        return self._object_list(page, list(page.get("items") or ()), extra)

    def _page(self, query: dict[str, Any]) -> Any:
        """One LIST page (inside ``list``'s GC pause), decoded item by item as its body is read
        (``_read_page``); managedFields cut first when asked to. Raises ApiError for a body
        that is not JSON, and as the transport does.

        A body that turns out not to be in the item-wise layout after decoded items were
        dropped (``NotItemwise``: a pathological item) is requested again and decoded whole,
        not item by item again, once the first answer is closed and its items are freed.
        Nothing was returned from the first read, so that is the same LIST: a continue token
        names the same snapshot (or expires, handled as any expired token), and a first page
        is any consistent snapshot, as it would have been."""
        loads_item, loads_whole = list_page_loaders(self.drop_managed_fields, self.projection)
        try:
            return self._read_page(query, ListDecoder(loads_item, loads_whole))
        except NotItemwise:
            log.info("LIST %s: the body is not in the layout read item by item; reading it "
                     "again whole", self.path)
        return self.transport.request("GET", self.path, query=query, decode=loads_whole,
                                      **self._list_accept)

    def _read_page(self, query: dict[str, Any], decoder: ListDecoder) -> Any:
        """The page's body fed to ``decoder`` as it is read (``Transport.request_pieces``), and
        the document it gives. The answer is closed or released before this returns or raises
        (ApiError for non-JSON, NotItemwise, the transport's errors)."""
        pieces = self.transport.request_pieces(self.path, query=query, piece_bytes=PIECE_BYTES,
                                               **self._list_accept)
        try:
            for piece in pieces:
                decoder.feed(piece)
            return decoder.close()
        except orjson.JSONDecodeError:
            raise not_json("GET", self.path, decoder.buffered) from None
        finally:
            pieces.close()

    def _object_list(self, page: dict[str, Any], items: list[dict[str, Any]],
                     extra: dict[str, Any]) -> ObjectList:
        if self.metadata_only:
            api_version, kind = self.ref.api_version, self.ref.kind
            if page.get("kind") != PARTIAL_LIST_KIND:  # the server sent whole objects
                items = [partial_object_metadata(item) for item in items]
        else:
            api_version = page.get("apiVersion") or self.ref.api_version
            kind = item_kind(str(page.get("kind") or ""), self.ref.kind)
        for item in items:
            item["apiVersion"] = api_version
            item["kind"] = kind
        rv = str((page.get("metadata") or {}).get("resourceVersion") or "")
        return ObjectList(items=items, resource_version=rv, kind=kind, extra=extra)

    def watch(self, *, resource_version: str, timeout_seconds: int | None = None,
              allow_bookmarks: bool = True) -> StreamWatch:
        """Open a WATCH from ``resource_version`` (after it; "" = from now).

        ``timeout_seconds``: the server ends the stream cleanly after that long (default
        300). Raises ExpiredError (HTTP 410) or another ApiError when the server refuses it;
        an ERROR event later raises from the iteration.
        """
        timeout = DEFAULT_WATCH_TIMEOUT if timeout_seconds is None else int(timeout_seconds)
        query = {**self._selectors(), "watch": "true", "resourceVersion": resource_version or None,
                 "allowWatchBookmarks": True if allow_bookmarks else None,
                 "timeoutSeconds": timeout}
        read_timeout = self.watch_read_timeout
        if read_timeout is None:
            read_timeout = timeout + WATCH_READ_GRACE
        resp = self.transport.open_stream(self.path, query=query, read_timeout=read_timeout,
                                          **self._watch_accept)
        return StreamWatch(resp, api_version=self.ref.api_version, kind=self.ref.kind,
                           description=f"WATCH {self.path}", read_timeout=read_timeout,
                           drop_managed_fields=self.drop_managed_fields,
                           metadata_only=self.metadata_only, projection=self.projection)


def loads_list_page(data: bytes, *, drop_managed_fields: bool, min_bytes: int = MIN_BYTES) -> Any:
    """What a LIST page's body decodes to in ``KubeListerWatcher.list``: the page document
    (``{"kind", "apiVersion", "metadata", "items": [object dicts]}``), decoded item by item
    (``kinrun.kube.list_body.loads_list``; bodies under ``min_bytes`` bytes whole), without each
    item's ``metadata.managedFields`` when ``drop_managed_fields`` (``kinrun.kube.managed_fields``).
    Raises orjson.JSONDecodeError when ``data`` is not JSON."""
    return loads_list(data, *list_page_loaders(drop_managed_fields), min_bytes=min_bytes)


def list_page_loaders(drop_managed_fields: bool,
                      projection: Projection | None = None) -> tuple[Loads, Loads]:
    """(item loader, whole-page loader) for ``kinrun.kube.list_body``: ``orjson.loads`` twice,
    the loaders that cut ``metadata.managedFields`` from the bytes first, or a projection's
    (which never build ``managedFields``)."""
    if projection is not None:
        return projection.loads_object, projection.loads_page
    if not drop_managed_fields:
        return orjson.loads, orjson.loads
    return _item_without_managed_fields, _page_without_managed_fields


def _item_without_managed_fields(data: bytes) -> Any:
    return loads_without_managed_fields(data, the_object, 1)


def _page_without_managed_fields(data: bytes) -> Any:
    return loads_without_managed_fields(data, list_items)


def partial_object_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` cut to ``apiVersion``, ``kind`` and ``metadata`` (what a PartialObjectMetadata
    holds; the values are shared, not copied)."""
    out = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind")}
    if "metadata" in obj:
        out["metadata"] = obj["metadata"]
    return out


class StreamWatch:
    """An open watch stream over a urllib3 response (implements ``kinrun.cache.listwatch.Watch``).

    Iterate once, on one thread: yields WatchEvent(type, object) per line; ends when the server
    ends the stream or after ``close()``; raises ExpiredError/ApiError for ERROR events, and
    ApiConnectionError when the connection breaks or a read times out. ``drop_managed_fields``,
    ``metadata_only``, ``projection``: as for ``KubeListerWatcher`` (a metadata-only watch gives
    every object but a BOOKMARK's ``api_version``/``kind``, and cuts whole objects down to
    metadata).

    Each read takes every byte that has arrived (``ChunkedBody``); each event is decoded just
    before it is yielded, so the consumer works on an object still in the CPU cache (decoding
    a whole read first and then handing the events out measured ~12 us per event slower).

    Thread-safety: ``close()`` may be called from any thread, any number of times: it shuts the
    socket down for reading, which makes a read blocked in the iterating thread return, and the
    iteration then ends quietly. ``_lock`` guards ``_closed``/``_released`` so the socket is
    never shut down after the connection went back to the pool.
    """

    def __init__(self, response: urllib3.BaseHTTPResponse, *, api_version: str, kind: str,
                 description: str = "WATCH", read_timeout: float | None = None,
                 drop_managed_fields: bool = False, metadata_only: bool = False,
                 projection: Projection | None = None) -> None:
        self._resp = response
        self._drop_managed_fields = drop_managed_fields
        self._projection = projection
        self._metadata_only = metadata_only
        self._api_version = api_version
        self._kind = kind
        self._description = description
        self._read_timeout = read_timeout
        self._lock = threading.Lock()
        self._closed = False      # close() was called; iteration must end quietly
        self._released = False    # the response was closed/released; never touch it again
        self._iterating = False   # __iter__ was called once (a stream is consumed once)
        self._gen: Any = None     # the event generator, once iteration started
        self._raw = False         # the body is read past http.client: never reuse the connection
        self._decoded = gc_observer.NO_GC_OBSERVER.decoded  # _events: the installed one's

    def __iter__(self) -> Iterator[WatchEvent]:
        """The events, decoded as the bytes arrive. Raises RuntimeError on a second call."""
        if self._iterating:
            raise RuntimeError("a watch stream can be iterated only once")
        self._iterating = True
        self._gen = self._events()
        return self._gen

    def close(self) -> None:
        """End the stream: interrupt a blocked read and release the connection. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._released:
                return
            self._shutdown_locked()
            if not self._iterating:
                self._release_locked(clean=False)
                return
        # Iteration started: if its generator is suspended (the consumer stopped pulling),
        # finish it here so the connection is released now, not at garbage collection.
        gen = self._gen
        if gen is None or gen.gi_running:
            return  # the iterating thread is inside a read: it sees _closed and releases
        try:
            gen.close()
        except ValueError:  # it resumed on another thread meanwhile: it will see _closed
            return
        with self._lock:  # a generator closed before its first step never ran its finally
            if not self._released:
                self._release_locked(clean=False)

    @property
    def closed(self) -> bool:
        """True once ``close()`` was called."""
        return self._closed

    def _shutdown_locked(self) -> None:
        try:
            self._resp.shutdown()
        except Exception:  # noqa: BLE001 - best effort: already closed or no socket left
            pass

    def _release_locked(self, *, clean: bool) -> None:
        """Give the connection back: reusable after a clean end, else closed first."""
        self._released = True
        try:
            if not clean:
                self._resp.close()
            self._resp.release_conn()
        except Exception:  # noqa: BLE001 - the connection is unusable either way
            pass

    def _events(self) -> Iterator[WatchEvent]:
        clean = False
        try:
            gc = gc_observer.installed()  # kinrun's GC policy, when the main job installed it
            decode, watch_read, self._decoded = self._decode, gc.watch_read, gc.decoded
            for lines in self._line_batches():
                since = watch_read()  # what this read decodes is frozen (kinrun's GC policy)
                for line in lines:
                    if self._closed:  # close() ends the iteration mid-read too
                        break
                    yield decode(line, since)
            clean = True
        finally:
            with self._lock:
                if not self._released:
                    self._release_locked(clean=clean and not self._closed and not self._raw)

    def _body_reader(self) -> Callable[[], list[bytes]]:
        """A function returning the next pieces of the decoded body ([] at the end).

        A chunked body (what every API server sends for a watch) is decoded by ``ChunkedBody``
        straight from the connection's buffered socket reader, so one call returns every event
        that has arrived, one piece per chunk. Other bodies (or a response without that reader)
        go through urllib3's ``read1``. After a raw read the connection is never reused
        (``_raw``): http.client did not see the body end."""
        fp = getattr(getattr(self._resp, "_fp", None), "fp", None)
        headers = self._resp.headers
        chunked = headers.get("transfer-encoding", "").lower() == "chunked"
        identity = headers.get("content-encoding", "identity").lower() == "identity"
        if chunked and identity and hasattr(fp, "read1"):
            self._raw = True
            return ChunkedBody(fp.read1).read_pieces
        read1 = self._resp.read1

        def read() -> list[bytes]:
            data = read1(READ_SIZE)
            return [data] if data else []
        return read

    def _line_batches(self) -> Iterator[list[bytes]]:
        """The complete non-empty lines of each read, as raw bytes arrive; a quiet end after
        close(). Raises ApiConnectionError when the connection breaks or a read times out.

        A piece that is exactly one line (a chunk per event, as API servers send) is taken as
        it is, newline included (JSON allows trailing whitespace): no split, no copy."""
        read = self._body_reader()
        rest = b""
        while not self._closed:
            try:
                pieces = read()
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                if self._closed:
                    return
                raise error_from_exception(exc, method="GET", url=self._description,
                                           read_timeout=self._read_timeout) from exc
            if not pieces:
                break
            lines: list[bytes] = []
            for piece in pieces:
                if rest:
                    piece, rest = rest + piece, b""
                if piece.find(b"\n") == len(piece) - 1:  # one whole line
                    if len(piece) > 1:
                        lines.append(piece)
                    continue
                split = piece.split(b"\n")
                rest = split.pop()
                lines += [line for line in split if line]
            if lines and not self._closed:
                yield lines
        if rest.strip() and not self._closed:
            yield [rest]

    def _decode(self, line: bytes, since: int | None = None) -> WatchEvent:
        try:
            if self._projection is not None:
                event = self._projection.loads_event(line)
            elif self._drop_managed_fields:
                event = loads_without_managed_fields(line, event_object, 1)
            else:
                event = orjson.loads(line)
            etype = event["type"]
            obj = event["object"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            text = line[:200].decode("utf-8", errors="replace")
            raise ApiError(f"{self._description}: undecodable watch event: {text}") from None
        if etype == "ERROR":
            raise error_from_status(obj)
        self._decoded(len(line), since)  # frozen, or counted by volume (kinrun's GC policy)
        if self._metadata_only and etype != "BOOKMARK":
            if obj.get("kind") != PARTIAL_KIND or len(obj) > 3:  # a whole object was sent
                obj = partial_object_metadata(obj)
            obj["apiVersion"] = self._api_version
            obj["kind"] = self._kind
        elif etype != "BOOKMARK" and "kind" not in obj:
            obj["apiVersion"] = self._api_version
            obj["kind"] = self._kind
        return WatchEvent(etype, obj)
