"""The kinds a manifest template names with literal text, read without rendering it.

``applySet`` prunes the kinds its manifests name even when the parent lost its annotations,
and the ``children`` action needs each child's kind before any render (its informer is made
at load time): both read the template as YAML with every ``{{ }}`` as a placeholder and every
``{% %}``/``{# #}`` tag dropped. Pure; no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from kinrun import safe_yaml
from kinrun.kube.resources import split_api_version

"""PyYAML's C safe loader where built, else the pure-Python one."""
_EXPR = re.compile(r"\{\{.*?\}\}", re.S)
_TAG = re.compile(r"\{%.*?%\}|\{#.*?#\}", re.S)


def literal_documents(manifests: Any) -> list[Any]:
    """The objects ``manifests`` holds, read as YAML with each ``{{ }}`` as a placeholder and
    tags dropped (a mapping or list given as is); [] when it cannot be read so."""
    if not isinstance(manifests, str):
        return flatten_documents([manifests])
    try:
        return flatten_documents(safe_yaml.load_all(
            _EXPR.sub("kinrun-placeholder", _TAG.sub("", manifests)), safe_yaml.ObjectLoader))
    except yaml.YAMLError:
        return []


def literal_kinds(manifests: Any) -> tuple[tuple[str, str], ...]:
    """(apiVersion, kind) of each child ``manifests`` names with literal text (a template read
    with each ``{{ }}`` as a placeholder and tags dropped); () when it cannot be read so."""
    found: dict[tuple[str, str], None] = {}
    for item in literal_documents(manifests):
        if not isinstance(item, Mapping):
            continue
        api_version, kind = item.get("apiVersion"), item.get("kind")
        if all(isinstance(v, str) and v and "{" not in v and "kinrun-placeholder" not in v
               for v in (api_version, kind)):
            try:
                split_api_version(api_version)
            except ValueError:
                continue
            found[(api_version, kind)] = None
    return tuple(found)


def flatten_documents(documents: Iterable[Any]) -> list[Any]:
    """The objects of YAML ``documents``: a list document gives its items; None (an empty
    document or item) is skipped."""
    out: list[Any] = []
    for doc in documents:
        if doc is None:
            continue
        if isinstance(doc, list):
            out.extend(item for item in doc if item is not None)
        else:
            out.append(doc)
    return out
