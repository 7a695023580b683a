"""The RBAC of ``kinrun rbac`` on the real kube-apiserver: enough, and nothing more.

For each example config (and pod-logger with leader election, for the Lease): a fresh
namespace, a ServiceAccount in it, the generated RBAC bound to it, a token minted for it
(TokenRequest) and a kubeconfig with that token. kinrun runs under that identity through the
example's end-to-end flow (``tests/e2e/test_examples.py``, reused as is: every effect it
checks happened) and its log holds no 403/forbidden.

Minimality: for every single permission (one verb on one resource in one scope) the same
flow runs with the RBAC lacking just that one, and kinrun must log a 403 from the API server
(a real run, one kinrun process per permission, stopped as soon as the 403 appears). Before
each run a SubjectAccessReview confirms the server sees exactly the intended grants.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e import test_children_pruning as children
from e2e import test_examples as flows
from e2e import test_sample_controller as sample
from e2e.conftest import Cluster
from e2e.harness import ROOT, KinrunProcess
from envtest.rawkube import RawKube
from kinrun.config import load
from kinrun.kube import Client
from kinrun.plan import plan
from kinrun.rbac import CLUSTER, Permission, RbacNeeds, rbac_needs, rbac_objects
from kinrun.testing.envtest import EnvtestServer, unique_namespace_name

FORBIDDEN = r"(?i)\b403\b|forbidden"
"""What a refused request leaves in kinrun's log (ApiError: "403 Forbidden: ...")."""

LEADER_CONFIG = "pod-logger-leader.yaml"


def _leader_config(tmp: Path, namespace: str) -> Path:
    """pod-logger with leader election on a Lease in ``namespace`` (retry period 1 s)."""
    data = yaml.safe_load((ROOT / "examples/configs/pod-logger.yaml").read_text())
    data["leaderElection"] = {"leaseName": "pod-logger", "namespace": namespace,
                              "leaseDuration": "4s", "renewDeadline": "3s", "retryPeriod": "1s"}
    path = tmp / f"{namespace}-{LEADER_CONFIG}"
    path.write_text(yaml.safe_dump(data))
    return path


EXAMPLES: dict[str, tuple[str, Callable[[Cluster], None]]] = {
    "pod-logger": ("examples/configs/pod-logger.yaml",
                   flows.test_pod_logger_logs_initial_list_add_update_and_delete),
    "configmap-children": ("examples/configs/configmap-children.yaml",
                           flows.test_configmap_children_applies_owned_child_and_deletes_it_with_parent),
    "pods-by-node": ("examples/configs/pods-by-node.yaml",
                     flows.test_pods_by_node_hook_plugin_uses_custom_index),
    "secondary-watch": ("examples/configs/secondary-watch.yaml",
                        flows.test_secondary_watch_maps_configmaps_to_their_deployment),
    "pod-logger-leader": ("examples/configs/pod-logger.yaml",
                          flows.test_pod_logger_logs_initial_list_add_update_and_delete),
    "children-pruning": (children.CONFIG,
                         children.test_children_are_applied_pruned_and_others_survive),
    # a CRD kind: its plural and scope come from the config's crds: file, no cluster asked
    "sample-controller": ("examples/configs/sample-controller.yaml",
                          sample.test_foo_owns_its_deployment_and_reports_its_available_replicas),
}


