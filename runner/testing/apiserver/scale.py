"""The ``/scale`` subresource: an object seen and changed as an ``autoscaling/v1`` Scale.

As kube-apiserver's scale REST storage (``pkg/registry/apps/deployment/storage`` and the
apiextensions ``ScaleREST`` for CRDs): GET answers ``{spec: {replicas}, status: {replicas,
selector}}`` read from the kind's paths (``ResourceType.scale``); PUT and PATCH (merge, JSON,
strategic as merge) change only the spec replicas path of the object, guarded by the Scale's
``metadata.resourceVersion`` when sent. The selector is the label selector in its string form
(``format_selector``) for built-ins, the string at ``labelSelectorPath`` for CRDs.
Pure functions over dicts the caller owns.
"""

from __future__ import annotations

from typing import Any

from . import status as st
from .registry import ResourceType

Obj = dict[str, Any]


def _get(obj: Any, path: str) -> Any:
    for part in path.split(".") if path else []:
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def _set(obj: Obj, path: str, value: Any) -> None:
    parts = path.split(".")
    for part in parts[:-1]:
        child = obj.get(part)
        obj = obj.setdefault(part, {}) if isinstance(child, dict) or child is None else {}
    obj[parts[-1]] = value


def format_selector(selector: Any) -> str:
    """A label selector as its ``String()`` writes it: a metav1.LabelSelector
    (``matchLabels``/``matchExpressions``) as ``metav1.LabelSelectorAsSelector(...).String()``
    - requirements sorted by key (``k=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``, ``!k``;
    values sorted, once), ``<invalid>`` for an unknown operator or an In/NotIn without
    values -, an RC's plain map as ``labels.SelectorFromSet(...).String()`` (``a=b,c=d``,
    sorted); "" when absent or empty."""
    if not isinstance(selector, dict):
        return str(selector or "")
    if "matchLabels" not in selector and "matchExpressions" not in selector:
        return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    reqs = [(str(k), f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or []:
        key, op = str(expr.get("key") or ""), expr.get("operator")
        values = ",".join(sorted(set(map(str, expr.get("values") or []))))
        if op in ("In", "NotIn") and not values or op not in (
                "In", "NotIn", "Exists", "DoesNotExist"):
            return "<invalid>"
        reqs.append((key, {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})",
                           "Exists": key, "DoesNotExist": f"!{key}"}[op]))
    return ",".join(text for _key, text in sorted(reqs, key=lambda r: r[0]))


def scale_of(rtype: ResourceType, obj: Obj) -> Obj:
    """The autoscaling/v1 Scale of ``obj`` (a kind with ``rtype.scale``)."""
    spec_path, status_path, selector_path = rtype.scale or ("", "", "")
    meta = obj.get("metadata") or {}
    scale_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                       "creationTimestamp") if k in meta}
    status: Obj = {"replicas": int(_get(obj, status_path) or 0)}
    selector = _get(obj, selector_path) if selector_path else None
    text = format_selector(selector) if not rtype.custom else str(selector or "")
    if text:
        status["selector"] = text
    return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": scale_meta,
            "spec": {"replicas": int(_get(obj, spec_path) or 0)}, "status": status}


def with_replicas(rtype: ResourceType, obj: Obj, scale: Any) -> Obj:
    """``obj`` with its spec replicas set from the Scale ``scale`` (its resourceVersion, when
    sent, carried over as the write's precondition). 422 when replicas is not an integer >= 0;
    400 when ``scale`` is not an object."""
    if not isinstance(scale, dict):
        raise st.bad_request("the object provided is unrecognized: not a Scale")
    name = str((obj.get("metadata") or {}).get("name") or "")
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
        raise st.invalid("Scale", "autoscaling", name, [(
            "spec.replicas", "FieldValueInvalid",
            f"Invalid value: {replicas!r}: must be greater than or equal to 0")])
    _set(obj, (rtype.scale or ("spec.replicas",))[0], replicas)
    sent_rv = (scale.get("metadata") or {}).get("resourceVersion")
    if sent_rv:
        obj.setdefault("metadata", {})["resourceVersion"] = sent_rv
    else:
        (obj.get("metadata") or {}).pop("resourceVersion", None)
    return obj
