"""Differential tests of built-in kinds' server-side Tables (``kubectl get``, ``-o wide``):
for each kind, a few objects (empty ones, many endpoints or hosts, wide columns, status
written through ``/status``) are created on kube-apiserver 1.20 and on the embedded server,
and the Tables' column definitions (names, types, priorities, descriptions) and row cells
must be the same. An Age cell is compared by its shape (a few seconds: ``<seconds>``).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from .conftest import Pair, Target
from .test_differential import _crd, check
from .test_differential_schemas import TABLE, _table_view

Obj = dict[str, Any]

PAST = "2019-03-01T10:00:00Z"
"""A fixed past time: its age is years on both servers (the same text within a day)."""


def _pod_template(labels: Obj, *containers: tuple[str, str]) -> Obj:
    return {"metadata": {"labels": labels}, "spec": {
        "containers": [{"name": n, "image": i} for n, i in containers]}}


def _endpoints(name: str, subsets: list[Obj] | None) -> Obj:
    body: Obj = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name}}
    if subsets is not None:
        body["subsets"] = subsets
    return body


def _addresses(*ips: str) -> list[Obj]:
    return [{"ip": ip} for ip in ips]


ENDPOINTS = [
    _endpoints("empty", None),
    _endpoints("headless", [{"addresses": _addresses("10.0.0.1", "10.0.0.2")}]),
    _endpoints("one", [{"addresses": _addresses("10.0.0.1"), "ports": [{"port": 80}]}]),
    _endpoints("many", [{"addresses": _addresses("10.0.0.1", "10.0.0.2", "10.0.0.3"),
                         "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]},
                        {"addresses": _addresses("10.0.1.1"), "ports": [{"port": 8080}]}]),
    _endpoints("notready", [{"notReadyAddresses": _addresses("10.0.0.9"),
                             "ports": [{"port": 80}]}]),
    _endpoints("ipv6", [{"addresses": _addresses("fd00::1"), "ports": [{"port": 53}]}]),
]

PVC_SPEC = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
            "volumeMode": "Filesystem"}
"""(volumeMode and the status's phase are given: the embedded server does not default them.)"""
PENDING = {"phase": "Pending"}
PVCS = [
    {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "plain"},
     "spec": PVC_SPEC, "status": PENDING},
    {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "block"},
     "spec": {**PVC_SPEC, "storageClassName": "fast", "volumeMode": "Block"}, "status": PENDING},
    {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {
        "name": "bound", "annotations": {"volume.beta.kubernetes.io/storage-class": "old"}},
     "spec": {**PVC_SPEC, "storageClassName": "new", "volumeName": "pv-1"}},
]
PVC_STATUS = {"bound": {"phase": "Bound", "capacity": {"storage": "2Gi"},
                        "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"]}}

RCS = [
    {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "two"},
     "spec": {"replicas": 2, "selector": {"app": "x", "tier": "b"},
              "template": _pod_template({"app": "x", "tier": "b"}, ("a", "ia"), ("b", "ib"))}},
    {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "zero"},
     "spec": {"replicas": 0, "selector": {"app": "z"},
              "template": _pod_template({"app": "z"}, ("c", "ic:1"))}},
]
"""(A selector is given: the embedded server does not default it from the template.)"""
RC_STATUS = {"two": {"replicas": 3, "readyReplicas": 1}}


def _ingress(name: str, spec: Obj) -> Obj:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": name},
            "spec": spec}


BACKEND = {"service": {"name": "s", "port": {"number": 80}}}
INGRESSES = [
    _ingress("default", {"defaultBackend": BACKEND}),
    _ingress("hosts", {"ingressClassName": "nginx", "tls": [{"hosts": ["a.example.com"]}],
                       "rules": [{"host": f"{h}.example.com", "http": {"paths": [{
                           "path": "/", "pathType": "Prefix", "backend": BACKEND}]}}
                                 for h in ("a", "b", "c", "d", "e")]}),
    _ingress("nohost", {"rules": [{"http": {"paths": [{
        "path": "/", "pathType": "Prefix", "backend": BACKEND}]}}]}),
]
INGRESS_STATUS = {"hosts": {"loadBalancer": {"ingress": [
    {"ip": "10.1.2.3"}, {"hostname": "a-rather-long-load-balancer.example.com"}]}}}