class Identity:
    """A ServiceAccount in a fresh namespace with some RBAC, and a kubeconfig for it."""

    def __init__(self, server: EnvtestServer, admin: RawKube, tmp: Path, label: str) -> None:
        self.server, self.admin = server, admin
        self.namespace = unique_namespace_name(label, prefix="rbac")
        server.create_namespace(self.namespace)
        self.name = self.namespace  # unique cluster-wide too (ClusterRole names)
        self.objects: list[dict[str, Any]] = []
        self._post(f"/api/v1/namespaces/{self.namespace}/serviceaccounts",
                   {"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": self.name}})
        token = self._post(
            f"/api/v1/namespaces/{self.namespace}/serviceaccounts/{self.name}/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
             "spec": {"expirationSeconds": 3600}})["status"]["token"]
        self.kubeconfig = tmp / f"{self.namespace}.kubeconfig"
        self.kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "sa",
            "clusters": [{"name": "envtest", "cluster": {"server": server.url,
                                                         "insecure-skip-tls-verify": True}}],
            "users": [{"name": "sa", "user": {"token": token}}],
            "contexts": [{"name": "sa", "context": {"cluster": "envtest", "user": "sa"}}]}))

    @property
    def user(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.name}"

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        resp = self.admin.request("POST", path, body)
        assert resp.status in (200, 201), f"POST {path}: {resp}"
        return resp.body

    def grant(self, objects: list[dict[str, Any]]) -> None:
        """Create the Roles/ClusterRole and bindings ``objects`` (as the admin)."""
        for obj in objects:
            self._post(_collection(obj), obj)
            self.objects.append(obj)

    def allowed(self, perm: Permission) -> bool:
        """The server's SubjectAccessReview answer for this identity and ``perm``."""
        resource, _, sub = perm.resource.partition("/")
        attrs = {"verb": perm.verb, "group": perm.api_group, "resource": resource,
                 "subresource": sub, "name": perm.resource_names[0] if perm.resource_names
                 else ""}
        if perm.scope != CLUSTER:
            attrs["namespace"] = perm.scope
        review = self._post("/apis/authorization.k8s.io/v1/subjectaccessreviews",
                            {"apiVersion": "authorization.k8s.io/v1",
                             "kind": "SubjectAccessReview",
                             "spec": {"user": self.user, "resourceAttributes": attrs}})
        return bool(review["status"].get("allowed"))

    def wait_effective(self, granted: list[Permission], denied: list[Permission]) -> None:
        """Until the authorizer's caches show ``granted`` allowed and ``denied`` not
        (RBAC objects reach the authorizer through its informers: milliseconds). Bounded."""
        done = threading.Event()
        for _ in range(50):
            if all(self.allowed(p) for p in granted) and not any(self.allowed(p)
                                                                for p in denied):
                return
            done.wait(0.2)
        raise AssertionError(f"RBAC not effective for {self.user}: granted {granted}, "
                             f"denied {denied}")

    def close(self) -> None:
        """Delete the cluster-scoped objects (namespaces are never deleted here)."""
        for obj in self.objects:
            if "namespace" not in obj["metadata"]:
                self.admin.request("DELETE", f"{_collection(obj)}/{obj['metadata']['name']}")


def _collection(obj: dict[str, Any]) -> str:
    plural = {"Role": "roles", "RoleBinding": "rolebindings", "ClusterRole": "clusterroles",
              "ClusterRoleBinding": "clusterrolebindings"}[obj["kind"]]
    ns = obj["metadata"].get("namespace")
    return f"/apis/rbac.authorization.k8s.io/v1/{'namespaces/' + ns + '/' if ns else ''}{plural}"


class IdentityCluster(Cluster):
    """The e2e ``Cluster`` (envtest backend) whose kinrun runs as ``identity``; the test's own
    client stays the admin. ``config`` replaces the config path a flow asks for."""

    def __init__(self, server: EnvtestServer, identity: Identity, tmp: Path,
                 config: str | None = None, extra_args: tuple[str, ...] = ()) -> None:
        self.backend, self.tmp_path, self.server = "envtest", tmp, server
        self.extra_args = extra_args
        self.processes: list[KinrunProcess] = []
        self.namespace, self.identity, self.config = identity.namespace, identity, config
        self.client = Client.from_config(kubeconfig=server.kubeconfig_path)
        self.started = threading.Event()

    def run(self, config: str, *, seeds=(), args=()) -> KinrunProcess:  # noqa: ANN001
        assert self.client is not None
        for obj in seeds:
            self.client.create(self.obj(obj))
        proc = KinrunProcess([self.config or config, "--kubeconfig",
                              str(self.identity.kubeconfig), "--namespace", self.namespace,
                              *args, *self.extra_args])
        self.processes.append(proc)
        self.started.set()
        return proc


def _needs(config: str, namespace: str) -> RbacNeeds:
    return rbac_needs(plan(load(config).with_namespace(namespace)))


def _setup(example: str, server: EnvtestServer, admin: RawKube, tmp: Path
           ) -> tuple[Identity, str]:
    identity = Identity(server, admin, tmp, example)
    config = EXAMPLES[example][0]
    if example == "pod-logger-leader":
        config = str(_leader_config(tmp, identity.namespace))
    return identity, config


