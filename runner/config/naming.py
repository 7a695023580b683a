"""The name a config's deployment takes unless told otherwise (``kinrun manifests``' and
``kinrun rbac``'s ``--name``), written once for every layer that needs it: the manifests,
the RBAC, and the run (the webhook Service ``<name>-webhook``, ``kinrun.admission``)."""

from __future__ import annotations

import re
from pathlib import Path


def default_name(path: Path) -> str:
    """``kinrun-<stem>`` of a config path as a DNS-1123 label (at most 63 characters)."""
    slug = re.sub(r"[^a-z0-9]+", "-", path.stem.lower()).strip("-") or "controller"
    return f"kinrun-{slug}"[:63].rstrip("-")
