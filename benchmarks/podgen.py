"""Realistic Pod dicts for benchmarks: about 9 KB of JSON with managedFields (about 5 KB without),
shaped like what a Deployment-managed Pod looks like on a real cluster.

``make_pod(i, namespace="default", with_managed_fields=True) -> dict`` is deterministic in ``i``.
"""

from __future__ import annotations

from typing import Any


def _container(i: int, name: str, port: int) -> dict[str, Any]:
    return {
        "name": name,
        "image": f"registry.example.com/team-{i % 7}/{name}:1.{i % 13}.{i % 5}",
        "imagePullPolicy": "IfNotPresent",
        "args": ["--config=/etc/app/config.yaml", f"--shard={i % 16}", "--log-level=info"],
        "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"},
                  {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
        "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}},
                {"name": "GOMAXPROCS", "valueFrom": {"resourceFieldRef": {"containerName": name, "divisor": "0", "resource": "limits.cpu"}}},
                {"name": "APP_MODE", "value": "production"},
                {"name": "APP_REGION", "value": f"region-{i % 3}"}],
        "resources": {"limits": {"cpu": "500m", "memory": "512Mi"},
                      "requests": {"cpu": "100m", "memory": "128Mi"}},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/app", "readOnly": True},
                         {"name": "data", "mountPath": "/var/lib/app"},
                         {"name": f"kube-api-access-{i % 100000:05d}", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": True}],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": port, "scheme": "HTTP"},
                          "initialDelaySeconds": 10, "timeoutSeconds": 1, "periodSeconds": 10,
                          "successThreshold": 1, "failureThreshold": 3},
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": port, "scheme": "HTTP"},
                           "timeoutSeconds": 1, "periodSeconds": 5, "successThreshold": 1,
                           "failureThreshold": 3},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}},
    }


def _managed_fields(i: int) -> list[dict[str, Any]]:
    spec_fields = {f"k:{{\"name\":\"{n}\"}}": {".": {}, "f:args": {}, "f:image": {}, "f:imagePullPolicy": {},
                                               "f:name": {}, "f:ports": {".": {}, "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:name": {}, "f:protocol": {}}},
                                               "f:resources": {".": {}, "f:limits": {".": {}, "f:cpu": {}, "f:memory": {}}, "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}},
                                               "f:env": {".": {}, "k:{\"name\":\"APP_MODE\"}": {".": {}, "f:name": {}, "f:value": {}}, "k:{\"name\":\"POD_NAME\"}": {".": {}, "f:name": {}, "f:valueFrom": {".": {}, "f:fieldRef": {}}}},
                                               "f:livenessProbe": {".": {}, "f:httpGet": {".": {}, "f:path": {}, "f:port": {}, "f:scheme": {}}, "f:periodSeconds": {}},
                                               "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {},
                                               "f:volumeMounts": {".": {}, "k:{\"mountPath\":\"/etc/app\"}": {".": {}, "f:mountPath": {}, "f:name": {}, "f:readOnly": {}}}}
                   for n in ("app", "sidecar")}
    status_fields = {"f:conditions": {"k:{\"type\":\"ContainersReady\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}},
                                      "k:{\"type\":\"Initialized\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}},
                                      "k:{\"type\":\"Ready\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}},
                     "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {".": {}, "k:{\"ip\":\"10.0.0.1\"}": {".": {}, "f:ip": {}}}, "f:startTime": {}}
    return [
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
         "time": "2024-05-01T10:00:00Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}, "f:tier": {}},
                                     "f:ownerReferences": {".": {}, f"k:{{\"uid\":\"{i:08d}-rs\"}}": {}}},
                      "f:spec": {"f:containers": spec_fields, "f:dnsPolicy": {}, "f:enableServiceLinks": {},
                                 "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {},
                                 "f:terminationGracePeriodSeconds": {}, "f:volumes": {".": {}, "k:{\"name\":\"config\"}": {".": {}, "f:configMap": {".": {}, "f:defaultMode": {}, "f:name": {}}, "f:name": {}}}}}},
        {"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
         "time": "2024-05-01T10:00:05Z", "fieldsType": "FieldsV1", "subresource": "status",
         "fieldsV1": {"f:status": status_fields}},
    ]


def make_pod(i: int, namespace: str = "default", with_managed_fields: bool = True) -> dict[str, Any]:
    """Pod number ``i``: a Deployment-managed Pod with two containers, probes, volumes, status."""
    name = f"web-{i // 10:05d}-{i:07d}"
    meta: dict[str, Any] = {
        "name": name, "generateName": f"web-{i // 10:05d}-", "namespace": namespace,
        "uid": f"{i:08d}-0000-4000-8000-{i:012d}", "resourceVersion": str(1000 + i),
        "creationTimestamp": "2024-05-01T10:00:00Z",
        "labels": {"app": f"web-{i % 50}", "tier": "frontend", "pod-template-hash": f"{i % 9973:05x}",
                   "team": f"team-{i % 7}"},
        "annotations": {"kubectl.kubernetes.io/restartedAt": "2024-05-01T09:59:00Z",
                        "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"web-{i // 10:05d}",
                             "uid": f"{i:08d}-rs", "controller": True, "blockOwnerDeletion": True}],
    }
    if with_managed_fields:
        meta["managedFields"] = _managed_fields(i)
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": meta,
        "spec": {
            "containers": [_container(i, "app", 8080), _container(i, "sidecar", 8081)],
            "volumes": [{"name": "config", "configMap": {"name": f"web-{i % 50}-config", "defaultMode": 420}},
                        {"name": "data", "emptyDir": {}},
                        {"name": f"kube-api-access-{i % 100000:05d}", "projected": {"defaultMode": 420, "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "serviceAccount": "default",
            "nodeName": f"node-{i % 40:03d}", "securityContext": {"runAsUser": 1000, "fsGroup": 2000},
            "schedulerName": "default-scheduler", "priority": 0, "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
        },
        "status": {
            "phase": "Running", "hostIP": f"10.1.{i % 40}.{i % 250}", "podIP": f"10.2.{i // 250 % 250}.{i % 250}",
            "podIPs": [{"ip": f"10.2.{i // 250 % 250}.{i % 250}"}], "startTime": "2024-05-01T10:00:01Z",
            "qosClass": "Burstable",
            "conditions": [{"type": t, "status": "True", "lastProbeTime": None,
                            "lastTransitionTime": "2024-05-01T10:00:04Z"}
                           for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "containerStatuses": [{"name": n, "ready": True, "restartCount": 0, "started": True,
                                   "image": f"registry.example.com/team-{i % 7}/{n}:1.{i % 13}.{i % 5}",
                                   "imageID": f"registry.example.com/team-{i % 7}/{n}@sha256:{(i * 7919) % (1 << 64):064x}",
                                   "containerID": f"containerd://{(i * 104729) % (1 << 64):064x}",
                                   "state": {"running": {"startedAt": "2024-05-01T10:00:03Z"}},
                                   "lastState": {}} for n in ("app", "sidecar")],
        },
    }
