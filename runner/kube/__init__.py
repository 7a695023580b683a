"""kinrun.kube: access to a Kubernetes API server over the official ``kubernetes`` client.

What belongs here: cluster config loading, the client-side rate limit, discovery (GVK -> GVR
and scope), paged LIST and streamed WATCH decoded to plain dicts, single-object writes,
Events, Leases, and the mapping of HTTP failures to ``kinrun.errors``. What must not: informer
or queue logic (``kinrun.cache``, ``kinrun.workqueue``) and anything about config files.

Modules: ``client`` (the facade), ``kubeconfig``, ``transport`` (one request: throttle, send,
retry), ``ratelimit``, ``retry``, ``http_errors``, ``resources`` (ResourceRef, paths),
``discovery``, ``listwatch``, ``writes``, ``events``, ``request`` (ApiRequest).
"""

from kinrun.kube.client import Client
from kinrun.kube.discovery import Discovery, UnknownKindError
from kinrun.kube.listwatch import KubeListerWatcher, StreamWatch
from kinrun.kube.ratelimit import TokenBucket
from kinrun.kube.request import ApiRequest
from kinrun.kube.resources import ResourceRef
from kinrun.kube.retry import RetryPolicy

__all__ = [
    "ApiRequest",
    "Client",
    "Discovery",
    "KubeListerWatcher",
    "ResourceRef",
    "RetryPolicy",
    "StreamWatch",
    "TokenBucket",
    "UnknownKindError",
]
