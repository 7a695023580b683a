"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902), and the approximations used
for strategic merge patch and server-side apply.

Strategic merge patch is approximated without schemas: maps merge as in a merge patch; lists
of objects whose field name is a well-known merge list of the built-in types (``containers``,
``env``, ``volumes``, ``ports``, ``conditions``, ...: ``MERGE_KEYS``) merge item by item on
their merge key, ``finalizers`` merge as a set, every other list is replaced; the directives
``$patch: delete|replace``, ``$setElementOrder/<list>``, ``$deleteFromPrimitiveList/<list>`` and
``$retainKeys`` are honoured or dropped. Server-side apply lives in ``apply``. Functions here
are pure: they never mutate their inputs.
"""

from __future__ import annotations

from typing import Any

import orjson
import yaml

from kinrun import safe_yaml

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


def _child(cur: Any, tok: str, path: str) -> Any:
    """The member ``tok`` of a dict or list; 422 when it does not exist."""
    if isinstance(cur, dict) and tok in cur:
        return cur[tok]
    if isinstance(cur, list) and tok.isdigit() and int(tok) < len(cur):
        return cur[int(tok)]
    raise _unprocessable(f"path {path!r} does not exist")


def _parent(doc: Any, tokens: list[str], path: str) -> Any:
    cur = doc
    for tok in tokens[:-1]:
        cur = _child(cur, tok, path)
    return cur


def _get(doc: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return doc
    return _child(_parent(doc, tokens, path), tokens[-1], path)


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
            return safe_yaml.load(body.decode("utf-8"), safe_yaml.ObjectLoader)
        return orjson.loads(body)
    except (ValueError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise bad_request(f"error decoding patch: {exc}") from None


# field name -> merge key of the built-in types' "patchStrategy: merge" lists of objects
MERGE_KEYS = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name",
              "env": "name", "volumes": "name", "volumeMounts": "mountPath",
              "volumeDevices": "devicePath", "imagePullSecrets": "name", "hostAliases": "ip",
              "conditions": "type", "ownerReferences": "uid", "resourceClaims": "name",
              "topologySpreadConstraints": "topologyKey", "taints": "key",
              "readinessGates": "conditionType"}
SET_LISTS = ("finalizers",)


def _merge_key(field: str, items: list[Any]) -> str | None:
    if field == "ports":
        return "containerPort" if any(isinstance(i, dict) and "containerPort" in i for i in items) else "port"
    return MERGE_KEYS.get(field)


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Strategic merge patch approximated without schemas (see module docstring)."""
    if not isinstance(patch, dict):
        return _copy(patch)
    if patch.get("$patch") == "replace":
        return _copy({k: v for k, v in patch.items() if k != "$patch"})
    if patch.get("$patch") == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    order: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/"):
            order[key.split("/", 1)[1]] = value
        elif key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [v for v in result.get(field) or [] if v not in (value or [])]
        elif key.startswith("$"):
            continue
        elif value is None:
            result.pop(key, None)
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value)
        else:
            merged = strategic_merge_patch(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
    for field, wanted in order.items():
        result[field] = _reorder(field, result.get(field), wanted)
    return result


def _merge_list(field: str, target: Any, patch: list[Any]) -> list[Any]:
    current = target if isinstance(target, list) else []
    if field in SET_LISTS:
        return _copy(current) + [_copy(v) for v in patch if v not in current]
    key = _merge_key(field, current + patch)
    if key is None or not all(isinstance(i, dict) for i in patch):
        return [_copy(i) for i in patch if not (isinstance(i, dict) and i.get("$patch") == "delete")]
    out = [dict(i) if isinstance(i, dict) else i for i in current]
    for item in patch:
        index = next((n for n, cur in enumerate(out)
                      if isinstance(cur, dict) and cur.get(key) == item.get(key)), None)
        if item.get("$patch") == "delete":
            if index is not None:
                del out[index]
        elif index is None:
            out.append(strategic_merge_patch({}, item))
        else:
            out[index] = strategic_merge_patch(out[index], item)
    return out


def _reorder(field: str, items: Any, wanted: list[Any]) -> Any:
    if not isinstance(items, list):
        return items
    key = _merge_key(field, items)
    if key is None:
        return items
    rank = {w.get(key) if isinstance(w, dict) else w: n for n, w in enumerate(wanted)}
    return sorted(items, key=lambda i: rank.get(i.get(key) if isinstance(i, dict) else i, len(rank)))


def apply_patch(content_type: str, target: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Apply a decoded ``patch`` of ``content_type`` to ``target``; returns a new dict."""
    if content_type == JSON_PATCH:
        result = json_patch(target, patch)
    elif content_type == STRATEGIC:
        if not isinstance(patch, dict):
            raise bad_request("patch body must be a JSON object")
        result = strategic_merge_patch(target, patch)
    else:
        if not isinstance(patch, dict):
            raise bad_request("patch body must be a JSON object")
        result = merge_patch(target, patch)
    if not isinstance(result, dict):
        raise _unprocessable("the patched object is not a JSON object")
    return result