def _event_v1(name: str, **fields: Any) -> Obj:
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name},
            "eventTime": "2019-03-01T10:00:00.000000Z", "reportingController": "kinrun.dev/c",
            "reportingInstance": "i-1", "action": "Check", "reason": "Checked", "type": "Normal",
            **fields}


EVENTS_V1 = [
    _event_v1("plain", regarding={"kind": "Pod", "name": "p", "namespace": "x",
                                  "fieldPath": "spec.containers{c}"}, note=" hello  "),
    _event_v1("series", type="Warning", series={"count": 4, "lastObservedTime":
                                                "2019-03-02T10:00:00.000000Z"},
              regarding={"kind": "ConfigMap", "namespace": "x"}),
]


def _webhook(kind: str, *names: str) -> Obj:
    hooks = [{"name": f"{n}.kinrun.dev", "clientConfig": {"url": "https://example.com/x"},
              "admissionReviewVersions": ["v1"], "sideEffects": "None"} for n in names]
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": kind.lower()}, "webhooks": hooks}


def _pod(name: str, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "i"}], **spec}}


def _container_status(name: str, state: Obj, ready: bool = False, restarts: int = 0) -> Obj:
    return {"name": name, "state": state, "ready": ready, "restartCount": restarts,
            "image": "i", "imageID": ""}


PODS = [_pod("plain"), _pod("init", initContainers=[{"name": "i", "image": "i"}]),
        _pod("done"), _pod("failed"),
        _pod("crash"), _pod("running", nodeName="n1", readinessGates=[
            {"conditionType": "kinrun.dev/a"}, {"conditionType": "kinrun.dev/b"}])]
RUNNING = {"running": {}}
POD_STATUS = {
    "done": {"phase": "Succeeded", "containerStatuses": [_container_status(
        "c", {"terminated": {"exitCode": 0, "reason": "Completed"}})]},
    "failed": {"phase": "Failed", "containerStatuses": [_container_status(
        "c", {"terminated": {"exitCode": 2}})]},
    "init": {"phase": "Pending", "initContainerStatuses": [_container_status(
        "i", {"waiting": {"reason": "PodInitializing"}}, restarts=2)]},
    "crash": {"phase": "Running", "containerStatuses": [_container_status(
        "c", {"waiting": {"reason": "CrashLoopBackOff"}}, restarts=3)]},
    "running": {"phase": "Running", "podIP": "10.2.0.5", "podIPs": [{"ip": "10.2.0.5"}],
                "nominatedNodeName": "n2",
                "conditions": [{"type": "kinrun.dev/a", "status": "True"},
                               {"type": "kinrun.dev/b", "status": "False"}],
                "containerStatuses": [_container_status("c", RUNNING, ready=True)]}}


def _service(name: str, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


SERVICES = [
    _service("plain", selector={"b": "2", "a": "1"}, ports=[{"name": "web", "port": 80}, {
        "name": "dns", "port": 53, "protocol": "UDP"}], externalIPs=["1.2.3.4", "5.6.7.8"]),
    _service("node", type="NodePort", ports=[{"port": 80, "nodePort": 30080}]),
    _service("headless", clusterIP="None", ports=[{"port": 80}]),
    _service("external", type="ExternalName", externalName="db.example.com"),
    _service("lb", type="LoadBalancer", ports=[{"port": 443, "nodePort": 30443}]),
    _service("lbip", type="LoadBalancer", ports=[{"port": 443, "nodePort": 30444}],
             externalIPs=["9.9.9.9"]),
]
SERVICE_STATUS = {"lbip": {"loadBalancer": {"ingress": [{"hostname": "lb.example.com"},
                                                         {"ip": "10.9.0.1"}]}}}


def _workload(kind: str, name: str, **spec: Any) -> Obj:
    template = _pod_template({"app": name}, ("a", "ia"), ("b", "ib:2"))
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": {
        "selector": {"matchLabels": {"app": name}}, "template": template, **spec}}


