"""Find cluster access and load it into a ``kubernetes.client.Configuration``.

Where access comes from, first match wins (controller-runtime's ``config.GetConfig`` order):

1. an explicit kubeconfig path (``--kubeconfig``, config ``cluster.kubeconfig``);
2. ``$KUBECONFIG`` (one or more paths joined by ``:``, merged as kubectl merges them);
3. in-cluster: ``KUBERNETES_SERVICE_HOST``/``_PORT`` set and a service account token mounted
   (skipped when a context is asked for: contexts only exist in kubeconfig files);
4. ``~/.kube/config``.

The loading itself is the kubernetes client's (``kubernetes.config``: contexts, client
certificates, tokens, exec plugins and their refresh hooks). Any failure becomes one
``ClusterConfigError`` whose one-line message says what was tried and what went wrong.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import yaml
from kubernetes import client as k8s_client
from kubernetes.config import ConfigException, incluster_config, kube_config

from kinrun.errors import ClusterConfigError

DEFAULT_KUBECONFIG = "~/.kube/config"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _existing(paths: str) -> list[str]:
    return [p for p in paths.split(os.pathsep) if p and os.path.exists(os.path.expanduser(p))]


def load_kubeconfig(paths: str, context: str | None, source: str) -> k8s_client.Configuration:
    """Load kubeconfig file(s) ``paths`` (``:``-joined) with ``context`` (None = current).

    ``source`` names where the paths came from, for the error message. Raises
    ClusterConfigError when no file exists or loading fails.
    """
    if not _existing(paths):
        raise ClusterConfigError(f"kubeconfig {paths} (from {source}) does not exist")
    config = k8s_client.Configuration()
    try:
        kube_config.load_kube_config(config_file=paths, context=context,
                                     client_configuration=config, persist_config=False)
    except (ConfigException, yaml.YAMLError, OSError, KeyError, TypeError, ValueError,
            AttributeError) as exc:
        where = f"context {context!r} of " if context else ""
        raise ClusterConfigError(
            f"cannot use {where}kubeconfig {paths} (from {source}): {_one_line(exc)}") from None
    if not config.host:
        raise ClusterConfigError(f"kubeconfig {paths} (from {source}): the cluster has no server")
    return config


def in_cluster_available(environ: Mapping[str, str] = os.environ,
                         token_path: str = incluster_config.SERVICE_TOKEN_FILENAME) -> bool:
    """True when this process looks like it runs in a pod (service env + mounted token)."""
    return bool(environ.get(incluster_config.SERVICE_HOST_ENV_NAME)
                and environ.get(incluster_config.SERVICE_PORT_ENV_NAME)
                and os.path.isfile(token_path))


def load_in_cluster() -> k8s_client.Configuration:
    """The in-cluster Configuration (service account token, cluster CA); token refreshed by the
    client's hook. Raises ClusterConfigError when the mounted files are unusable."""
    config = k8s_client.Configuration()
    try:
        incluster_config.load_incluster_config(client_configuration=config)
    except (ConfigException, OSError) as exc:
        raise ClusterConfigError(f"in-cluster config unusable: {_one_line(exc)}") from None
    return config


def load_configuration(*, kubeconfig: str | None = None, context: str | None = None,
                       environ: Mapping[str, str] = os.environ,
                       home_kubeconfig: str = DEFAULT_KUBECONFIG) -> k8s_client.Configuration:
    """A Configuration from the first source that applies (see the module docstring).

    ``environ`` and ``home_kubeconfig`` are injectable for tests. Raises ClusterConfigError.
    """
    if kubeconfig:
        return load_kubeconfig(kubeconfig, context, "--kubeconfig or cluster.kubeconfig")
    env_paths = environ.get("KUBECONFIG", "")
    if env_paths:
        return load_kubeconfig(env_paths, context, "$KUBECONFIG")
    if context is None and in_cluster_available(environ):
        return load_in_cluster()
    if _existing(home_kubeconfig):
        return load_kubeconfig(home_kubeconfig, context, home_kubeconfig)
    in_cluster = "in-cluster skipped (a context was given)" if context else \
        "not in a cluster (no KUBERNETES_SERVICE_HOST or service account token)"
    raise ClusterConfigError(
        f"no cluster config: no kubeconfig given, $KUBECONFIG unset, {in_cluster},"
        f" {home_kubeconfig} does not exist")
