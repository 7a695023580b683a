"""kinrun started the way a pod starts it: no kubeconfig, only a service account.

Each test makes a ServiceAccount in its own namespace, binds it a Role with exactly what the
config needs, mints its token with the TokenRequest API, and lays token, CA and namespace out
as kubelet mounts them (``/var/run/secrets/kubernetes.io/serviceaccount``) in a temp directory
named by ``KINRUN_SERVICEACCOUNT_DIR``. ``KUBERNETES_SERVICE_HOST``/``_PORT`` point at the
envtest kube-apiserver, whose self-signed serving chain (``certs/apiserver.crt``: the leaf,
then its self-signed CA; SANs include 127.0.0.1) is the cluster CA, so TLS is verified as in a
pod. ``KUBECONFIG`` is empty and ``HOME`` has no ``~/.kube/config``: the token is the only
credential kinrun can find.
"""

from __future__ import annotations

import os
import subprocess
import urllib.parse
from pathlib import Path

from kinrun.testing.envtest import EnvtestServer

from e2e.harness import KINRUN, ROOT, WAIT, KinrunProcess
from .rawkube import RawKube

POD_LOGGER = "examples/configs/pod-logger.yaml"
SA_NAME = "kinrun"
TOKEN_SECONDS = 3600


def created(kube: RawKube, path: str, body: dict) -> dict:
    """POST ``body`` to ``path`` as the admin; the created object (asserts 201)."""
    resp = kube.request("POST", path, body)
    assert resp.status == 201, f"POST {path}: {resp}"
    return resp.body


def pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def mint_service_account_token(kube: RawKube, ns: str, rules: list[dict]) -> str:
    """A ServiceAccount ``kinrun`` in ``ns`` bound to a Role with ``rules``; its bearer token
    from the TokenRequest API (audience: the server's own, valid TOKEN_SECONDS)."""
    created(kube, f"/api/v1/namespaces/{ns}/serviceaccounts",
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SA_NAME}})
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}"
    created(kube, f"{rbac}/roles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                                    "metadata": {"name": SA_NAME}, "rules": rules})
    created(kube, f"{rbac}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": SA_NAME},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": SA_NAME},
        "subjects": [{"kind": "ServiceAccount", "name": SA_NAME, "namespace": ns}]})
    request = created(kube, f"/api/v1/namespaces/{ns}/serviceaccounts/{SA_NAME}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": TOKEN_SECONDS}})
    token = request["status"]["token"]
    assert token.count(".") == 2, f"not a JWT: {request}"
    return token


def service_account_dir(tmp_path: Path, ns: str, *, token: str | None,
                        ca_pem: str) -> Path:
    """A directory laid out like kubelet's service account mount (no token file if None)."""
    sa = tmp_path / "serviceaccount"
    sa.mkdir()
    (sa / "ca.crt").write_text(ca_pem)
    (sa / "namespace").write_text(ns)
    if token is not None:
        (sa / "token").write_text(token)
    return sa


def pod_env(server_url: str, sa: Path, home: Path) -> dict[str, str]:
    """The environment of a container in a pod: service host/port, nothing kubeconfig-ish."""
    url = urllib.parse.urlsplit(server_url)
    home.mkdir(exist_ok=True)
    return {"KUBERNETES_SERVICE_HOST": str(url.hostname), "KUBERNETES_SERVICE_PORT": str(url.port),
            "KINRUN_SERVICEACCOUNT_DIR": str(sa), "KUBECONFIG": "", "HOME": str(home)}


def cluster_ca(server: EnvtestServer) -> str:
    """The envtest server's serving chain, used as the cluster CA (its root is self-signed)."""
    assert server.work_dir is not None
    return (server.work_dir / "certs" / "apiserver.crt").read_text()


def test_in_cluster_start_syncs_reconciles_and_stops_on_sigterm(
        envtest_server: EnvtestServer, envtest_raw: RawKube, envtest_namespace: str,
        tmp_path: Path) -> None:
    """With only a minted service account token (list/watch pods), kinrun syncs, reconciles
    adds and deletes, and exits 0 on SIGTERM."""
    ns = envtest_namespace
    pods = f"/api/v1/namespaces/{ns}/pods"
    token = mint_service_account_token(envtest_raw, ns, [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}])
    created(envtest_raw, pods, pod("before"))
    sa = service_account_dir(tmp_path, ns, token=token, ca_pem=cluster_ca(envtest_server))

    proc = KinrunProcess([POD_LOGGER, "--namespace", ns],
                         env=pod_env(envtest_server.url, sa, tmp_path / "home"))
    try:
        proc.wait_for(rf"API server {envtest_server.url}/?$")
        proc.wait_for(r"informer pods synced: 1 ")
        proc.wait_for(r"Sync/Add/Update for Pod before$")
        created(envtest_raw, pods, pod("after"))
        proc.wait_for(r"Sync/Add/Update for Pod after$")
        resp = envtest_raw.request("DELETE", f"{pods}/after", {"gracePeriodSeconds": 0})
        assert resp.status == 200, resp
        proc.wait_for(rf"Pod {ns}/after does not exist anymore$")
        assert proc.stop() == 0, proc.log()
    finally:
        proc.kill()
    assert proc.count(r"(?i)forbidden|unauthorized|certificate verify failed") == 0, proc.log()


def test_in_cluster_without_a_token_is_one_line_no_cluster_config(
        envtest_server: EnvtestServer, tmp_path: Path) -> None:
    """Service host/port set but no token file: exit 2 with the one-line "no cluster config"
    error naming the missing token."""
    sa = service_account_dir(tmp_path, "default", token=None, ca_pem=cluster_ca(envtest_server))
    env = dict(pod_env(envtest_server.url, sa, tmp_path / "home"), PYTHONUNBUFFERED="1")
    done = subprocess.run([*KINRUN, POD_LOGGER], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=WAIT, check=False)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("kinrun: no cluster config"), lines[0]
    assert f"no service account token at {sa / 'token'}" in lines[0], lines[0]

