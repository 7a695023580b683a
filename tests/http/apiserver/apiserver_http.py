"""Test helpers: raw requests and watch streams through the ``kubernetes`` client's own HTTP
stack (``ApiClient.param_serialize`` + ``call_api``), for checks the generated models hide
(status codes, Status bodies, headers, list metadata, watch lines)."""

from __future__ import annotations

import queue
import socket
import threading
from dataclasses import dataclass
from typing import Any

import kubernetes
import orjson


@dataclass
class Reply:
    """An HTTP answer: ``status``, ``headers`` (case-insensitive), ``body`` (decoded JSON, or
    the text when not JSON)."""

    status: int
    headers: Any
    body: Any


def call(client: kubernetes.client.ApiClient, method: str, path: str, *,
         query: dict[str, Any] | None = None, body: Any = None, content_type: str | None = None,
         timeout: float = 10.0) -> Reply:
    """One request to ``path`` with ``query`` parameters; never raises for HTTP errors."""
    headers = {"Accept": "application/json"}
    if content_type:
        headers["Content-Type"] = content_type
    elif body is not None:
        headers["Content-Type"] = "application/json"
    m, url, hdrs, ser_body, _ = client.param_serialize(
        method, path, query_params=list((query or {}).items()), header_params=headers,
        body=body, auth_settings=["BearerToken"])
    resp = client.call_api(m, url, hdrs, ser_body, _request_timeout=timeout)
    data = resp.read()
    try:
        decoded = orjson.loads(data) if data else None
    except orjson.JSONDecodeError:
        decoded = data.decode()
    return Reply(resp.status, resp.headers, decoded)


class WatchStream:
    """A watch request read by a background thread; events land in ``events`` (a queue of
    decoded dicts); ``ended`` is set when the server closes the stream."""

    def __init__(self, client: kubernetes.client.ApiClient, path: str,
                 query: dict[str, Any] | None = None, timeout: float = 30.0) -> None:
        query = {"watch": "true", **(query or {})}
        m, url, hdrs, _, _ = client.param_serialize(
            "GET", path, query_params=list(query.items()), header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"])
        self._resp = client.call_api(m, url, hdrs, None, _request_timeout=timeout)
        self.status = self._resp.status
        self.headers = self._resp.headers
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.ended = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        buf = b""
        try:
            for chunk in self._resp.response.stream(65536, decode_content=False):
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line.strip():
                        self.events.put(orjson.loads(line))
            if buf.strip():
                self.events.put(orjson.loads(buf))
        except Exception:  # noqa: BLE001 - a closed or reset stream just ends
            pass
        finally:
            self.ended.set()

    def next(self, timeout: float = 5.0) -> dict[str, Any]:
        """The next event; fails the test when none arrives within ``timeout`` seconds."""
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no watch event within {timeout}s") from None

    def take(self, n: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        """The next ``n`` events."""
        return [self.next(timeout) for _ in range(n)]

    def wait_end(self, timeout: float = 5.0) -> bool:
        """Whether the server ended the stream within ``timeout`` seconds."""
        return self.ended.wait(timeout)

    def close(self) -> None:
        """Drop the connection (shut the socket down; the reader thread then ends)."""
        conn = getattr(self._resp.response, "connection", None)
        sock = getattr(conn, "sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.ended.wait(5)


def pod(name: str, namespace: str = "default", labels: dict[str, str] | None = None,
        **spec: Any) -> dict[str, Any]:
    """A minimal Pod manifest."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


def configmap(name: str, namespace: str = "default", labels: dict[str, str] | None = None,
              data: dict[str, str] | None = None) -> dict[str, Any]:
    """A minimal ConfigMap manifest."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "data": data or {}}