SELECTOR = {"matchLabels": {"app": "rs"}, "matchExpressions": [
    {"key": "tier", "operator": "In", "values": ["b", "a"]},
    {"key": "gone", "operator": "DoesNotExist"}]}
REPLICA_SET = _workload("ReplicaSet", "rs", replicas=3)
REPLICA_SET["spec"]["selector"] = SELECTOR
REPLICA_SET["spec"]["template"]["metadata"]["labels"]["tier"] = "a"
DAEMON_SET = _workload("DaemonSet", "ds")
DAEMON_SET["spec"]["template"]["spec"]["nodeSelector"] = {"z": "1", "a": "2"}
JOBS = [{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": {
    **spec, "manualSelector": True, "selector": {"matchLabels": {"job": name}},
    "template": {"metadata": {"labels": {"job": name}}, "spec": {
        "restartPolicy": "Never", "containers": [{"name": "a", "image": "ia"}]}}}}
        for name, spec in (("plain", {}), ("many", {"completions": 5, "parallelism": 2}),
                           ("parallel", {"parallelism": 3}))]
"""(Selectors are manual: the embedded server does not generate ``controller-uid`` ones.)"""
JOB_STATUS = {"many": {"succeeded": 2, "startTime": PAST,
                       "completionTime": "2019-03-01T10:02:30Z"}}

CASES: dict[str, tuple[str, list[Obj], dict[str, Obj]]] = {
    "pods": ("/api/v1/namespaces/{ns}/pods", PODS, POD_STATUS),
    "services": ("/api/v1/namespaces/{ns}/services", SERVICES, SERVICE_STATUS),
    "deployments": ("/apis/apps/v1/namespaces/{ns}/deployments",
                    [_workload("Deployment", "d", replicas=2)], {
                        "d": {"replicas": 2, "readyReplicas": 1, "updatedReplicas": 2,
                              "availableReplicas": 1}}),
    "replicasets": ("/apis/apps/v1/namespaces/{ns}/replicasets", [REPLICA_SET],
                    {"rs": {"replicas": 2, "readyReplicas": 1}}),
    "statefulsets": ("/apis/apps/v1/namespaces/{ns}/statefulsets",
                     [_workload("StatefulSet", "sts", serviceName="s")], {}),
    "daemonsets": ("/apis/apps/v1/namespaces/{ns}/daemonsets", [DAEMON_SET], {}),
    "jobs": ("/apis/batch/v1/namespaces/{ns}/jobs", JOBS, JOB_STATUS),
    "configmaps": ("/api/v1/namespaces/{ns}/configmaps", [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
         "data": {"a": "1", "b": "2"}, "binaryData": {"c": "eA=="}}], {}),
    "secrets": ("/api/v1/namespaces/{ns}/secrets", [
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
         "type": "kinrun.dev/x", "data": {"a": "eA==", "b": "eA=="}}], {}),
    "serviceaccounts": ("/api/v1/namespaces/{ns}/serviceaccounts", [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"},
         "secrets": [{"name": "x"}, {"name": "y"}]}], {}),
    "events": ("/api/v1/namespaces/{ns}/events", [
        {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "old"}, "involvedObject": {
            "kind": "Pod", "name": "p", "namespace": "{ns}", "fieldPath": "spec.x"},
         "reason": "R", "message": " m ", "type": "Normal", "count": 3,
         "source": {"component": "c", "host": "h"}, "firstTimestamp": PAST,
         "lastTimestamp": "2019-03-02T10:00:00Z"},
        {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "new"}, "involvedObject": {
            "kind": "Node", "name": "n", "namespace": "{ns}"}, "reason": "R", "type": "Normal",
         "eventTime": "2019-03-01T10:00:00.000000Z", "reportingComponent": "rc",
         "reportingInstance": "ri", "action": "A",
         "series": {"count": 4, "lastObservedTime": "2019-03-02T10:00:00.000000Z"}},
        {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "bare"},
         "involvedObject": {"kind": "Pod", "namespace": "{ns}"}}], {}),
    "leases": ("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", [
        {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": n},
         "spec": spec} for n, spec in (("held", {"holderIdentity": "h"}), ("free", {}))], {}),
    "endpoints": ("/api/v1/namespaces/{ns}/endpoints", ENDPOINTS, {}),
    "persistentvolumeclaims": ("/api/v1/namespaces/{ns}/persistentvolumeclaims", PVCS,
                               PVC_STATUS),
    "replicationcontrollers": ("/api/v1/namespaces/{ns}/replicationcontrollers", RCS,
                               RC_STATUS),
    "ingresses": ("/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses", INGRESSES,
                  INGRESS_STATUS),
    "events.k8s.io": ("/apis/events.k8s.io/v1/namespaces/{ns}/events", EVENTS_V1, {}),
}
"""case -> (collection path, objects to create, status to write through ``/status``)."""

