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

In-cluster follows client-go's ``rest.InClusterConfig``: the server is
``https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`` (IPv6 hosts bracketed), the bearer
token is the file ``token`` and the cluster CA the file ``ca.crt`` of the service account
directory, ``/var/run/secrets/kubernetes.io/serviceaccount``. The token file is read again
once a minute (kubelet rotates bound tokens in place; client-go rereads it likewise). One
kinrun addition: ``$KINRUN_SERVICEACCOUNT_DIR`` names another directory laid out the same way
(tests, or a token projected elsewhere); it grants nothing that ``$KUBECONFIG`` does not.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import yaml
from kubernetes import client as k8s_client
from kubernetes.config import ConfigException, incluster_config, kube_config

from kinrun.errors import ClusterConfigError

DEFAULT_KUBECONFIG = "~/.kube/config"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
"""Where kubelet mounts a pod's service account: ``token``, ``ca.crt``, ``namespace``."""
SERVICE_ACCOUNT_DIR_ENV = "KINRUN_SERVICEACCOUNT_DIR"
"""Environment variable naming another service account directory (same layout)."""
TOKEN_FILE, CA_FILE = "token", "ca.crt"


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


def service_account_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """The service account directory: ``$KINRUN_SERVICEACCOUNT_DIR`` if set and non-empty,
    else ``SERVICE_ACCOUNT_DIR``. Only a path; nothing is checked."""
    return Path(environ.get(SERVICE_ACCOUNT_DIR_ENV) or SERVICE_ACCOUNT_DIR)


def _in_cluster_missing(environ: Mapping[str, str]) -> str | None:
    """Why this process cannot be in a cluster (one phrase), or None when it looks like it is.

    client-go's rule: both service variables non-empty, then a token file. The CA is checked
    when loading (its absence is an error there, not a reason to fall through)."""
    host, port = incluster_config.SERVICE_HOST_ENV_NAME, incluster_config.SERVICE_PORT_ENV_NAME
    unset = [name for name in (host, port) if not environ.get(name)]
    if unset:
        return f"not in a cluster ({' and '.join(unset)} unset)"
    token = service_account_dir(environ) / TOKEN_FILE
    if not token.is_file():
        return f"not in a cluster ({host} is set but no service account token at {token})"
    return None


def in_cluster_available(environ: Mapping[str, str] = os.environ) -> bool:
    """True when this process looks like it runs in a pod: ``KUBERNETES_SERVICE_HOST`` and
    ``_PORT`` non-empty in ``environ`` and a token file in ``service_account_dir(environ)``."""
    return _in_cluster_missing(environ) is None


def load_in_cluster(environ: Mapping[str, str] = os.environ) -> k8s_client.Configuration:
    """The in-cluster Configuration, through the client's ``InClusterConfigLoader``.

    Host from ``environ``'s ``KUBERNETES_SERVICE_HOST``/``_PORT``; bearer token and CA from
    ``service_account_dir(environ)``; the token is reread by the client's refresh hook once it
    is a minute old (semantics: client-go ``rest.InClusterConfig``). Raises ClusterConfigError
    (one line, naming the directory) when a variable is unset or empty, or the token or CA
    file is missing, empty or unreadable.
    """
    sa_dir = service_account_dir(environ)
    loader = incluster_config.InClusterConfigLoader(
        token_filename=str(sa_dir / TOKEN_FILE), cert_filename=str(sa_dir / CA_FILE),
        environ=environ, try_refresh_token=True)
    config = k8s_client.Configuration()
    try:
        loader.load_and_set(client_configuration=config)
    except (ConfigException, OSError, UnicodeDecodeError) as exc:
        raise ClusterConfigError(
            f"in-cluster config unusable (service account {sa_dir}): {_one_line(exc)}") from None
    return config


def describe_access(*, kubeconfig: str | None = None, context: str | None = None,
                    environ: Mapping[str, str] = os.environ,
                    home_kubeconfig: str = DEFAULT_KUBECONFIG) -> str:
    """Where :func:`load_configuration` takes access from, in words, for error messages:
    ``kubeconfig PATH (from SOURCE), context NAME``, or ``in-cluster service account``. Never
    raises (an unreadable kubeconfig gives its path without a context)."""
    if kubeconfig:
        paths, source = kubeconfig, "--kubeconfig or cluster.kubeconfig"
    elif environ.get("KUBECONFIG"):
        paths, source = environ["KUBECONFIG"], "$KUBECONFIG"
    elif context is None and _in_cluster_missing(environ) is None:
        return "in-cluster service account"
    else:
        paths, source = home_kubeconfig, home_kubeconfig
    if context is None:
        try:
            context = kube_config.list_kube_config_contexts(
                os.path.expanduser(_existing(paths)[0]))[1]["name"]
        except Exception:  # noqa: BLE001 - a description only
            context = None
    where = f"kubeconfig {paths}" + ("" if source == paths else f" (from {source})")
    return where + (f", context {context}" if context else "")


def load_configuration(*, kubeconfig: str | None = None, context: str | None = None,
                       environ: Mapping[str, str] = os.environ,
                       home_kubeconfig: str = DEFAULT_KUBECONFIG) -> k8s_client.Configuration:
    """A Configuration from the first source that applies (see the module docstring).

    ``environ`` (``$KUBECONFIG``, the in-cluster variables, ``$KINRUN_SERVICEACCOUNT_DIR``) and
    ``home_kubeconfig`` are injectable for tests. Raises ClusterConfigError.
    """
    if kubeconfig:
        return load_kubeconfig(kubeconfig, context, "--kubeconfig or cluster.kubeconfig")
    env_paths = environ.get("KUBECONFIG", "")
    if env_paths:
        return load_kubeconfig(env_paths, context, "$KUBECONFIG")
    missing = _in_cluster_missing(environ)
    if context is None and missing is None:
        return load_in_cluster(environ)
    if _existing(home_kubeconfig):
        return load_kubeconfig(home_kubeconfig, context, home_kubeconfig)
    in_cluster = "in-cluster skipped (a context was given)" if context else missing
    raise ClusterConfigError(
        f"no cluster config: no kubeconfig given, $KUBECONFIG unset, {in_cluster},"
        f" {home_kubeconfig} does not exist")
