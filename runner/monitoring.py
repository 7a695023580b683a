"""The monitoring objects of a deployed kinrun: ServiceMonitor, PrometheusRule, NetworkPolicy.

``kinrun manifests --with monitoring`` writes a ServiceMonitor that scrapes the metrics
Service, and a PrometheusRule whose alerts watch what a controller's operator must act on;
``--with network-policy`` a NetworkPolicy that admits the metrics port only from namespaces
labelled ``metrics: enabled`` (kubebuilder's ``config/network-policy`` convention). The first
two are ``monitoring.coreos.com/v1`` objects of the Prometheus Operator: a cluster without its
CRDs refuses them, which is why they are opt-in (as kubebuilder leaves
``config/prometheus`` commented out).

The alerts, on the metrics ``kinrun.metrics`` exports (controller-runtime's names where it
has them), each scoped to this deployment's Service and namespace:

=============================  ==============================================================
KinrunReconcileErrors          more than 10% of a controller's reconciles fail, 15 minutes
KinrunWorkqueueGrowing         a queue that only grows: depth above 0 and rising for 30 min
KinrunWorkerStuck              one reconcile running for more than 10 minutes
KinrunNoLeader                 (leaderElection) no replica holds the Lease for 5 minutes
KinrunConfigReloadFailed       the last hot reload failed (the old config keeps running)
KinrunDown                     no replica scraped for 5 minutes
=============================  ==============================================================

Pure: each function returns plain dicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

MONITORING_API = "monitoring.coreos.com/v1"
"""The Prometheus Operator's API group and version (ServiceMonitor, PrometheusRule)."""
SCRAPE_INTERVAL = "30s"
"""How often the ServiceMonitor scrapes (the Prometheus Operator's default)."""
SA_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
"""Where a pod's ServiceAccount token is mounted (Prometheus presents its own)."""
METRICS_NAMESPACE_LABEL = {"metrics": "enabled"}
"""Namespaces whose pods may reach the metrics port under the NetworkPolicy."""


def _meta(name: str, namespace: str, labels: Mapping[str, str]) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": dict(labels)}


def service_monitor(name: str, namespace: str, labels: Mapping[str, str], *,
                    secure: bool = False) -> dict[str, Any]:
    """A ServiceMonitor ``name`` scraping the ``metrics`` port of the Service labelled
    ``labels`` (``kinrun.manifests.metrics_service``) in ``namespace``; ``secure``: over
    HTTPS with Prometheus' own ServiceAccount token (bind it to ``<name>-metrics-reader``),
    the self-signed certificate not verified (kubebuilder's default without cert-manager)."""
    endpoint: dict[str, Any] = {"port": "metrics", "path": "/metrics", "interval": SCRAPE_INTERVAL}
    if secure:
        endpoint.update(scheme="https", bearerTokenFile=SA_TOKEN,
                        tlsConfig={"insecureSkipVerify": True})
    return {"apiVersion": MONITORING_API, "kind": "ServiceMonitor",
            "metadata": _meta(name, namespace, labels),
            "spec": {"selector": {"matchLabels": dict(labels)},
                     "namespaceSelector": {"matchNames": [namespace]},
                     "endpoints": [endpoint]}}


def prometheus_rule(name: str, namespace: str, labels: Mapping[str, str], service: str, *,
                    leader_election: bool) -> dict[str, Any]:
    """A PrometheusRule ``name`` with the alerts of the module docstring for the targets of
    Service ``service`` in ``namespace`` (the labels a ServiceMonitor's targets carry)."""
    sel = f'namespace="{namespace}",service="{service}"'
    rules = [
        _alert("KinrunReconcileErrors",
               f"sum by (controller) (rate(controller_runtime_reconcile_errors_total{{{sel}}}[5m]))"
               f" / sum by (controller) (rate(controller_runtime_reconcile_total{{{sel}}}[5m]))"
               " > 0.1", "15m", "warning",
               "Controller {{ $labels.controller }} fails more than 10% of its reconciles",
               "Its log has the 'will retry' and 'failed permanently' lines with the cause."),
        _alert("KinrunWorkqueueGrowing",
               f"min_over_time(workqueue_depth{{{sel}}}[30m]) > 0 and "
               f"deriv(workqueue_depth{{{sel}}}[30m]) > 0", "30m", "warning",
               "Workqueue {{ $labels.name }} only grows",
               "The workers cannot keep up, or are blocked: compare workqueue_adds_total "
               "with controller_runtime_reconcile_total, and check KinrunWorkerStuck."),
        _alert("KinrunWorkerStuck",
               f"workqueue_longest_running_processor_seconds{{{sel}}} > 600", "5m", "warning",
               "A reconcile of {{ $labels.name }} has run for more than 10 minutes",
               "A hook or request that never returns; /healthz fails once it passes the "
               "configured bound."),
        _alert("KinrunConfigReloadFailed",
               f"kinrun_config_last_reload_successful{{{sel}}} == 0", "5m", "warning",
               "The last configuration reload failed",
               "The previous configuration keeps running; the log names the file and line."),
        _alert("KinrunDown", f'absent(up{{{sel}}} == 1)', "5m", "critical",
               "No kinrun replica of {service} is scraped".replace("{service}", service),
               "Check the Deployment's pods and their /readyz."),
    ]
    if leader_election:
        rules.insert(3, _alert(
            "KinrunNoLeader", f"max(leader_election_master_status{{{sel}}}) < 1", "5m",
            "critical", "No replica holds the leader Lease",
            "Nothing reconciles: check the Lease, the replicas' logs and their RBAC."))
    return {"apiVersion": MONITORING_API, "kind": "PrometheusRule",
            "metadata": _meta(name, namespace, labels),
            "spec": {"groups": [{"name": f"{name}.rules", "rules": rules}]}}


def _alert(name: str, expr: str, for_: str, severity: str, summary: str,
           description: str) -> dict[str, Any]:
    return {"alert": name, "expr": expr, "for": for_, "labels": {"severity": severity},
            "annotations": {"summary": summary, "description": description}}


def network_policy(name: str, namespace: str, labels: Mapping[str, str],
                   pod_labels: Mapping[str, str], metrics_port: int,
                   open_ports: Sequence[int] = ()) -> dict[str, Any]:
    """A NetworkPolicy ``name`` admitting TCP ``metrics_port`` of the pods labelled
    ``pod_labels`` from namespaces labelled :data:`METRICS_NAMESPACE_LABEL` only, and TCP
    ``open_ports`` from anywhere (the admission webhook port: the API server is no pod a
    selector can name)."""
    ingress: list[dict[str, Any]] = [{"from": [{"namespaceSelector": {
        "matchLabels": dict(METRICS_NAMESPACE_LABEL)}}],
        "ports": [{"port": metrics_port, "protocol": "TCP"}]}]
    if open_ports:
        ingress.append({"ports": [{"port": p, "protocol": "TCP"} for p in open_ports]})
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": _meta(name, namespace, labels),
            "spec": {"podSelector": {"matchLabels": dict(pod_labels)},
                     "policyTypes": ["Ingress"], "ingress": ingress}}
