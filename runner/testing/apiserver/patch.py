"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902), and the approximations used
for strategic merge patch and server-side apply.

Strategic merge patch is applied as a JSON merge patch: maps merge, lists are replaced whole
(a real server merges lists such as ``containers`` by their merge key and honours ``$patch``
directives). Server-side apply is create-or-merge: the applied configuration is merge-patched
onto the live object (no field ownership, so no apply conflicts and no removal of fields a
manager stopped applying). Functions here are pure: they never mutate their inputs.
"""

from __future__ import annotations

from typing import Any

import orjson
import yaml

from .status import StatusError, bad_request

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"


def _copy(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value))


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: a dict patch merges key by key (null deletes), anything else replaces."""
    if not isinstance(patch, dict):
        return _copy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _unescape_pointer(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _unprocessable(f"invalid JSON pointer {path!r}")
    return [_unescape_pointer(t) for t in path[1:].split("/")]


def _unprocessable(message: str) -> StatusError:
    return StatusError(422, "Invalid", f"the server rejected our request due to an error in our "
                       f"request: {message}")


def _parent(doc: Any, tokens: list[str], path: str) -> Any:
    cur = doc
    for tok in tokens[:-1]:
        if isinstance(cur, dict) and tok in cur:
            cur = cur[tok]
        elif isinstance(cur, list) and tok.isdigit() and int(tok) < len(cur):
            cur = cur[int(tok)]
        else:
            raise _unprocessable(f"path {path!r} does not exist")
    return cur


def _get(doc: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return doc
    parent, last = _parent(doc, tokens, path), tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent[int(last)]
    raise _unprocessable(f"path {path!r} does not exist")


def _add(doc: Any, path: str, value: Any) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent, last = _parent(doc, tokens, path), tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        index = len(parent) if last == "-" else int(last) if last.isdigit() else -1
        if not 0 <= index <= len(parent):
            raise _unprocessable(f"index out of range in {path!r}")
        parent.insert(index, value)
    else:
        raise _unprocessable(f"path {path!r} does not exist")
    return doc


def _remove(doc: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        raise _unprocessable("cannot remove the whole document")
    parent, last = _parent(doc, tokens, path), tokens[-1]
    if isinstance(parent, dict) and last in parent:
        del parent[last]
    elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        del parent[int(last)]
    else:
        raise _unprocessable(f"path {path!r} does not exist")
    return doc


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 on a copy of ``target``: add, remove, replace, move, copy, test. A malformed
    patch raises 400; an operation that cannot apply (missing path, failed test) raises 422."""
    if not isinstance(operations, list):
        raise bad_request("json patch must be a list of operations")
    doc = _copy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"invalid json patch operation: {op!r}")
        kind, path = op["op"], op["path"]
        if kind in ("add", "replace", "test") and "value" not in op:
            raise bad_request(f"json patch {kind} operation needs a value")
        if kind == "add":
            doc = _add(doc, path, _copy(op["value"]))
        elif kind == "remove":
            doc = _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)
            doc = _add(_remove(doc, path), path, _copy(op["value"])) if _pointer(path) else _copy(op["value"])
        elif kind in ("move", "copy"):
            value = _copy(_get(doc, op.get("from", "")))
            if kind == "move":
                doc = _remove(doc, op.get("from", ""))
            doc = _add(doc, path, value)
        elif kind == "test":
            if _get(doc, path) != op["value"]:
                raise _unprocessable(f"testing value {path} failed")
        else:
            raise bad_request(f"unexpected json patch operation {kind!r}")
    return doc


def decode_patch(content_type: str, body: bytes) -> Any:
    """Decode a PATCH body: YAML (or JSON) for apply, JSON otherwise; 400 when malformed."""
    try:
        if content_type == APPLY:
            return yaml.safe_load(body.decode("utf-8"))
        return orjson.loads(body)
    except (ValueError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise bad_request(f"error decoding patch: {exc}") from None


def apply_patch(content_type: str, target: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Apply a decoded ``patch`` of ``content_type`` to ``target``; returns a new dict."""
    if content_type == JSON_PATCH:
        result = json_patch(target, patch)
    else:
        if not isinstance(patch, dict):
            raise bad_request("patch body must be a JSON object")
        result = merge_patch(target, patch)
    if not isinstance(result, dict):
        raise _unprocessable("the patched object is not a JSON object")
    return result
