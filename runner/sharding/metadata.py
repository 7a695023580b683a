"""A metadata-only LIST and WATCH for the sharder: objects as PartialObjectMetadata.

The sharder needs names, labels, owner references and resourceVersions only, never specs
(timebertt/kubernetes-controller-sharding docs/design.md: "it only lists the metadata of the
sharded objects"). The API server answers a LIST with ``Accept:
application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`` and a WATCH with
``...;as=PartialObjectMetadata;...`` with metadata only (as client-go's ``metadata`` client
asks; Kubernetes >= 1.15), so the sharder's caches hold a few hundred bytes per object.

Uses the client's metadata-only ListerWatcher (``Client.lister_watcher(metadata_only=True)``)
where the client has it; otherwise this module changes only the Accept header of a
``KubeListerWatcher``'s requests (a shallow copy of the client's Transport: same connection
pool, rate limiter and retries).
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

from kinrun.kube import KubeListerWatcher, ResourceRef

LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
WATCH_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"


class _Accepting:
    """The client's Transport with ``Accept`` set for LISTs (``request``) and WATCHes
    (``open_stream``)."""

    def __init__(self, transport: Any) -> None:
        self._list = self._with_accept(transport, LIST_ACCEPT)
        self._watch = self._with_accept(transport, WATCH_ACCEPT)

    @staticmethod
    def _with_accept(transport: Any, accept: str) -> Any:
        clone = copy.copy(transport)
        base = transport.headers

        def headers(*args: Any, **kwargs: Any) -> dict[str, str]:
            out = base(*args, **kwargs)
            out["Accept"] = accept
            return out
        clone.headers = headers
        return clone

    def request(self, *args: Any, **kwargs: Any) -> Any:
        return self._list.request(*args, **kwargs)

    def open_stream(self, *args: Any, **kwargs: Any) -> Any:
        return self._watch.open_stream(*args, **kwargs)


def metadata_lister_watcher(client: Any, ref: ResourceRef, *, namespace: str | None = None,
                            label_selector: str | None = None,
                            field_selector: str | None = None) -> KubeListerWatcher:
    """A ListerWatcher of ``ref``'s objects as PartialObjectMetadata (``metadata`` only):
    the client's own metadata-only ListerWatcher when it has one (``metadata_only``), else
    this module's Accept header over the client's Transport."""
    if "metadata_only" in inspect.signature(client.lister_watcher).parameters:
        return client.lister_watcher(ref, namespace=namespace, label_selector=label_selector,
                                     field_selector=field_selector, drop_managed_fields=True,
                                     metadata_only=True)
    return KubeListerWatcher(_Accepting(client.transport), ref, namespace=namespace,
                             label_selector=label_selector, field_selector=field_selector,
                             drop_managed_fields=True)


__all__ = ["LIST_ACCEPT", "WATCH_ACCEPT", "metadata_lister_watcher"]
