"""Fakes for kube-layer unit tests (imported as ``kube_fakes``: test dirs are not packages).

``FakePool(handler)``: ``handler(call)`` returns a urllib3.HTTPResponse (see ``response``) or
raises; every call is recorded as a ``Call`` (method, path, query dict, body decoded, headers).
``make_client(pool)`` builds a real ``kinrun.kube.Client`` whose transport sends through it,
with a recording ``sleep`` so retries never wait.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import orjson
import urllib3
from kubernetes import client as k8s_client

from kinrun.clock import RecordingClock
from kinrun.kube import Client, RetryPolicy

HOST = "http://fake-apiserver:6443"


@dataclass
class Call:
    """One request the code under test sent."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    headers: dict[str, str]
    timeout: Any = None
    preload_content: bool = True


def response(status: int = 200, body: Any = None, headers: dict[str, str] | None = None,
             *, raw: bytes | None = None, preload: bool = False) -> urllib3.HTTPResponse:
    """A urllib3 response with a JSON ``body`` (or ``raw`` bytes). Not preloaded by default:
    ``.data`` reads it whole, ``read(amt)`` in pieces, as a real response whichever way the
    code under test asked for it (``preload_content``)."""
    data = raw if raw is not None else (b"" if body is None else orjson.dumps(body))
    return urllib3.HTTPResponse(body=io.BytesIO(data), status=status, headers=headers or {},
                                preload_content=preload)


def status_body(code: int, reason: str, message: str = "") -> dict[str, Any]:
    """A metav1.Status failure dict."""
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
            "reason": reason, "message": message or reason}


@dataclass
class FakePool:
    """Stands in for urllib3.PoolManager: records calls, answers through ``handler``."""

    handler: Callable[[Call], urllib3.HTTPResponse]
    calls: list[Call] = field(default_factory=list)

    def request(self, method: str, url: str, *, body: bytes | None = None,
                headers: dict[str, str] | None = None, timeout: Any = None, retries: Any = None,
                preload_content: bool = True) -> urllib3.HTTPResponse:
        parts = urlsplit(url)
        call = Call(method, parts.path, dict(parse_qsl(parts.query)),
                    orjson.loads(body) if body else None, dict(headers or {}), timeout,
                    preload_content)
        self.calls.append(call)
        return self.handler(call)


def queue_handler(*answers: Any) -> Callable[[Call], urllib3.HTTPResponse]:
    """A handler that gives ``answers`` in order (responses, or exceptions to raise)."""
    pending = list(answers)

    def handle(call: Call) -> urllib3.HTTPResponse:
        answer = pending.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    return handle


def make_client(pool: FakePool, *, sleeps: list[float] | None = None,
                retry: RetryPolicy | None = None, **kwargs: Any) -> Client:
    """A real Client over ``pool``; waits are recorded into ``sleeps`` instead of slept."""
    clock = RecordingClock()
    if sleeps is not None:
        clock.slept = sleeps
    api_client = k8s_client.ApiClient(k8s_client.Configuration(host=HOST))
    client = Client(api_client, qps=0, burst=0, retry=retry, clock=clock, **kwargs)
    client.transport.pool = pool
    return client


APPS_V1 = {
    "kind": "APIResourceList", "groupVersion": "apps/v1",
    "resources": [
        {"name": "deployments", "singularName": "deployment", "namespaced": True,
         "kind": "Deployment", "shortNames": ["deploy"], "verbs": ["get", "list", "watch"]},
        {"name": "deployments/status", "singularName": "", "namespaced": True,
         "kind": "Deployment", "verbs": ["get", "patch"]},
        {"name": "statefulsets", "singularName": "statefulset", "namespaced": True,
         "kind": "StatefulSet", "shortNames": ["sts"], "verbs": ["get", "list"]},
    ],
}

CORE_V1 = {
    "kind": "APIResourceList", "groupVersion": "v1",
    "resources": [
        {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
         "shortNames": ["po"]},
        {"name": "pods/status", "singularName": "", "namespaced": True, "kind": "Pod"},
        {"name": "configmaps", "singularName": "configmap", "namespaced": True,
         "kind": "ConfigMap", "shortNames": ["cm"]},
        {"name": "namespaces", "singularName": "namespace", "namespaced": False,
         "kind": "Namespace", "shortNames": ["ns"]},
        {"name": "events", "singularName": "event", "namespaced": True, "kind": "Event",
         "shortNames": ["ev"]},
    ],
}

COORDINATION_V1 = {
    "kind": "APIResourceList", "groupVersion": "coordination.k8s.io/v1",
    "resources": [{"name": "leases", "singularName": "lease", "namespaced": True,
                   "kind": "Lease"}],
}

API_VERSIONS = {"kind": "APIVersions", "versions": ["v1"]}
API_GROUPS = {"kind": "APIGroupList", "groups": [
    {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}]},
    {"name": "coordination.k8s.io",
     "versions": [{"groupVersion": "coordination.k8s.io/v1", "version": "v1"}]},
]}

DISCOVERY = {"/api/v1": CORE_V1, "/apis/apps/v1": APPS_V1,
             "/apis/coordination.k8s.io/v1": COORDINATION_V1, "/api": API_VERSIONS,
             "/apis": API_GROUPS}


def discovery_get(docs: dict[str, Any] | None = None) -> Callable[[str], Any]:
    """A Discovery ``get`` over ``docs`` (path -> dict); 404 as NotFoundError."""
    from kinrun.errors import NotFoundError

    docs = DISCOVERY if docs is None else docs

    def get(path: str) -> Any:
        if path not in docs:
            raise NotFoundError(f"{path} not found")
        return docs[path]

    return get
