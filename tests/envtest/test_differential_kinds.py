"""Differential tests of per-kind validation of built-in kinds
(kinrun.testing.apiserver.kind_validation): the mistakes a controller's manifests most often
make get the same code, reason and causes (field, reason and message) from kube-apiserver 1.20
and the embedded server, and a valid object of each kind is accepted by both."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Pair, Target
from .test_differential import APPLY

IMAGE = {"name": "c", "image": "nginx"}


def answer(resp: Any) -> tuple[int, Any, list[tuple[Any, Any, Any]]]:
    body = resp.body if isinstance(resp.body, dict) else {}
    causes = (body.get("details") or {}).get("causes") or []
    return resp.status, body.get("reason"), sorted(
        (c.get("field"), c.get("reason"), c.get("message")) for c in causes)


def pod(spec: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "api/v1/namespaces/NS/pods", {"apiVersion": "v1", "kind": "Pod",
                                         "metadata": {"name": "p"}, "spec": spec}


def workload(kind: str, selector: Any, labels: dict[str, str],
             containers: list[Any] | None = None) -> tuple[str, dict[str, Any]]:
    spec: dict[str, Any] = {"selector": selector, "template": {
        "metadata": {"labels": labels},
        "spec": {"containers": [IMAGE] if containers is None else containers}}}
    if kind == "StatefulSet":
        spec["serviceName"] = "s"
    return f"apis/apps/v1/namespaces/NS/{kind.lower()}s", {
        "apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w"}, "spec": spec}


def core(kind: str, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return f"api/v1/namespaces/NS/{kind.lower()}s", {"apiVersion": "v1", "kind": kind,
                                                     "metadata": {"name": "x"}, **body}


def job(spec: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "apis/batch/v1/namespaces/NS/jobs", {"apiVersion": "batch/v1", "kind": "Job",
                                                "metadata": {"name": "j"},
                                                "spec": {"template": {"spec": spec}}}


def secret(kind: str, data: dict[str, str]) -> tuple[str, dict[str, Any]]:
    return core("Secret", {"type": kind, "data": data})


CASES = {
    "pod-no-containers": pod({"containers": []}),
    "pod-no-image": pod({"containers": [{"name": "c"}]}),
    "pod-bad-container-name": pod({"containers": [{"name": "C_x", "image": "x"}]}),
    "pod-duplicate-names": pod({"initContainers": [IMAGE], "containers": [IMAGE]}),
    "pod-valid": pod({"containers": [IMAGE]}),
    "deployment-selector-mismatch": workload("Deployment", {"matchLabels": {"app": "a"}},
                                             {"app": "b", "z": "1"}),
    "deployment-empty-selector": workload("Deployment", {}, {"app": "b"}),
    "deployment-expressions": workload("Deployment", {"matchExpressions": [
        {"key": "app", "operator": "In", "values": ["a"]}]}, {"app": "b"}),
    "deployment-no-containers": workload("Deployment", {"matchLabels": {"app": "a"}},
                                         {"app": "a"}, []),
    "deployment-valid": workload("Deployment", {"matchLabels": {"app": "a"}}, {"app": "a"}),
    "replicaset-empty-selector": workload("ReplicaSet", {}, {"app": "b"}),
    "daemonset-selector-mismatch": workload("DaemonSet", {"matchLabels": {"app": "a"}}, {}),
    "daemonset-template-without-labels": ("apis/apps/v1/namespaces/NS/daemonsets", {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "w"},
        "spec": {"selector": {"matchLabels": {"app": "a"}},
                 "template": {"spec": {"containers": [IMAGE]}}}}),
    "statefulset-empty-selector": workload("StatefulSet", {}, {"app": "b"}),
    "configmap-bad-keys": core("ConfigMap", {"data": {"a b": "x", "..x": "y", "ok": "z"},
                                             "binaryData": {"?": "eA=="}}),
    "secret-bad-key": core("Secret", {"data": {"a/b": "eA=="}}),
    "service-port-zero": core("Service", {"spec": {"ports": [{"port": 0}]}}),
    "service-port-names": core("Service", {"spec": {"ports": [
        {"port": 80, "name": "A_b"}, {"port": 81}, {"port": 82, "name": "A_b"}]}}),
    "service-valid": core("Service", {"spec": {"ports": [{"port": 80, "targetPort": 8080}]}}),
    "service-target-port-zero-valid": core("Service", {"spec": {"ports": [
        {"name": "http", "protocol": "TCP", "port": 80, "targetPort": 0, "nodePort": 0}]}}),
    "statefulset-unvalidated-template-valid": workload("StatefulSet", {"matchLabels": {"a": "b"}},
                                                       {"a": "b"}, [{"name": "C"}, {"name": "C"}]),
    "deployment-invalid-selector": workload("Deployment", {"matchExpressions": [
        {"key": "app", "operator": "In", "values": []}]}, {"app": "b"}),
    "service-target-port-names": core("Service", {"spec": {"ports": [
        {"name": f"p{i}", "port": 80 + i, "targetPort": target} for i, target in enumerate(
            ["HTTP_port", "a--b", "abcdefghijklmnop", "123", "-ab", "ab-", "Http", "-A_-",
             "ABCDEFGHIJKLMNOP--"])]}}),
    "service-target-port-name-valid": core("Service", {"spec": {"ports": [
        {"name": "a", "port": 80, "targetPort": "http"},
        {"name": "b", "port": 81, "targetPort": "a-b1"},
        {"name": "c", "port": 82, "targetPort": "abcdefghijklmno"}]}}),
    "pod-image-whitespace": pod({"containers": [{"name": "a", "image": " busybox"},
                                                {"name": "b", "image": "busybox\t"}],
                                 "initContainers": [{"name": "i", "image": "x "}]}),
    "pod-image-blank": pod({"containers": [{"name": "a", "image": "  "}]}),
    "deployment-image-blank-valid": workload("Deployment", {"matchLabels": {"app": "a"}},
                                             {"app": "a"}, [{"name": "c", "image": " "}]),
    "deployment-image-whitespace-valid": workload("Deployment", {"matchLabels": {"app": "a"}},
                                                  {"app": "a"}, [{"name": "c", "image": " x"}]),
    "job-image-whitespace-valid": job({"restartPolicy": "Never",
                                       "containers": [{"name": "c", "image": "x "}]}),
    "pod-restart-sometimes": pod({"restartPolicy": "Sometimes", "containers": [IMAGE]}),
    "pod-restart-never-valid": pod({"restartPolicy": "Never", "containers": [IMAGE]}),
    "service-no-ports": core("Service", {"spec": {}}),
    "service-clusterip-no-ports": core("Service", {"spec": {"type": "ClusterIP",
                                                            "selector": {"a": "b"}}}),
    "service-nodeport-no-ports": core("Service", {"spec": {"type": "NodePort"}}),
    "service-headless-no-ports-valid": core("Service", {"spec": {"clusterIP": "None"}}),
    "service-headless-cluster-ip-no-ports-valid": core("Service", {"spec": {
        "type": "ClusterIP", "clusterIP": "None", "selector": {"a": "b"}}}),
    "service-load-balancer-no-ports": core("Service", {"spec": {"type": "LoadBalancer"}}),
    "service-external-name-no-ports-valid": core("Service", {"spec": {
        "type": "ExternalName", "externalName": "example.com"}}),
    "job-restart-always": job({"restartPolicy": "Always", "containers": [IMAGE]}),
    "job-restart-absent": job({"containers": [IMAGE]}),
    "job-restart-sometimes": job({"restartPolicy": "Sometimes", "containers": [IMAGE]}),
    "job-restart-never-valid": job({"restartPolicy": "Never", "containers": [IMAGE]}),
    "job-restart-on-failure-valid": job({"restartPolicy": "OnFailure", "containers": [IMAGE]}),
    "secret-dockerconfigjson-no-key": secret("kubernetes.io/dockerconfigjson", {"a": "eA=="}),
    "secret-dockerconfigjson-not-json": secret("kubernetes.io/dockerconfigjson",
                                               {".dockerconfigjson": "eA=="}),
    "secret-dockerconfigjson-valid": secret("kubernetes.io/dockerconfigjson",
                                            {".dockerconfigjson": "eyJhdXRocyI6e319"}),
    "secret-dockerconfigjson-empty": secret("kubernetes.io/dockerconfigjson",
                                            {".dockerconfigjson": ""}),
    "secret-tls-string-data-valid": core("Secret", {"type": "kubernetes.io/tls", "stringData": {
        "tls.crt": "x", "tls.key": "y"}}),
    "secret-dockerconfigjson-array": secret("kubernetes.io/dockerconfigjson",
                                            {".dockerconfigjson": "W10="}),
    "secret-dockerconfigjson-truncated": secret("kubernetes.io/dockerconfigjson",
                                                {".dockerconfigjson": "eyJhdXRocyI6"}),
    "secret-dockerconfigjson-syntax": core("Secret", {
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": '{"auths" 1}'}}),
    "secret-dockercfg-unquoted-key": secret("kubernetes.io/dockercfg", {".dockercfg": "e2E6MX0="}),
    "secret-dockercfg-extra-data": secret("kubernetes.io/dockercfg", {".dockercfg": "e30geA=="}),
    "secret-dockercfg-string": secret("kubernetes.io/dockercfg", {".dockercfg": "InMi"}),
    "secret-dockercfg-not-json": secret("kubernetes.io/dockercfg", {".dockercfg": "IHg="}),
    "secret-dockercfg-valid": secret("kubernetes.io/dockercfg", {".dockercfg": "e30="}),
    "secret-dockercfg-no-key": secret("kubernetes.io/dockercfg", {}),
    "secret-basic-auth-no-keys": secret("kubernetes.io/basic-auth", {"a": "eA=="}),
    "secret-basic-auth-username-valid": secret("kubernetes.io/basic-auth", {"username": "eA=="}),
    "secret-basic-auth-password-valid": secret("kubernetes.io/basic-auth", {"password": "eA=="}),
    "secret-ssh-auth-no-key": secret("kubernetes.io/ssh-auth", {"a": "eA=="}),
    "secret-ssh-auth-valid": secret("kubernetes.io/ssh-auth", {"ssh-privatekey": "eA=="}),
    "secret-tls-no-keys": secret("kubernetes.io/tls", {}),
    "secret-tls-no-key": secret("kubernetes.io/tls", {"tls.crt": "eA=="}),
    "secret-tls-valid": secret("kubernetes.io/tls", {"tls.crt": "eA==", "tls.key": "eA=="}),
    "secret-service-account-token-no-annotation": secret(
        "kubernetes.io/service-account-token", {}),
    "secret-service-account-token-valid": core("Secret", {
        "metadata": {"name": "x", "annotations": {"kubernetes.io/service-account.name": "sa"}},
        "type": "kubernetes.io/service-account-token"}),
    "secret-custom-type-valid": secret("example.com/any", {}),
    "configmap-key-in-both": core("ConfigMap", {"data": {"a": "x", "b": "y"},
                                                "binaryData": {"b": "eA==", "c": "eA=="}}),
    "configmap-distinct-keys-valid": core("ConfigMap", {"data": {"a": "x"},
                                                        "binaryData": {"b": "eA=="}}),
    # values outside ASCII are quoted as Go's %q writes them (not JSON's \u escapes)
    "pod-unicode-values": pod({"restartPolicy": "Alwayś", "containers": [
        {"name": "ä", "image": " bцsybox\u00a0"}]}),
    "configmap-unicode-key": core("ConfigMap", {"data": {"ключ": "x"}}),
    "service-unicode-port-names": core("Service", {"spec": {"ports": [
        {"port": 80, "name": "пор", "targetPort": "é"}]}}),
    "secret-dockercfg-unicode": secret("kubernetes.io/dockercfg",
                                       {".dockercfg": "w6k="}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_per_kind_validation_matches(both: Pair, case: str) -> None:
    """One create per case: the same answer from both servers."""
    path, body = CASES[case]

    def scenario(t: Target) -> Any:
        return answer(t.kube.request("POST", "/" + path.replace("NS", t.ns), body))

    real, embedded = both.run(scenario)
    if case == "deployment-invalid-selector":  # its causes are not reproduced (docs)
        assert real[0] == 422 and not any("does not match" in c[2] for c in embedded[2])
        return
    assert real == embedded
    assert (real[0] == 201) is case.endswith("-valid")


RESOURCES = {
    "none": {},
    "limits-only": {"limits": {"cpu": "500m", "memory": "128Mi"}},
    "requests-only": {"requests": {"cpu": "100m"}},
    "request-below-limit": {"requests": {"cpu": "100m"}, "limits": {"cpu": "1", "memory": "1Gi"}},
    "zero-request": {"requests": {"cpu": "0"}},
}


@pytest.mark.parametrize("resources", sorted(RESOURCES))
def test_a_pod_gets_requests_from_limits_and_its_qos_class(both: Pair, resources: str) -> None:
    """A created Pod's containers request what they limit, and its status has phase Pending
    and the QoS class of its requests and limits; a Deployment's template is not defaulted."""
    container = {**IMAGE, "resources": RESOURCES[resources]}
    _, deployment = workload("Deployment", {"matchLabels": {"app": "a"}}, {"app": "a"},
                             [container])

    def scenario(t: Target) -> Any:
        made = t.kube.request("POST", f"/api/v1/namespaces/{t.ns}/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [container]}}).body
        made_deployment = t.kube.request(
            "POST", f"/apis/apps/v1/namespaces/{t.ns}/deployments", deployment).body
        template = made_deployment["spec"]["template"]["spec"]["containers"][0]
        return (made["spec"]["containers"][0].get("resources"), made["status"].get("phase"),
                made["status"].get("qosClass"), template.get("resources"))

    real, embedded = both.run(scenario)
    assert real == embedded


QUANTITIES = ["0.5", "1024Mi", "1536Mi", "2000m", "1500m", "2000", "1200", "1", "0.25", "0.5Gi",
              "100Mi", "1Ki", "0.5Ki", "0", "1000000", "128974848", "1.5", "1Gi", "250M"]


def test_quantities_are_answered_in_canonical_form(both: Pair) -> None:
    """Each quantity of a created Pod (limits, requests, an emptyDir's sizeLimit) is stored
    in kube-apiserver's canonical form (``0.5`` -> ``500m``, ``1024Mi`` -> ``1Gi``), and a
    server-side apply of the same body as written changes nothing (its managed fields and
    resourceVersion stay)."""
    def pod_with(index: int, value: Any) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{index}"}, "spec": {
            "containers": [{"name": "c", "image": "x", "resources": {
                "limits": {"memory": value}, "requests": {"cpu": value}}}],
            "volumes": [{"name": "v", "emptyDir": {"sizeLimit": value}}]}}

    def scenario(t: Target) -> Any:
        out = []
        for index, value in enumerate(QUANTITIES):
            path = f"/api/v1/namespaces/{t.ns}/pods/p{index}"
            made = t.kube.request("PATCH", path, pod_with(index, value),
                                  query={"fieldManager": "m"}, content_type=APPLY).body
            again = t.kube.request("PATCH", path, pod_with(index, value),
                                   query={"fieldManager": "m"}, content_type=APPLY).body
            assert "spec" in made, (value, made.get("message"))
            resources = made["spec"]["containers"][0]["resources"]
            out.append((value, resources["limits"]["memory"], resources["requests"]["cpu"],
                        made["spec"]["volumes"][0]["emptyDir"]["sizeLimit"],
                        again["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]))
        return out

    real, embedded = both.run(scenario)
    assert real == embedded


def test_a_service_port_target_port_defaults_to_its_port(both: Pair) -> None:
    """SetDefaults_Service: a targetPort that is absent, 0 or "" is the port."""
    def scenario(t: Target) -> Any:
        made = t.kube.request("POST", f"/api/v1/namespaces/{t.ns}/services", {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81,
                                                           "targetPort": 0},
                               {"name": "c", "port": 82, "targetPort": ""},
                               {"name": "d", "port": 83, "targetPort": "http"}]}}).body
        return [p.get("targetPort") for p in made["spec"]["ports"]]

    real, embedded = both.run(scenario)
    assert real == embedded == [80, 81, 82, "http"]