WEBHOOKS = {
    "mutatingwebhookconfigurations": [_webhook("MutatingWebhookConfiguration", "a", "b")],
    "validatingwebhookconfigurations": [_webhook("ValidatingWebhookConfiguration")],
}


_UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_IPV4 = re.compile(r"\d+\.\d+\.\d+\.\d+")
_NOW = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def _drawn(table: Obj) -> Obj:
    """``table`` with what each server draws at random replaced: uids (a Job's selector),
    allocated cluster IPs and creation times (a CRD's CREATED AT)."""
    names = [c["name"] for c in table.get("columnDefinitions") or []]
    for row in table.get("rows") or []:
        row["cells"] = [_IPV4.sub("<ip>", c) if names[i] == "Cluster-IP" else
                        _NOW.sub("<now>", _UID.sub("<uid>", c)) if isinstance(c, str) else c
                        for i, c in enumerate(row["cells"])]
    return table


def _view(codes: list[Any], table: Obj) -> Obj:
    """The answers' codes and the Table as nested maps (so a difference names its column and
    row): each column's definition by position and name, each row's cells by column, the
    rows' conditions."""
    view = _table_view(_drawn(table))
    names = [f"{i}:{c['name']}" for i, c in enumerate(view["columns"])]
    conditions = [r.get("conditions") for r in table.get("rows") or []]
    return {"codes": codes, "kind": view["kind"], "objects": view["objects"],
            "conditions": conditions,
            "columns": dict(zip(names, view["columns"])),
            "rows": {f"{i}:{r[names.index('0:Name') if '0:Name' in names else -1]}":
                     dict(zip(names, r)) for i, r in enumerate(view["rows"])}}


def _create_all(t: Target, path: str, objs: list[Obj], statuses: dict[str, Obj]) -> list[Any]:
    """Create ``objs`` (``{ns}`` in a string: the test's namespace) under ``path`` and write
    their ``statuses``: the answers' codes."""
    objs = json.loads(json.dumps(objs).replace("{ns}", t.ns))
    codes = [t.kube.request("POST", path, obj).status for obj in objs]
    for name, status in statuses.items():
        live = t.kube.get(f"{path}/{name}").body
        codes.append(t.kube.request("PUT", f"{path}/{name}/status",
                                    {**live, "status": status}).status)
    return codes


@pytest.mark.parametrize("case", sorted(CASES))
def test_builtin_tables(both: Pair, case: str) -> None:
    """A namespaced kind's Table (columns with priorities and descriptions, cells) is 1.20's."""
    template, objs, statuses = CASES[case]

    def scenario(t: Target) -> Any:
        path = template.format(ns=t.ns)
        codes = _create_all(t, path, objs, statuses)
        return _view(codes, t.kube.request("GET", path, accept=TABLE).body)

    real = check(both, scenario)
    assert all(200 <= code < 300 for code in real["codes"]) and real["rows"]


