"""ResourceRef: one API resource (a GVR plus its kind and scope), and its REST paths.

Pure data, no I/O. The paths follow the API conventions: the core group lives under
``/api/v1``, every other group under ``/apis/GROUP/VERSION``; namespaced resources add
``/namespaces/NS``; a name and a subresource (``status``) follow the resource.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


def split_api_version(api_version: str) -> tuple[str, str]:
    """``("apps", "v1")`` from ``"apps/v1"``; ``("", "v1")`` from ``"v1"``.

    Raises ValueError for an empty or malformed value (more than one ``/``).
    """
    parts = api_version.strip().split("/")
    if len(parts) == 1 and parts[0]:
        return "", parts[0]
    if len(parts) == 2 and all(parts):
        return parts[0], parts[1]
    raise ValueError(f"malformed apiVersion {api_version!r}: expected VERSION or GROUP/VERSION")


def group_version_path(group: str, version: str) -> str:
    """``/api/v1`` for the core group, ``/apis/GROUP/VERSION`` otherwise."""
    return f"/api/{version}" if not group else f"/apis/{group}/{version}"


@dataclass(frozen=True, slots=True)
class ResourceRef:
    """One resource of a group version, as discovery describes it (client-go's GVR + GVK +
    scope, a RESTMapping).

    ``group`` ("" for core), ``version``, ``resource`` (lowercase plural, e.g. ``deployments``),
    ``kind`` (e.g. ``Deployment``), ``namespaced`` (scope). Hashable; compare by value.
    """

    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """``v1`` or ``GROUP/VERSION``, as objects spell their ``apiVersion``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def id(self) -> str:
        """``apiVersion/resource``: ``apps/v1/deployments``; the core group is ``v1/pods``."""
        return f"{self.api_version}/{self.resource}"

    def path(self, namespace: str | None = None, name: str | None = None,
             subresource: str | None = None) -> str:
        """The REST path of the collection, one object, or an object's subresource.

        ``namespace`` None on a namespaced resource means all namespaces (collections only);
        ``namespace`` is ignored for cluster-scoped resources. Raises ValueError for a namespaced
        object path without a namespace, or a subresource without a name.
        """
        parts = [group_version_path(self.group, self.version)]
        if self.namespaced and namespace:
            parts.append("namespaces/" + quote(namespace, safe=""))
        elif self.namespaced and name is not None:
            raise ValueError(f"{self.kind} {name!r} is namespaced: a namespace is required")
        parts.append(self.resource)
        if name is not None:
            if not name:
                raise ValueError(f"{self.kind}: empty name")
            parts.append(quote(name, safe=""))
        if subresource:
            if name is None:
                raise ValueError(f"{self.kind}: subresource {subresource!r} needs a name")
            parts.append(subresource)
        return "/".join(parts)