LONG = "x" * 64
METADATA_CASES = {
    "label-value-too-long": {"labels": {"a": LONG}},
    "label-value-bad-characters": {"labels": {"a": "a b"}},
    "label-value-too-long-and-bad": {"labels": {"a": "x" * 63 + "-"}},
    "label-key-name-too-long": {"labels": {"k" * 64: "v"}},
    "label-key-bad-name": {"labels": {"example.com/-a": "v"}},
    "label-key-bad-prefix": {"labels": {"Bad_Prefix/a": "v"}},
    "label-key-long-prefix": {"labels": {"a" * 254 + "/a": "v"}},
    "label-key-empty": {"labels": {"": "v"}},
    "label-key-empty-prefix": {"labels": {"/a": "v"}},
    "label-key-empty-name": {"labels": {"example.com/": "v"}},
    "label-key-two-slashes": {"labels": {"a/b/c": "v"}},
    "label-key-and-value-bad": {"labels": {"-k": "-v"}},
    "label-key-prefix-and-name-bad": {"labels": {"A_b/" + "k" * 64: "v"}},
    "label-prefixed-valid": {"labels": {"example.com/MyName": "my_value.1", "b": ""}},
    "annotation-key-bad": {"annotations": {"a b": "x"}},
    "annotation-key-two-slashes": {"annotations": {"a/b/c": "x"}},
    "annotations-too-large": {"annotations": {"a": "x" * (256 * 1024)}},
    "annotations-at-limit-valid": {"annotations": {"a": "x" * (256 * 1024 - 1)}},
    "label-value-quote-tab-unicode": {"labels": {"a": 'a"b\tc\\é'}},
    "annotation-key-upper-prefix-valid": {"annotations": {"Example.COM/Name": "any value"}},
}


@pytest.mark.parametrize("case", sorted(METADATA_CASES))
def test_metadata_label_validation_matches(both: Pair, case: str) -> None:
    """A ConfigMap with a bad label key or value (or annotation key): the same code, message
    and causes, in the same order (one label per case: Go walks a map in random order)."""
    def scenario(t: Target) -> Any:
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "m", **METADATA_CASES[case]}}
        resp = t.kube.request("POST", f"/api/v1/namespaces/{t.ns}/configmaps", body)
        got = resp.body if isinstance(resp.body, dict) else {}
        causes = (got.get("details") or {}).get("causes") or []
        return resp.status, got.get("reason"), got.get("message") if resp.status != 201 else "", [
            (c.get("field"), c.get("reason"), c.get("message")) for c in causes]

    real, embedded = both.run(scenario)
    assert real == embedded
    assert (real[0] == 201) is case.endswith("-valid")