@pytest.mark.parametrize("plural", sorted(WEBHOOKS))
def test_webhook_configuration_tables(both: Pair, plural: str) -> None:
    """A webhook configuration's Table (the Webhooks count), of one object (the collection is
    cluster-wide); configurations without rules, so no request is sent to them."""
    def scenario(t: Target) -> Any:
        path = f"/apis/admissionregistration.k8s.io/v1/{plural}"
        obj = {**WEBHOOKS[plural][0]}
        obj["metadata"] = {"name": f"{obj['metadata']['name']}-{t.ns}"}
        try:
            code = t.kube.request("POST", path, obj).status
            one = t.kube.request("GET", f"{path}/{obj['metadata']['name']}", accept=TABLE)
            return _view([code], one.body)
        finally:
            t.kube.request("DELETE", f"{path}/{obj['metadata']['name']}")

    real = check(both, scenario)
    assert real["codes"] == [201] and real["rows"]


NODE_STATUS = {"conditions": [{"type": "Ready", "status": "False"}],
               "addresses": [{"type": "Hostname", "address": "n"},
                             {"type": "InternalIP", "address": "10.3.0.1"},
                             {"type": "ExternalIP", "address": "1.3.0.1"}],
               "nodeInfo": {"kubeletVersion": "v1.20.2", "osImage": "Debian", "kernelVersion": "5",
                            "containerRuntimeVersion": "containerd://1.4", "machineID": "",
                            "systemUUID": "", "bootID": "", "kubeProxyVersion": "",
                            "operatingSystem": "linux", "architecture": "amd64"}}


def test_node_and_namespace_tables(both: Pair) -> None:
    """The Tables of one Node (roles from labels; a bare one: Unknown, ``<unknown>``s; one
    with status: NotReady, SchedulingDisabled, addresses, node info) and of a Namespace."""
    def scenario(t: Target) -> Any:
        nodes, out = "/api/v1/nodes", {}
        for name, labels, status in (("bare", {}, None), ("full", {
                "node-role.kubernetes.io/master": "", "kubernetes.io/role": "worker",
                "node-role.kubernetes.io/infra": "x"}, NODE_STATUS)):
            name = f"{name}-{t.ns}"
            body = {"apiVersion": "v1", "kind": "Node", "spec": {"unschedulable": bool(status)},
                    "metadata": {"name": name, "labels": labels}}
            try:
                codes = _create_all(t, nodes, [body], {name: status} if status else {})
                out[name[:4]] = _view(codes, t.kube.request("GET", f"{nodes}/{name}",
                                                            accept=TABLE).body)
            finally:
                t.kube.request("DELETE", f"{nodes}/{name}")
        out["ns"] = _view([], t.kube.request("GET", f"/api/v1/namespaces/{t.ns}",
                                             accept=TABLE).body)
        return out

    real = check(both, scenario)
    assert real["bare"]["codes"] == [201] and real["full"]["codes"] == [201, 200]


def test_custom_resource_definition_table(both: Pair) -> None:
    """A CustomResourceDefinition's Table: NAME and CREATED AT (type date, the creation
    timestamp as written)."""
    def scenario(t: Target) -> Any:
        crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        crd = _crd(f"tb{t.ns[-6:]}.kinrun.dev")
        name = crd["metadata"]["name"]
        try:
            code = t.kube.request("POST", crds, crd).status
            return _view([code], t.kube.request("GET", f"{crds}/{name}", accept=TABLE).body)
        finally:
            t.kube.request("DELETE", f"{crds}/{name}")

    real = check(both, scenario)
    assert real["codes"] == [201] and list(real["rows"].values())[0]["1:Created At"] == "<now>"
