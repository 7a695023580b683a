"""One HTTP request to the API server: rate limit, send, retry, decode.

Requests go through the ``kubernetes`` client's own urllib3 pool (``ApiClient.rest_client
.pool_manager``), so TLS, client certificates, proxies and pool size come from its
Configuration, and bearer tokens from its auth settings (refreshed by the config loaders' hooks).
The generated API classes and their models are bypassed: bodies are encoded and decoded with
orjson as plain dicts and lists.

Every request takes a token from the shared ``TokenBucket`` (as client-go's ``rest.Request``
throttles every verb, watches included), then ``RetryPolicy`` decides about 429/5xx answers.
A write (any verb but GET) from a thread whose Lease fence is closed is not sent
(``kinrun.fencing.check_write``: FencedError): a reconcile resumed after a pause writes nothing.
Connection failures become ``ApiConnectionError``; urllib3 itself retries only failed connects
(and, for GET, one broken read of a reused keep-alive connection).

Each try's outcome can be counted (client-go's ``metrics.RequestResult``, exported by
controller-runtime as ``rest_client_requests_total{code, method, host}``): a ``RequestObserver``
set as ``Transport.request_observer`` is called once per try with the HTTP status code as a
string (``"<error>"`` when no answer came, as client-go's ``request.go``), the method and the
server's ``host[:port]``. None (the default) costs one ``is None`` test per request.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

import orjson
import urllib3

from kinrun.clock import REAL_CLOCK, Clock
from kinrun.errors import ApiError
from kinrun.fencing import check_write
from kinrun.kube.http_errors import error_from_exception, error_from_response
from kinrun.kube.jsondecode import loads
from kinrun.kube.ratelimit import TokenBucket
from kinrun.kube.retry import RetryPolicy

log = logging.getLogger("kinrun.kube")

Query = Mapping[str, Any]

JSON = "application/json"

PARTIAL_OBJECT_METADATA = ("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,"
                           "application/json")
"""Accept header of a GET or WATCH asking for metadata only (client-go ``metadata`` client's
watch; the API server answers ``meta.k8s.io/v1`` PartialObjectMetadata objects)."""

PARTIAL_OBJECT_METADATA_LIST = ("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
                                "application/json")
"""Accept header of a LIST asking for metadata only (client-go ``metadata`` client's list)."""

RequestObserver = Callable[[str, str, str], None]
"""(code, method, host) of one try: ``"200"``, ``"GET"``, ``"10.0.0.1:6443"``; ``"<error>"``
for the code when the server gave no answer. Called on the requesting thread; must be quick
and never raise."""

NO_ANSWER = "<error>"


def encode_query(query: Query | None) -> str:
    """``?a=1&b=x`` from a mapping (None values dropped, bools as ``true``/``false``), or ""."""
    if not query:
        return ""
    pairs = []
    for key, value in query.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        pairs.append((key, value))
    return "?" + urlencode(pairs) if pairs else ""


def encode_body(body: Any) -> bytes | None:
    """Request body bytes: dicts and lists as JSON (orjson), str as UTF-8, bytes as they are."""
    if body is None:
        return None
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    return orjson.dumps(body)


def not_json(method: str, path: str, data: bytes | bytearray) -> ApiError:
    """The ApiError for an answer ``data`` that is not JSON: ``"<method> <path>: the answer is
    not JSON: <its first 200 bytes as text>"``."""
    text = bytes(data[:200]).decode("utf-8", errors="replace")
    return ApiError(f"{method} {path}: the answer is not JSON: {text}")


class Transport:
    """Sends requests to one API server through an ``ApiClient``'s urllib3 pool.

    ``rate_limiter``: shared TokenBucket (None = unlimited). ``retry``: the 429/5xx policy.
    ``connect_timeout``/``read_timeout``: seconds for ordinary requests (``read_timeout`` is per
    socket read, not the whole body). ``clock``: its ``sleep`` waits between retries, and its
    ``wall()`` is what a Retry-After date counts from.

    ``request_observer``: counts each try (see the module docstring); set it before requests
    are sent.

    Thread-safe: any number of threads may call ``request`` and ``open_stream`` at once (the
    urllib3 pool and the bucket have their own locks; nothing else here is mutated).
    """

    def __init__(self, api_client: Any, *, rate_limiter: TokenBucket | None = None,
                 retry: RetryPolicy | None = None, connect_timeout: float = 10.0,
                 read_timeout: float = 60.0, clock: Clock = REAL_CLOCK,
                 pool: Any = None) -> None:
        self.api_client = api_client
        self.host = str(api_client.configuration.host).rstrip("/")
        self.rate_limiter = rate_limiter
        self.retry = retry or RetryPolicy()
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self._clock = clock
        # ``pool``: what requests go through; anything with urllib3.PoolManager.request's
        # signature (tests inject fakes). Default: the ApiClient's own pool manager.
        self.pool = pool if pool is not None else api_client.rest_client.pool_manager
        self.request_observer: RequestObserver | None = None
        self.host_label = urlsplit(self.host).netloc or self.host  # client-go: URL().Host

    def request(self, method: str, path: str, *, query: Query | None = None, body: Any = None,
                content_type: str = JSON, decode: Callable[[bytes], Any] = loads,
                accept: str = JSON) -> Any:
        """Send one request and return its decoded JSON body (None when empty).

        ``path`` starts with ``/``; ``query`` values are strings, ints or bools. ``accept``: the
        Accept header (``PARTIAL_OBJECT_METADATA_LIST`` for a metadata-only LIST). ``decode``:
        bytes -> document, raising ``orjson.JSONDecodeError`` for non-JSON (default: orjson
        with the GC paused). Raises the ApiError subclass for a failure after retries,
        ApiConnectionError with no answer.
        """
        resp = self._send_with_retries(method, path, query, encode_body(body), content_type,
                                       stream=False, read_timeout=self.read_timeout,
                                       accept=accept)
        data = resp.data
        if not data:
            return None
        try:
            return decode(data)
        except orjson.JSONDecodeError:
            raise not_json(method, path, data) from None

    def request_pieces(self, path: str, *, query: Query | None = None, accept: str = JSON,
                       piece_bytes: int) -> Iterator[bytes]:
        """GET ``path`` and yield its body in pieces (bytes, at most ``piece_bytes`` each, after
        de-chunking) as they are read: a LIST decoded without the whole body in memory.

        Sent, throttled and retried as ``request`` (429/5xx before the body); its errors are
        raised at the first ``next()``. A read that breaks or times out (``read_timeout``
        seconds per socket read) raises ApiConnectionError. The connection goes back to the
        pool after the last piece; it is closed when the caller stops early.
        """
        resp = self._send_with_retries("GET", path, query, None, JSON, stream=True,
                                       read_timeout=self.read_timeout, accept=accept)
        read, done = resp.read, False
        try:
            while True:
                try:
                    piece = read(piece_bytes)
                except (urllib3.exceptions.HTTPError, OSError) as exc:
                    raise error_from_exception(exc, method="GET", url=self.url(path, query),
                                               read_timeout=self.read_timeout) from exc
                if not piece:
                    done = True
                    return
                yield piece
        finally:
            if not done:
                resp.close()  # the rest of the body is unread: the connection is not reusable
            resp.release_conn()

    def open_stream(self, path: str, *, query: Query | None = None,
                    read_timeout: float | None = None,
                    accept: str = JSON) -> urllib3.BaseHTTPResponse:
        """Open a streamed GET (a WATCH) and return the urllib3 response once it answered 2xx.

        The body is not read: the caller iterates it and must ``close()``/``release_conn()``.
        ``read_timeout``: seconds a socket read may block, for the whole stream (None = none).
        ``accept``: the Accept header (``PARTIAL_OBJECT_METADATA`` for metadata-only events).
        Non-2xx answers raise as ``request`` does (429/5xx before the stream are retried).
        """
        return self._send_with_retries("GET", path, query, None, JSON, stream=True,
                                       read_timeout=read_timeout, accept=accept)

    def url(self, path: str, query: Query | None = None) -> str:
        """The absolute URL for ``path`` and ``query`` on this server."""
        return self.host + path + encode_query(query)

    def headers(self, method: str, path: str, content_type: str | None,
                accept: str = JSON) -> dict[str, str]:
        """Default headers (User-Agent), auth from the Configuration, Accept and Content-Type."""
        headers = dict(self.api_client.default_headers)
        self.api_client.update_params_for_auth(headers, [], ["BearerToken"], path, method, None)
        headers["Accept"] = accept
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    def _send_with_retries(self, method: str, path: str, query: Query | None,
                           body: bytes | None, content_type: str, *, stream: bool,
                           read_timeout: float | None,
                           accept: str = JSON) -> urllib3.BaseHTTPResponse:
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._send_once(method, path, query, body, content_type, stream=stream,
                                       read_timeout=read_timeout, accept=accept)
            except ApiError as error:
                if not self.retry.should_retry(error, method=method, attempt=attempt):
                    raise
                delay = self.retry.delay(error, attempt=attempt)
                log.info("retrying %s %s in %.2fs after %s (try %d of %d)", method, path, delay,
                         error.status, attempt, self.retry.attempts)
                self._clock.sleep(delay)

    def _send_once(self, method: str, path: str, query: Query | None, body: bytes | None,
                   content_type: str, *, stream: bool, read_timeout: float | None,
                   accept: str = JSON) -> urllib3.BaseHTTPResponse:
        """One throttled try; returns a 2xx response, raises the mapped ApiError otherwise."""
        if self.rate_limiter is not None:
            self.rate_limiter.accept()
        if method != "GET":  # after the throttle's wait: a write under a closed fence stays
            check_write(method, path)
        url = self.url(path, query)
        headers = self.headers(method, path, content_type if body is not None else None, accept)
        timeout = urllib3.Timeout(connect=self.connect_timeout, read=read_timeout)
        retries = urllib3.Retry(total=None, connect=3, read=1 if method == "GET" else 0,
                                redirect=False, status=0, other=0, raise_on_status=False)
        try:
            resp = self.pool.request(method, url, body=body, headers=headers, timeout=timeout,
                                      retries=retries, preload_content=not stream)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            if self.request_observer is not None:
                self.request_observer(NO_ANSWER, method, self.host_label)
            raise error_from_exception(exc, method=method, url=url, read_timeout=read_timeout,
                                       connect_timeout=self.connect_timeout) from exc
        if self.request_observer is not None:
            self.request_observer(str(resp.status), method, self.host_label)
        if 200 <= resp.status < 300:
            return resp
        raise self._error_of(resp, method, path, read_timeout, body)

    def _error_of(self, resp: urllib3.BaseHTTPResponse, method: str, path: str,
                  read_timeout: float | None, sent: bytes | None = None) -> ApiError:
        """Read a failed answer's body (releasing the connection) and map it to an ApiError,
        the values of the request body ``sent`` redacted from it (``kinrun.kube.http_errors``)."""
        try:
            data = resp.data
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            resp.release_conn()
            return error_from_exception(exc, method=method, url=path, read_timeout=read_timeout)
        resp.release_conn()
        return error_from_response(resp.status, data or b"", resp.headers, method=method,
                                   path=path, sent=sent, clock=self._clock)