def _cli_rbac(config: str, identity: Identity) -> list[dict[str, Any]]:
    """``kinrun rbac CONFIG --namespace NS --name N`` as a user runs it: parsed output."""
    out = subprocess.run([sys.executable, "-m", "kinrun.cli", "rbac", config, "--namespace",
                          identity.namespace, "--name", identity.name], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


@pytest.fixture(scope="module")
def admin(envtest_server: EnvtestServer) -> RawKube:
    return RawKube(envtest_server.kubeconfig_path, "envtest")


@pytest.mark.timeout(240)
@pytest.mark.parametrize("example", list(EXAMPLES))
def test_example_runs_under_generated_rbac_without_forbidden(
        example: str, envtest_server: EnvtestServer, admin: RawKube, tmp_path: Path) -> None:
    """Under exactly the RBAC `kinrun rbac` prints, the example's e2e flow passes with no 403."""
    identity, config = _setup(example, envtest_server, admin, tmp_path)
    cluster = IdentityCluster(envtest_server, identity, tmp_path, config)
    try:
        identity.grant(_cli_rbac(config, identity))
        needs = _needs(config, identity.namespace)
        identity.wait_effective(list(needs.permissions), [])
        EXAMPLES[example][1](cluster)
        log = "\n".join(p.log() for p in cluster.processes)
        assert re.search(FORBIDDEN, log) is None, log
        if example == "pod-logger-leader":
            assert "became leader" in log and "released lease" in log, log
    finally:
        cluster.close()
        identity.close()


def _minimality_cases() -> list[Any]:
    """(example, permission) for every permission of every example (computed for a
    placeholder namespace, which each run replaces by its own)."""
    cases = []
    for example, (config, _flow) in EXAMPLES.items():
        path = config
        if example == "pod-logger-leader":
            path = str(_leader_config(Path(tempfile.gettempdir()), "placeholder-ns"))
        for perm in _needs(path, "placeholder-ns").permissions:
            cases.append(pytest.param(example, perm, id=f"{example}-{perm}".replace(" ", "-")))
    return cases


def _in_run_namespace(perm: Permission, namespace: str) -> Permission:
    scope = namespace if perm.scope == "placeholder-ns" else perm.scope
    return Permission(scope, perm.api_group, perm.resource, perm.verb, perm.resource_names)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("example", "removed"), _minimality_cases())
def test_each_generated_permission_is_needed(example: str, removed: Permission,
                                             envtest_server: EnvtestServer, admin: RawKube,
                                             tmp_path: Path) -> None:
    """Without this one permission, the example's flow makes kinrun get a 403."""
    identity, config = _setup(example, envtest_server, admin, tmp_path)
    # a refused Lease create is logged at DEBUG only (kinrun.leader_election: it reads as
    # "someone else was faster"), so the Lease runs log at debug
    debug = ("--log-level", "debug") if example == "pod-logger-leader" else ()
    cluster = IdentityCluster(envtest_server, identity, tmp_path, config, debug)
    flow = threading.Thread(target=_quietly, args=(EXAMPLES[example][1], cluster), daemon=True)
    try:
        needs = _needs(config, identity.namespace)
        removed = _in_run_namespace(removed, identity.namespace)
        assert removed in needs.permissions
        reduced = needs.without(removed)
        identity.grant(rbac_objects(reduced, name=identity.name,
                                    service_account=identity.name,
                                    service_account_namespace=identity.namespace))
        identity.wait_effective(list(reduced.permissions), [removed])
        flow.start()
        assert cluster.started.wait(60), "the flow never started kinrun"
        proc = cluster.processes[0]
        try:
            proc.wait_for(FORBIDDEN, timeout=60)
        except AssertionError as exc:
            pytest.fail(f"without {removed} kinrun got no 403: {exc}")
    finally:
        cluster.close()
        flow.join(5)
        identity.close()


def _quietly(flow: Callable[[Cluster], None], cluster: Cluster) -> None:
    """Run a flow on a thread; its failure (kinrun killed once the 403 came) is expected."""
    try:
        flow(cluster)
    except BaseException:  # noqa: BLE001 - the test judges by kinrun's log
        pass
