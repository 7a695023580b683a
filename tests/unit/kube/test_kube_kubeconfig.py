"""Cluster config discovery: explicit path, $KUBECONFIG, ~/.kube/config; one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kinrun.errors import ClusterConfigError
from kinrun.kube import Client
from kinrun.kube.kubeconfig import load_configuration


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
