"""Cluster config discovery: explicit path, $KUBECONFIG, in-cluster, ~/.kube/config; one-line
errors."""

from __future__ import annotations

import datetime
import types
from pathlib import Path

import pytest
import yaml
from kubernetes.config import incluster_config

from kinrun.errors import ClusterConfigError
from kinrun.kube import Client
from kinrun.kube.kubeconfig import (SERVICE_ACCOUNT_DIR, SERVICE_ACCOUNT_DIR_ENV,
                                    in_cluster_available, load_configuration, load_in_cluster,
                                    service_account_dir)


def kubeconfig(path: Path, *, server: str = "http://127.0.0.1:1234",
               contexts: tuple[str, ...] = ("main",), token: str | None = "tok") -> Path:
    """Write a kubeconfig with one cluster/user and the given contexts (first is current)."""
    user: dict = {"token": token} if token else {}
    doc = {
        "apiVersion": "v1", "kind": "Config", "current-context": contexts[0],
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": c, "context": {"cluster": "c", "user": "u"}} for c in contexts],
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def no_home(tmp_path: Path) -> str:
    return str(tmp_path / "no-such-home-config")


def test_explicit_kubeconfig_is_loaded(tmp_path: Path) -> None:
    """An explicit path gives its server and token."""
    cfg = load_configuration(kubeconfig=str(kubeconfig(tmp_path / "kc")), environ={},
                             home_kubeconfig=no_home(tmp_path))
    assert cfg.host == "http://127.0.0.1:1234"
    assert "tok" in cfg.api_key["BearerToken"]


def test_explicit_context_is_used(tmp_path: Path) -> None:
    """A named context other than the current one is selected."""
    path = kubeconfig(tmp_path / "kc", contexts=("a", "b"))
    cfg = load_configuration(kubeconfig=str(path), context="b", environ={},
                             home_kubeconfig=no_home(tmp_path))
    assert cfg.host == "http://127.0.0.1:1234"


def test_kubeconfig_env_is_used_when_no_explicit_path(tmp_path: Path) -> None:
    """$KUBECONFIG is read when no path is given."""
    path = kubeconfig(tmp_path / "kc", server="http://10.0.0.1:6443")
    cfg = load_configuration(environ={"KUBECONFIG": str(path)},
                             home_kubeconfig=no_home(tmp_path))
    assert cfg.host == "http://10.0.0.1:6443"


def test_home_kubeconfig_is_the_last_resort(tmp_path: Path) -> None:
    """With nothing else, ~/.kube/config (injected path) is read."""
    path = kubeconfig(tmp_path / "home", server="http://10.9.9.9:6443")
    cfg = load_configuration(environ={}, home_kubeconfig=str(path))
    assert cfg.host == "http://10.9.9.9:6443"


def test_missing_explicit_kubeconfig_names_the_path(tmp_path: Path) -> None:
    """A path that does not exist is one line naming it."""
    missing = tmp_path / "nope"
    with pytest.raises(ClusterConfigError) as info:
        load_configuration(kubeconfig=str(missing), environ={}, home_kubeconfig=no_home(tmp_path))
    assert str(missing) in str(info.value) and "\n" not in str(info.value)


def test_broken_yaml_is_one_clear_line(tmp_path: Path) -> None:
    """Unparseable YAML becomes ClusterConfigError naming the file."""
    path = tmp_path / "kc"
    path.write_text("clusters: [\n  - {name: x\n")
    with pytest.raises(ClusterConfigError) as info:
        load_configuration(kubeconfig=str(path), environ={}, home_kubeconfig=no_home(tmp_path))
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_unknown_context_is_named(tmp_path: Path) -> None:
    """A context the file lacks is ClusterConfigError naming the context."""
    path = kubeconfig(tmp_path / "kc")
    with pytest.raises(ClusterConfigError) as info:
        load_configuration(kubeconfig=str(path), context="ghost", environ={},
                           home_kubeconfig=no_home(tmp_path))
    assert "ghost" in str(info.value) and "\n" not in str(info.value)


def test_nothing_available_says_what_was_tried(tmp_path: Path) -> None:
    """No source at all: one line listing kubeconfig flag, $KUBECONFIG, in-cluster, home."""
    with pytest.raises(ClusterConfigError) as info:
        load_configuration(environ={}, home_kubeconfig=no_home(tmp_path))
    text = str(info.value)
    assert "$KUBECONFIG" in text and "not in a cluster" in text and no_home(tmp_path) in text
    assert "\n" not in text


def test_kubeconfig_env_pointing_nowhere_is_an_error(tmp_path: Path) -> None:
    """$KUBECONFIG set to missing files fails instead of silently using another source."""
    home = kubeconfig(tmp_path / "home")
    with pytest.raises(ClusterConfigError, match=r"\$KUBECONFIG"):
        load_configuration(environ={"KUBECONFIG": str(tmp_path / "gone")},
                           home_kubeconfig=str(home))


def test_from_config_sizes_pool_and_sets_user_agent(tmp_path: Path) -> None:
    """Client.from_config applies pool_size and the kinrun user agent."""
    path = kubeconfig(tmp_path / "kc")
    client = Client.from_config(kubeconfig=str(path), pool_size=7, qps=5, burst=10)
    assert client.api_client.configuration.connection_pool_maxsize == 7
    assert client.api_client.rest_client.pool_manager.connection_pool_kw["maxsize"] == 7
    assert client.api_client.user_agent.startswith("kinrun/")
    assert client.rate_limiter.qps == 5 and client.rate_limiter.burst == 10
    assert client.host == "http://127.0.0.1:1234"


# -- in-cluster (client-go rest.InClusterConfig semantics) -------------------------------------

FAKE_CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def service_account(tmp_path: Path, *, token: str | None = "sa-token",
                    ca: str | None = FAKE_CA) -> Path:
    """A directory laid out like /var/run/secrets/kubernetes.io/serviceaccount (None: no file)."""
    sa = tmp_path / "serviceaccount"
    sa.mkdir(exist_ok=True)
    for name, text in (("token", token), ("ca.crt", ca), ("namespace", "default")):
        if text is not None:
            (sa / name).write_text(text)
    return sa


def pod_environ(sa: Path, host: str = "10.0.0.1", port: str = "443") -> dict[str, str]:
    """The environment kubelet gives a pod, with the service account directory overridden."""
    return {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port,
            SERVICE_ACCOUNT_DIR_ENV: str(sa)}


def test_in_cluster_uses_service_host_token_and_ca(tmp_path: Path) -> None:
    """In a pod: https://HOST:PORT, the mounted token as bearer, the mounted CA to verify."""
    sa = service_account(tmp_path)
    cfg = load_configuration(environ=pod_environ(sa), home_kubeconfig=no_home(tmp_path))
    assert cfg.host == "https://10.0.0.1:443"
    assert cfg.api_key["BearerToken"] == "bearer sa-token"
    assert cfg.ssl_ca_cert == str(sa / "ca.crt") and cfg.verify_ssl


def test_in_cluster_brackets_an_ipv6_service_host(tmp_path: Path) -> None:
    """An IPv6 KUBERNETES_SERVICE_HOST is bracketed, as net.JoinHostPort does."""
    env = pod_environ(service_account(tmp_path), host="fd00::1", port="6443")
    cfg = load_configuration(environ=env, home_kubeconfig=no_home(tmp_path))
    assert cfg.host == "https://[fd00::1]:6443"


def test_service_account_dir_defaults_to_the_kubelet_mount() -> None:
    """Unset or empty KINRUN_SERVICEACCOUNT_DIR means kubelet's mount point."""
    assert service_account_dir({}) == Path(SERVICE_ACCOUNT_DIR)
    assert service_account_dir({SERVICE_ACCOUNT_DIR_ENV: ""}) == Path(SERVICE_ACCOUNT_DIR)
    assert SERVICE_ACCOUNT_DIR == "/var/run/secrets/kubernetes.io/serviceaccount"


def test_kubeconfig_env_wins_over_in_cluster(tmp_path: Path) -> None:
    """$KUBECONFIG is taken before the service account, as controller-runtime orders them."""
    env = dict(pod_environ(service_account(tmp_path)),
               KUBECONFIG=str(kubeconfig(tmp_path / "kc", server="http://10.7.7.7:80")))
    assert load_configuration(environ=env, home_kubeconfig=no_home(tmp_path)).host == \
        "http://10.7.7.7:80"


def test_in_cluster_wins_over_home_kubeconfig(tmp_path: Path) -> None:
    """The service account is taken before ~/.kube/config."""
    home = kubeconfig(tmp_path / "home", server="http://10.9.9.9:6443")
    cfg = load_configuration(environ=pod_environ(service_account(tmp_path)),
                             home_kubeconfig=str(home))
    assert cfg.host == "https://10.0.0.1:443"


def test_a_context_skips_in_cluster(tmp_path: Path) -> None:
    """--context names a kubeconfig context: in-cluster is skipped and the error says so."""
    with pytest.raises(ClusterConfigError, match="in-cluster skipped"):
        load_configuration(context="prod", environ=pod_environ(service_account(tmp_path)),
                           home_kubeconfig=no_home(tmp_path))


@pytest.mark.parametrize("host, port", [pytest.param("", "443", id="host-empty"),
                                        pytest.param("10.0.0.1", "", id="port-empty")])
def test_empty_service_variables_mean_not_in_a_cluster(tmp_path: Path, host: str,
                                                       port: str) -> None:
    """An empty KUBERNETES_SERVICE_HOST or _PORT is not a cluster; the error names which."""
    env = pod_environ(service_account(tmp_path), host=host, port=port)
    assert not in_cluster_available(env)
    with pytest.raises(ClusterConfigError, match="not in a cluster .*unset"):
        load_configuration(environ=env, home_kubeconfig=no_home(tmp_path))


def test_missing_token_falls_through_and_names_the_token_path(tmp_path: Path) -> None:
    """Service variables but no token: not in-cluster; the one-line error names the token path."""
    sa = service_account(tmp_path, token=None)
    env = pod_environ(sa)
    assert not in_cluster_available(env)
    with pytest.raises(ClusterConfigError) as info:
        load_configuration(environ=env, home_kubeconfig=no_home(tmp_path))
    text = str(info.value)
    assert text.startswith("no cluster config") and str(sa / "token") in text
    assert "KUBERNETES_SERVICE_HOST is set" in text and "\n" not in text


@pytest.mark.parametrize("token, ca, reason", [
    pytest.param("sa-token", None, "certification file does not exist", id="no-ca"),
    pytest.param("sa-token", "", "Cert file exists but empty", id="empty-ca"),
    pytest.param("", "ca", "Token file exists but empty", id="empty-token"),
])
def test_unusable_service_account_is_one_line_naming_it(tmp_path: Path, token: str,
                                                        ca: str | None, reason: str) -> None:
    """A token without a usable CA, or an empty token, is an error naming the directory."""
    sa = service_account(tmp_path, token=token, ca=ca)
    with pytest.raises(ClusterConfigError) as info:
        load_configuration(environ=pod_environ(sa), home_kubeconfig=no_home(tmp_path))
    text = str(info.value)
    assert "in-cluster config unusable" in text and str(sa) in text and reason in text
    assert "\n" not in text


def test_load_in_cluster_reads_the_given_environ_only(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """load_in_cluster(environ) takes host and directory from environ, not os.environ."""
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.66.66.66")
    monkeypatch.setenv(SERVICE_ACCOUNT_DIR_ENV, str(tmp_path / "elsewhere"))
    cfg = load_in_cluster(pod_environ(service_account(tmp_path), host="10.0.0.2"))
    assert cfg.host == "https://10.0.0.2:443"


def test_rotated_token_is_reread_after_a_minute(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The refresh hook keeps the token for a minute, then rereads the rotated file."""
    sa = service_account(tmp_path, token="first")
    cfg = load_in_cluster(pod_environ(sa))
    (sa / "token").write_text("second")
    assert cfg.get_api_key_with_prefix("BearerToken") == "bearer first"

    real = datetime.datetime

    class Later(real):
        @classmethod
        def now(cls, tz: datetime.tzinfo | None = None) -> datetime.datetime:
            return real.now(tz) + datetime.timedelta(seconds=61)

    # the loader's own view of the datetime module, not the shared stdlib module
    monkeypatch.setattr(incluster_config, "datetime",
                        types.SimpleNamespace(datetime=Later, timedelta=datetime.timedelta))
    assert cfg.get_api_key_with_prefix("BearerToken") == "bearer second"
