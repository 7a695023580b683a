"""RawKube: raw HTTP to one API server, for comparing what a client sees byte-for-byte-ish.

Requests go through the ``kubernetes`` client's own urllib3 pool and auth settings (built from
a kubeconfig), but bodies are decoded as plain JSON, never into the client's models, so tests
compare what the server actually sent. Watches are read line by line with a bounded read
timeout; nothing here sleeps.
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import urllib3
from kubernetes import config as kube_config


@dataclass
class Response:
    """One HTTP answer: ``status`` (HTTP code), ``body`` (decoded JSON, or text, or None) and
    ``headers`` (case-insensitive, as urllib3 gives them)."""

    status: int
    body: Any
    headers: Any = None


@dataclass
class WatchResult:
    """A watch request's outcome: HTTP ``status``, the ``events`` read (dicts), the error
    ``body`` when status is not 200, and ``ended`` (True if the server closed the stream)."""

    status: int
    events: list[dict[str, Any]] = field(default_factory=list)
    body: Any = None
    ended: bool = False


class RawKube:
    """Raw JSON HTTP to the server a kubeconfig names. Thread-safe as urllib3's pool is."""

    def __init__(self, kubeconfig_path: str, label: str) -> None:
        self.label = label
        api = kube_config.new_client_from_config(config_file=kubeconfig_path)
        self.host = api.configuration.host.rstrip("/")
        self.pool = api.rest_client.pool_manager
        self.headers: dict[str, str] = {}
        for auth in api.configuration.auth_settings().values():
            if auth.get("in") == "header" and auth.get("value"):
                self.headers[auth["key"]] = auth["value"]
        self._api = api

    def url(self, path: str, query: dict[str, Any] | None = None) -> str:
        """Absolute URL of ``path`` with ``query`` encoded (booleans as true/false)."""
        if not query:
            return self.host + path
        pairs = {k: (str(v).lower() if isinstance(v, bool) else v) for k, v in query.items()}
        return f"{self.host}{path}?{urllib.parse.urlencode(pairs)}"

    def request(self, method: str, path: str, body: Any = None, *,
                query: dict[str, Any] | None = None, content_type: str = "application/json",
                timeout: float = 30.0, user_agent: str | None = None,
                accept: str = "application/json") -> Response:
        """Send one request; return its status and decoded body (errors are answers, not raised).
        ``user_agent`` replaces urllib3's default User-Agent (``python-urllib3/<version>``)."""
        headers = dict(self.headers, Accept=accept)
        if user_agent is not None:
            headers["User-Agent"] = user_agent
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
            headers["Content-Type"] = content_type
        resp = self.pool.request(method, self.url(path, query), body=data, headers=headers,
                                 timeout=urllib3.Timeout(connect=5, read=timeout), retries=False)
        return Response(resp.status, _decode(resp.data), resp.headers)

    def get(self, path: str, **query: Any) -> Response:
        """GET ``path`` with ``query``."""
        return self.request("GET", path, query=query)

    def open_watch(self, path: str, query: dict[str, Any] | None = None, *,
                   read_timeout: float = 10.0, accept: str | None = None) -> OpenWatch:
        """Open a watch on ``path`` (``watch=true`` is added); returns once headers arrived,
        so a test can write after the watch is registered and before reading."""
        query = dict(query or {}, watch="true")
        headers = dict(self.headers, **({"Accept": accept} if accept else {}))
        resp = self.pool.request("GET", self.url(path, query), headers=headers,
                                 preload_content=False, retries=False,
                                 timeout=urllib3.Timeout(connect=5, read=read_timeout))
        return OpenWatch(resp)

    def watch(self, path: str, query: dict[str, Any] | None = None, *,
              max_events: int | None = None, read_timeout: float = 10.0) -> WatchResult:
        """Open a watch and read it: see ``OpenWatch.read``."""
        return self.open_watch(path, query, read_timeout=read_timeout).read(max_events)


class OpenWatch:
    """A watch response whose headers have arrived. Read once, from one thread."""

    def __init__(self, resp: Any) -> None:
        self.resp = resp

    def read(self, max_events: int | None = None) -> WatchResult:
        """Read events until ``max_events`` were read, the server ended the stream (use
        ``timeoutSeconds``), or the read timeout passed without a byte; then close."""
        try:
            if self.resp.status != 200:
                return WatchResult(self.resp.status, body=_decode(self.resp.read()))
            return self._read_events(max_events)
        finally:
            self.close()

    def close(self) -> None:
        """Release (clean end) or close (mid-stream) the connection."""
        self.resp.release_conn() if self.resp.isclosed() else self.resp.close()

    def _read_events(self, max_events: int | None) -> WatchResult:
        result = WatchResult(200)
        buf = b""
        try:
            for chunk in self.resp.stream(amt=None, decode_content=False):
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        result.events.append(json.loads(line))
                    if max_events is not None and len(result.events) >= max_events:
                        return result
            result.ended = True
        except (urllib3.exceptions.ReadTimeoutError, urllib3.exceptions.ProtocolError):
            pass
        return result


def _decode(data: bytes) -> Any:
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return data.decode(errors="replace")
