"""The cells of built-in kinds' Tables, as kube-apiserver 1.20's printers fill them
(``pkg/printers/internalversion/printers.go``: ``printPod``, ``printEndpoints``, ...; the
server asks them for every column, ``-o wide`` ones included, ``GenerateOptions{Wide: true}``).
Their column definitions are ``printer_docs.definitions``; :func:`columns` joins the two.

A cell function takes the object as served (the v1 wire form, where 1.20 prints the internal
form) and the server's clock.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from . import printer_docs
from .scale import format_selector
from .tables import Cell, Column, Obj, _epoch, _get, age, human_duration


def _name(obj: Obj, _now: float) -> Any:
    return (obj.get("metadata") or {}).get("name")


def _int(path: str) -> Cell:
    """An integer field, 0 when unset (a Go int32's zero value)."""
    return lambda o, _now: int(_get(o, path) or 0)


def _text(path: str, empty: str = "") -> Cell:
    """A string field, ``empty`` when unset or empty."""
    return lambda o, _now: str(_get(o, path) or empty)


def _ratio(ready: str, want: str) -> Cell:
    """``ready/want`` of two integer fields (``fmt.Sprintf("%d/%d")``)."""
    return lambda o, _now: f"{int(_get(o, ready) or 0)}/{int(_get(o, want) or 0)}"


def _count(path: str) -> Cell:
    """The number of items (or keys) of a field (``int64(len(...))``)."""
    return lambda o, _now: len(_get(o, path) or ())


def format_labels(labels: Any) -> str:
    """A label map as ``a=b,c=d``, sorted, ``<none>`` when empty (``labels.FormatLabels``)."""
    text = ",".join(f"{k}={v}" for k, v in sorted((labels or {}).items()))
    return text or "<none>"


def _selector(path: str) -> Cell:
    return lambda o, _now: format_selector(_get(o, path))


def _containers(path: str) -> tuple[Cell, Cell]:
    """The Containers and Images cells of a pod template (``layoutContainerCells``: names and
    images joined by commas)."""
    def names(obj: Obj, _now: float) -> str:
        return ",".join(str(c.get("name") or "") for c in _get(obj, path) or [])

    def images(obj: Obj, _now: float) -> str:
        return ",".join(str(c.get("image") or "") for c in _get(obj, path) or [])
    return names, images


_TEMPLATE = ".spec.template.spec.containers"
_WORKLOAD = (*_containers(_TEMPLATE), _selector(".spec.selector"))
"""The wide cells of a workload: Containers, Images, Selector."""


# -- Pod ------------------------------------------------------------------------------------


def _init_reason(pod: Obj) -> tuple[str, int] | None:
    """The Status of a pod still initializing (``Init:2/3``, ``Init:CrashLoopBackOff``,
    ``Init:ExitCode:1``, ``Init:Signal:9``) with the restarts of its init containers up to the
    one that decides (the first not terminated with exit code 0), as ``printPod``; None once
    they are all done."""
    statuses = (pod.get("status") or {}).get("initContainerStatuses") or []
    total = len((pod.get("spec") or {}).get("initContainers") or [])
    restarts = 0
    for i, container in enumerate(statuses):
        restarts += int(container.get("restartCount") or 0)
        state = container.get("state") or {}
        done, waiting = state.get("terminated"), state.get("waiting") or {}
        if done is not None and not int(done.get("exitCode") or 0):
            continue
        if done is not None and done.get("reason"):
            return f"Init:{done['reason']}", restarts
        if done is not None:
            signal = int(done.get("signal") or 0)
            code = f"Signal:{signal}" if signal else f"ExitCode:{int(done.get('exitCode'))}"
            return f"Init:{code}", restarts
        if waiting.get("reason") and waiting["reason"] != "PodInitializing":
            return f"Init:{waiting['reason']}", restarts
        return f"Init:{i}/{total}", restarts
    return None


def _container_reason(pod: Obj, reason: str) -> tuple[str, int]:
    """The Status a pod's containers give (walked last to first, as ``printPod``: a waiting or
    terminated reason, ``ExitCode:N``/``Signal:N``; ``Completed`` with a container still
    running is ``Running`` if the pod is Ready, ``NotReady`` if not) and its ready count (a
    container ready and running)."""
    status = pod.get("status") or {}
    ready, running = 0, False
    for container in reversed(status.get("containerStatuses") or []):
        state = container.get("state") or {}
        waiting, done = state.get("waiting") or {}, state.get("terminated")
        if waiting.get("reason"):
            reason = waiting["reason"]
        elif done is not None and done.get("reason"):
            reason = done["reason"]
        elif done is not None:
            signal = int(done.get("signal") or 0)
            reason = f"Signal:{signal}" if signal else f"ExitCode:{int(done.get('exitCode') or 0)}"
        elif container.get("ready") and state.get("running") is not None:
            running, ready = True, ready + 1
    if reason == "Completed" and running:
        pod_ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in status.get("conditions") or [])
        reason = "Running" if pod_ready else "NotReady"
    return reason, ready


