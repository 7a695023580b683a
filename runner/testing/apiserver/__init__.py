"""An in-process Kubernetes API server for tests, benchmarks and ``kinrun --embedded``.

One concept per module: ``registry`` (served kinds, discovery), ``store`` (objects, the global
resourceVersion), ``history`` (bounded event log per resource), ``watch`` (streams),
``selectors``, ``patch``, ``strategy`` (status subresource rules), ``validation``,
``managed_fields``, ``apply`` (server-side apply), ``typed`` (list shapes for apply),
``status`` (metav1.Status errors), ``faults``, ``rest`` (routing, verbs),
``schemas`` (schema admission of writes), ``scale``, ``tables``, ``protobuf`` (request
bodies), ``gc`` (garbage collector, namespace controller), ``openapi`` (the OpenAPI
documents), ``handlers`` (HTTP), ``kubeconfig``,
``server`` (``EmbeddedAPIServer``; its docstring lists how this server differs from a real
kube-apiserver), ``__main__`` (``python -m kinrun.testing.apiserver``). Test-only code:
nothing in kinrun's runtime path imports it unless ``--embedded`` is used.
"""

from .faults import Faults
from .registry import Registry, ResourceType
from .server import EmbeddedAPIServer, controllers_default
from .status import StatusError
from .store import Entry, ListResult, Store

__all__ = [
    "EmbeddedAPIServer",
    "Entry",
    "Faults",
    "ListResult",
    "Registry",
    "ResourceType",
    "StatusError",
    "Store",
    "controllers_default",
]
