"""The sharder's metadata-only LIST and WATCH: objects as PartialObjectMetadata.

The sharder needs names, labels, owner references and resourceVersions only, never specs
(timebertt/kubernetes-controller-sharding docs/design.md: "it only lists the metadata of the
sharded objects"), so its caches hold a few hundred bytes per object. It uses kinrun's own
metadata-only ListerWatcher (``Client.lister_watcher(metadata_only=True)``: client-go's
``metadata`` client's Accept headers, kube-apiserver >= 1.15), as ``metadataOnly`` informers
do.
"""

from __future__ import annotations

from typing import Any

from kinrun.kube import KubeListerWatcher, ResourceRef


def metadata_lister_watcher(client: Any, ref: ResourceRef, *, namespace: str | None = None,
                            label_selector: str | None = None,
                            field_selector: str | None = None) -> KubeListerWatcher:
    """A ListerWatcher of ``ref``'s objects in ``namespace`` (None: all) with the given
    selectors, as PartialObjectMetadata (``metadata`` only)."""
    return client.lister_watcher(ref, namespace=namespace, label_selector=label_selector,
                                 field_selector=field_selector, drop_managed_fields=True,
                                 metadata_only=True)


__all__ = ["metadata_lister_watcher"]