def pod_cells(pod: Obj) -> tuple[str, str, int]:
    """A pod's Ready, Status and Restarts cells, as 1.20's ``printPod``: the phase (or the
    status's reason), then its init containers' or containers' state; ``Terminating`` (or
    ``Unknown`` for the NodeLost reason) once deletion started. Restarts count the init
    containers' while initializing, else the containers'."""
    status = pod.get("status") or {}
    reason = str(status.get("reason") or status.get("phase") or "")
    total = len((pod.get("spec") or {}).get("containers") or [])
    init = _init_reason(pod)
    if init is not None:
        (reason, restarts), ready = init, 0
    else:
        reason, ready = _container_reason(pod, reason)
        restarts = sum(int(c.get("restartCount") or 0)
                       for c in status.get("containerStatuses") or [])
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    return f"{ready}/{total}", reason, restarts


def _pod_ip(pod: Obj, _now: float) -> str:
    status = pod.get("status") or {}
    ips = status.get("podIPs") or []
    return str((ips[0].get("ip") if ips else status.get("podIP")) or "<none>")


def _readiness_gates(pod: Obj, _now: float) -> str:
    """``true/total`` of the pod's readiness gates (the first condition of each gate's type
    counts), ``<none>`` without gates."""
    gates = (pod.get("spec") or {}).get("readinessGates") or []
    if not gates:
        return "<none>"
    conditions = (pod.get("status") or {}).get("conditions") or []
    true = 0
    for gate in gates:
        found = next((c for c in conditions if c.get("type") == gate.get("conditionType")), {})
        true += found.get("status") == "True"
    return f"{true}/{len(gates)}"


# -- Service, Ingress, Endpoints ----------------------------------------------------------------


def load_balancer_text(status: Any) -> str:
    """A LoadBalancerStatus's ingress points, each its IP or else its hostname, sorted and
    unique, joined by commas (``loadBalancerStatusStringer``, wide: never cut short)."""
    points = {str(i.get("ip") or i.get("hostname"))
              for i in (status or {}).get("ingress") or [] if i.get("ip") or i.get("hostname")}
    return ",".join(sorted(points))


def _external_ip(svc: Obj, _now: float) -> str:
    """EXTERNAL-IP as ``getServiceExternalIP``: ClusterIP and NodePort services their
    externalIPs (``<none>``), LoadBalancer ones their load balancer's points then externalIPs
    (``<pending>`` without either), ExternalName ones their externalName."""
    spec = svc.get("spec") or {}
    kind, external = spec.get("type") or "ClusterIP", list(spec.get("externalIPs") or [])
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if kind == "LoadBalancer":
        points = load_balancer_text((svc.get("status") or {}).get("loadBalancer"))
        return ",".join(([points] if points else []) + external) or "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName") or "")
    return "<unknown>"


def _service_ports(svc: Obj, _now: float) -> str:
    """PORT(S) as ``makePortString``: ``80/TCP``, ``80:30080/TCP`` with a node port."""
    pieces = []
    for port in (svc.get("spec") or {}).get("ports") or []:
        node = int(port.get("nodePort") or 0)
        pieces.append(f"{port.get('port')}{f':{node}' if node > 0 else ''}"
                      f"/{port.get('protocol') or ''}")
    return ",".join(pieces) or "<none>"


def _cluster_ip(svc: Obj, _now: float) -> str:
    spec = svc.get("spec") or {}
    ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    return str(ips[0]) if ips else "<none>"


def _ingress_hosts(ing: Obj, _now: float) -> str:
    """HOSTS as ``formatHosts``: the rules' hosts, three at most then `` + N more...`` (N
    counts the rules past the third, with a host or not), ``*`` when none has a host."""
    rules = (ing.get("spec") or {}).get("rules") or []
    hosts = [str(r["host"]) for r in rules[:3] if r.get("host")]
    if not hosts:
        return "*"
    more = f" + {len(rules) - 3} more..." if len(rules) > 3 else ""
    return ",".join(hosts) + more


