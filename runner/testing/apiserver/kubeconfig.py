"""The kubeconfig the embedded server writes for clients (kubectl, the ``kubernetes`` client).

One cluster (``server: http://127.0.0.1:PORT``), one user with a static bearer token (the server
accepts any token or none), one context named ``embedded`` made current.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

CONTEXT = "embedded"


def kubeconfig_dict(url: str, *, namespace: str = "default", token: str = "embedded-token") -> dict[str, Any]:
    """The kubeconfig document for a server at ``url``."""
    return {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": CONTEXT, "cluster": {"server": url}}],
        "users": [{"name": CONTEXT, "user": {"token": token}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT,
                                                   "namespace": namespace}}],
        "current-context": CONTEXT,
    }


def write_kubeconfig(path: str | os.PathLike[str], url: str, **kw: Any) -> Path:
    """Write the kubeconfig for ``url`` to ``path`` (mode 0600); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump(kubeconfig_dict(url, **kw), sort_keys=False))
    target.chmod(0o600)
    return target