def endpoints_text(endpoints: Obj) -> str:
    """ENDPOINTS as ``formatEndpoints``: each subset's ``ip:port`` (an address per port; only
    the IP in a subset without ports; IPv6 in brackets), three at most then `` + N more...``;
    ``<none>`` without subsets ("" when they hold no ready address)."""
    subsets = endpoints.get("subsets") or []
    if not subsets:
        return "<none>"
    shown: list[str] = []
    count = 0
    for subset in subsets:
        addresses = [str(a.get("ip") or "") for a in subset.get("addresses") or []]
        ports = subset.get("ports") or []
        pairs = [(ip, None) for ip in addresses] if not ports else [
            (ip, p.get("port")) for p in ports for ip in addresses]
        for ip, port in pairs:
            if len(shown) < 3:
                host = f"[{ip}]" if ":" in ip else ip
                shown.append(ip if port is None else f"{host}:{port}")
            count += 1
    return ",".join(shown) + (f" + {count - 3} more..." if count > 3 else "")


# -- PersistentVolumeClaim, Node, Event -----------------------------------------------------


def _pvc_status(pvc: Obj, _now: float) -> str:
    if (pvc.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    return str((pvc.get("status") or {}).get("phase") or "")


def _pvc_bound(cell: Cell) -> Cell:
    """A cell shown only once the claim names its volume (``printPersistentVolumeClaim``)."""
    return lambda o, now: cell(o, now) if _get(o, ".spec.volumeName") else ""


def _access_modes(pvc: Obj, _now: float) -> str:
    """The status's access modes as ``GetAccessModesAsString``: ``RWO,ROX,RWX`` in that order,
    each once."""
    modes = set((pvc.get("status") or {}).get("accessModes") or [])
    return ",".join(short for mode, short in (
        ("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"))
                    if mode in modes)


def _storage_class(pvc: Obj, _now: float) -> str:
    """The beta storage-class annotation, else ``spec.storageClassName``
    (``GetPersistentVolumeClaimClass``)."""
    annotations = (pvc.get("metadata") or {}).get("annotations") or {}
    if "volume.beta.kubernetes.io/storage-class" in annotations:
        return str(annotations["volume.beta.kubernetes.io/storage-class"])
    return str((pvc.get("spec") or {}).get("storageClassName") or "")


def _node_status(node: Obj, _now: float) -> str:
    """``Ready``/``NotReady`` from the Ready condition (``Unknown`` without one), then
    ``SchedulingDisabled`` for an unschedulable node (``printNode``)."""
    conditions = {c.get("type"): c for c in (node.get("status") or {}).get("conditions") or []}
    ready = conditions.get("Ready")
    status = ["Unknown" if ready is None else
              "Ready" if ready.get("status") == "True" else "NotReady"]
    if (node.get("spec") or {}).get("unschedulable"):
        status.append("SchedulingDisabled")
    return ",".join(status)


def _node_roles(node: Obj, _now: float) -> str:
    """The roles of ``node-role.kubernetes.io/<role>`` labels and a ``kubernetes.io/role``
    label's value, sorted and unique (``findNodeRoles``), ``<none>`` without."""
    roles = set()
    for key, value in ((node.get("metadata") or {}).get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/") and key[24:]:
            roles.add(key[24:])
        elif key == "kubernetes.io/role" and value:
            roles.add(str(value))
    return ",".join(sorted(roles)) or "<none>"


def _node_address(kind: str) -> Cell:
    def cell(node: Obj, _now: float) -> str:
        addresses = (node.get("status") or {}).get("addresses") or []
        return next((str(a.get("address")) for a in addresses if a.get("type") == kind),
                    "<none>")
    return cell


def _since(timestamp: Any, now: float) -> str:
    """``translateTimestampSince``: the age of a time, ``<unknown>`` without one."""
    moment = _epoch(str(timestamp)[:19] + "Z") if timestamp else None
    return "<unknown>" if moment is None else human_duration(now - moment)


_EVENTS_V1 = {"regarding": "involvedObject", "note": "message", "deprecatedSource": "source",
              "deprecatedFirstTimestamp": "firstTimestamp",
              "deprecatedLastTimestamp": "lastTimestamp", "deprecatedCount": "count",
              "reportingController": "reportingComponent"}
"""events.k8s.io/v1 Event fields -> the core/v1 ones 1.20 prints (both are one internal type)."""


def _core_event(obj: Obj) -> Obj:
    if not str(obj.get("apiVersion") or "").startswith("events.k8s.io/"):
        return obj
    return {_EVENTS_V1.get(k, k): v for k, v in obj.items()}


def _event_first(obj: Obj, now: float) -> str:
    event = _core_event(obj)
    return _since(event.get("firstTimestamp") or event.get("eventTime"), now)


def _event_last(obj: Obj, now: float) -> str:
    """LAST SEEN as ``printEvent``: the series' last observation, else lastTimestamp, else
    FIRST SEEN (firstTimestamp, else eventTime)."""
    event = _core_event(obj)
    if event.get("series") is not None:
        return _since((event["series"] or {}).get("lastObservedTime"), now)
    if event.get("lastTimestamp"):
        return _since(event["lastTimestamp"], now)
    return _event_first(obj, now)


def _event_count(obj: Obj, _now: float) -> int:
    """COUNT: one more than the series' count (what kube-apiserver 1.20.2 answers, whatever
    ``count`` says; differential test), else ``count`` (1 when unset: a singleton of the new
    API, ``printEvent``)."""
    event = _core_event(obj)
    if event.get("series") is not None:
        return int((event["series"] or {}).get("count") or 0) + 1
    return int(event.get("count") or 0) or 1


def _event_object(obj: Obj, _now: float) -> str:
    """``kind/name`` of the involved object, kind lower-cased (the kind alone without name)."""
    involved = _core_event(obj).get("involvedObject") or {}
    kind = str(involved.get("kind") or "").lower()
    return f"{kind}/{involved['name']}" if involved.get("name") else kind


def _event_source(obj: Obj, _now: float) -> str:
    """``component, host`` of the source, else of reportingController and reportingInstance
    (``formatEventSource``)."""
    event = _core_event(obj)
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent") or ""
    instance = source.get("host") or event.get("reportingInstance") or ""
    return f"{component}, {instance}" if instance else str(component)


def _event_field(path: str) -> Cell:
    return lambda o, _now: str(_get(_core_event(o), path) or "")


# -- Job ------------------------------------------------------------------------------------


def _job_completions(job: Obj, _now: float) -> str:
    """``succeeded/completions``; without completions ``succeeded/1``, or ``succeeded/1 of
    P`` with a parallelism P over 1 (``printJob``)."""
    spec = job.get("spec") or {}
    succeeded = int((job.get("status") or {}).get("succeeded") or 0)
    if spec.get("completions") is not None:
        return f"{succeeded}/{int(spec['completions'])}"
    parallelism = int(spec.get("parallelism") or 0)
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _job_duration(job: Obj, now: float) -> str:
    """Start to completion (or to now while running), "" before it starts."""
    status = job.get("status") or {}
    start = _epoch(status.get("startTime")) if status.get("startTime") else None
    if start is None:
        return ""
    end = _epoch(status.get("completionTime")) if status.get("completionTime") else None
    return human_duration((now if end is None else end) - start)


_POD = [_name, lambda o, _: pod_cells(o)[0], lambda o, _: pod_cells(o)[1],
        lambda o, _: pod_cells(o)[2], age, _pod_ip, _text(".spec.nodeName", "<none>"),
        _text(".status.nominatedNodeName", "<none>"), _readiness_gates]
_EVENT = [_event_last, _event_field(".type"), _event_field(".reason"), _event_object,
          _event_field(".involvedObject.fieldPath"), _event_source,
          lambda o, _: str(_core_event(o).get("message") or "").strip(), _event_first,
          _event_count, _name]
_COUNTS = {"ConfigMap": lambda o, _: len(o.get("data") or {}) + len(o.get("binaryData") or {}),
           "Secret": _count(".data"), "ServiceAccount": _count(".secrets")}
CELLS: dict[tuple[str, str], list[Cell]] = {
    ("", "Pod"): _POD, ("", "Event"): _EVENT, ("events.k8s.io", "Event"): _EVENT,
    ("", "ConfigMap"): [_name, _COUNTS["ConfigMap"], age],
    ("", "Secret"): [_name, _text(".type"), _COUNTS["Secret"], age],
    ("", "ServiceAccount"): [_name, _COUNTS["ServiceAccount"], age],
    ("", "Namespace"): [_name, _text(".status.phase"), age],
    ("", "Service"): [_name, _text(".spec.type"), _cluster_ip, _external_ip, _service_ports,
                      age, lambda o, _: format_labels(_get(o, ".spec.selector"))],
    ("", "Endpoints"): [_name, lambda o, _: endpoints_text(o), age],
    ("", "Node"): [_name, _node_status, _node_roles, age,
                   _text(".status.nodeInfo.kubeletVersion"), _node_address("InternalIP"),
                   _node_address("ExternalIP"), _text(".status.nodeInfo.osImage", "<unknown>"),
                   _text(".status.nodeInfo.kernelVersion", "<unknown>"),
                   _text(".status.nodeInfo.containerRuntimeVersion", "<unknown>")],
    ("", "PersistentVolumeClaim"): [
        _name, _pvc_status, _text(".spec.volumeName"),
        _pvc_bound(_text(".status.capacity.storage", "0")), _pvc_bound(_access_modes),
        _storage_class, age, _text(".spec.volumeMode", "<unset>")],
    ("", "ReplicationController"): [
        _name, _int(".spec.replicas"), _int(".status.replicas"), _int(".status.readyReplicas"),
        age, *_containers(_TEMPLATE), lambda o, _: format_labels(_get(o, ".spec.selector"))],
    ("apps", "Deployment"): [
        _name, _ratio(".status.readyReplicas", ".spec.replicas"),
        _int(".status.updatedReplicas"), _int(".status.availableReplicas"), age, *_WORKLOAD],
    ("apps", "ReplicaSet"): [_name, _int(".spec.replicas"), _int(".status.replicas"),
                             _int(".status.readyReplicas"), age, *_WORKLOAD],
    ("apps", "StatefulSet"): [_name, _ratio(".status.readyReplicas", ".spec.replicas"), age,
                              *_containers(_TEMPLATE)],
    ("apps", "DaemonSet"): [
        _name, *(_int(f".status.{f}") for f in (
            "desiredNumberScheduled", "currentNumberScheduled", "numberReady",
            "updatedNumberScheduled", "numberAvailable")),
        lambda o, _: format_labels(_get(o, ".spec.template.spec.nodeSelector")), age,
        *_WORKLOAD],
    ("batch", "Job"): [_name, _job_completions, _job_duration, age, *_WORKLOAD],
    ("networking.k8s.io", "Ingress"): [
        _name, _text(".spec.ingressClassName", "<none>"), _ingress_hosts,
        lambda o, _: load_balancer_text(_get(o, ".status.loadBalancer")),
        lambda o, _: "80, 443" if _get(o, ".spec.tls") else "80", age],
    ("coordination.k8s.io", "Lease"): [_name, _text(".spec.holderIdentity"), age],
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): [
        _name, _count(".webhooks"), age],
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): [
        _name, _count(".webhooks"), age],
    ("apiextensions.k8s.io", "CustomResourceDefinition"): [
        _name, lambda o, _: (o.get("metadata") or {}).get("creationTimestamp")],
}
"""(group, kind) -> its Table's cells, in ``printer_docs.definitions``' order."""


def pod_conditions(pod: Obj) -> list[Obj] | None:
    """A finished pod's row condition: Completed, reason Succeeded or Failed (1.20's
    ``podSuccessConditions``, ``podFailedConditions``)."""
    phase = (pod.get("status") or {}).get("phase")
    message = {"Succeeded": "The pod has completed successfully.",
               "Failed": "The pod failed."}.get(str(phase))
    if message is None:
        return None
    return [{"type": "Completed", "status": "True", "reason": phase, "message": message}]


ROW_CONDITIONS: dict[tuple[str, str], Callable[[Obj], list[Obj] | None]] = {
    ("", "Pod"): pod_conditions}
"""(group, kind) -> its rows' conditions (1.20's printers set them for Pods only)."""


@functools.cache
def columns(group: str, kind: str) -> list[Column] | None:
    """Every column of the Table of built-in ``group``/``kind``, NAME included, in 1.20's
    order (``printer_docs.definitions`` joined with :data:`CELLS`); None for a kind without
    its own (NAME and AGE)."""
    if (group, kind) not in CELLS:
        return None
    docs = printer_docs.definitions(*(("", "Event") if group == "events.k8s.io" else
                                      (group, kind)))
    return [(name, type_, priority, cell, {"description": doc,
                                           "format": "name" if cell is _name else ""})
            for (name, type_, priority, doc), cell in zip(docs, CELLS[(group, kind)],
                                                          strict=True)]
