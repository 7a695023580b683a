"""A kustomize base that deploys one config (``kinrun manifests``), and the YAML of ``kinrun rbac``.

``write_base(config, DIR, names)`` writes::

    DIR/kustomization.yaml    resources: the files below (nothing else: builds with the
                              kustomize v2.0.3 inside kubectl 1.20 and with kustomize v5,
                              and uses no field v5 deprecates: no bases, vars, commonLabels,
                              patchesStrategicMerge/patchesJson6902)
    DIR/serviceaccount.yaml   the identity the pods run as
    DIR/rbac.yaml             ``kinrun.rbac``: the Roles/ClusterRole the plan needs, bound to it
    DIR/configmap.yaml        the config file, its plugin files and its ``crds:`` files (flat:
                              their paths become ``./NAME``); mounted read-only at /config
    DIR/deployment.yaml       kinrun as the image's entrypoint with the config's path (and
                              ``--namespace``), non-root (uid 65532, as the image), read-only
                              root filesystem (an emptyDir at /tmp), no capabilities,
                              requests/limits, probes on /healthz and /readyz, the metrics
                              port, terminationGracePeriodSeconds above the stop bound, two
                              replicas with leader election (three with sharding, each named
                              by its Pod: ``POD_NAME`` from the downward API), a config-hash
                              annotation on the pod template (pods roll when the config or a
                              plugin changes)
    DIR/service.yaml          with ``metrics:`` only: a ClusterIP Service for /metrics
    DIR/webhook.yaml          with ``admission:``: the webhook Service and the Validating/
                              MutatingWebhookConfigurations (``kinrun.admission.manifests``)
    DIR/pdb.yaml              with more than one replica: a PodDisruptionBudget keeping all
                              but one available (``policy/v1``; ``policy/v1beta1`` for
                              ``kubernetes_version`` below 1.21, which has no v1)
    DIR/namespace.yaml        ``--with namespace``: the Namespace the Deployment lives in
    DIR/servicemonitor.yaml,  ``--with monitoring`` (needs ``metrics:``): the Prometheus
    DIR/prometheusrule.yaml   Operator's objects, with alerts (``kinrun.monitoring``)
    DIR/networkpolicy.yaml    ``--with network-policy`` (needs ``metrics:``): the metrics port
                              from namespaces labelled ``metrics: enabled`` only

The image is set once, in kustomization.yaml's ``images:`` entry (its ``name`` is the image
the Deployment names): an overlay pins a registry and tag there, as kustomize intends.

Every object carries its namespace explicitly (a Role may live in another namespace than the
Deployment: the Lease's, or a watched one), so an overlay should not set ``namespace:``.
Kubernetes semantics: Pod ``terminationGracePeriodSeconds`` is how long the kubelet waits
after SIGTERM before SIGKILL; kinrun exits within ``shutdown.drainTimeout + EXIT_SLACK``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kinrun import __version__
from kinrun import safe_yaml
from kinrun.app import EXIT_SLACK
from kinrun.config.model import Config
from kinrun.config.naming import default_name
from kinrun.errors import ConfigError
from kinrun import monitoring
from kinrun.admission import manifests as admission_manifests
from kinrun.sharding.admission import effective_admission
from kinrun.plan import plan
from kinrun.crds import CrdSet, crd_files
from kinrun.rbac import RbacNeeds, Resolve, rbac_needs, rbac_objects

DEFAULT_IMAGE = f"localhost/kinrun:{__version__}"
"""The image ``scripts/build-image`` tags."""
RUN_AS = 65532
"""The image's user and group (``Containerfile``: nonroot)."""
CONFIG_DIR = "/config"
DEFAULT_PROBE_PORT = 8081
"""The probe port when the config model has no ``probes.port`` (controller-runtime's)."""
KILL_MARGIN = 5
"""Seconds between kinrun's own exit bound and the kubelet's SIGKILL."""
RESOURCES = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}}
"""Container resources: no CPU limit (throttling stalls watches), a memory limit."""
EXTRAS = ("namespace", "monitoring", "network-policy")
"""What ``--with`` may add to the base (see the module docstring)."""
DEFAULT_KUBERNETES_VERSION = (1, 25)
"""The oldest cluster the base's API versions must serve unless told otherwise
(``policy/v1`` PodDisruptionBudget: 1.21+; ``policy/v1beta1`` is gone in 1.25)."""


@dataclass(frozen=True)
class Names:
    """What the generated objects are called. ``name``: Roles, bindings, Deployment,
    ConfigMap, Service; ``namespace``: where the ServiceAccount, Deployment, ConfigMap and
    Service live (the ServiceAccount's namespace); ``service_account``; ``run_namespace``: the
    run's ``--namespace`` (None: as the config says)."""

    name: str
    namespace: str
    service_account: str
    run_namespace: str | None = None

    @classmethod
    def for_config(cls, path: Path, *, name: str | None = None, namespace: str | None = None,
                   service_account: str | None = None,
                   service_account_namespace: str | None = None) -> Names:
        """Defaults: ``kinrun-<file stem>`` (a DNS label), the ServiceAccount named alike, in
        ``service_account_namespace``, else ``namespace``, else ``default``."""
        name = name or default_name(path)
        return cls(name, service_account_namespace or namespace or "default",
                   service_account or name, namespace)

    def rbac_kwargs(self) -> dict[str, str]:
        """The keyword arguments of ``kinrun.rbac.rbac_objects``."""
        return {"name": self.name, "service_account": self.service_account,
                "service_account_namespace": self.namespace}

    def webhook(self, config: Config) -> tuple[str, str]:
        """(namespace, webhook Service name) of ``config``'s ``admission:`` deployed so."""
        return self.namespace, admission_manifests.webhook_service_name(config, self.name)

    @property
    def labels(self) -> dict[str, str]:
        """The labels every object gets; the Deployment selects its pods by them."""
        return {"app.kubernetes.io/name": "kinrun", "app.kubernetes.io/instance": self.name}


# -- YAML ------------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """Safe YAML with multi-line strings as literal blocks (readable configs in ConfigMaps)."""


def _str(dumper: yaml.SafeDumper, value: str) -> Any:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump_yaml(objects: Sequence[Mapping[str, Any]]) -> str:
    """``objects`` as a multi-document YAML stream (``---`` before each), keys in order."""
    return "".join("---\n" + yaml.dump(dict(o), Dumper=_Dumper, sort_keys=False,
                                       default_flow_style=False, allow_unicode=True)
                   for o in objects)


def explain_lines(needs: RbacNeeds) -> list[str]:
    """One line per permission and source: ``list core/pods in ns: FILE:LINE: ...``."""
    return [f"{perm}: {why}" for perm, whys in needs.permissions.items() for why in whys]


# -- the base --------------------------------------------------------------------------------


def write_base(config: Config, out_dir: Path, names: Names, *, image: str | None = None,
               replicas: int | None = None, resolve: Resolve | None = None,
               crds: CrdSet | None = None, extras: Sequence[str] = (),
               kubernetes_version: tuple[int, int] = DEFAULT_KUBERNETES_VERSION,
               source: str | None = None, secure_metrics: bool = True,
               warn: Callable[[str], None] = lambda _text: None) -> list[Path]:
    """Write the kustomize base of ``config`` (already narrowed by ``with_namespace`` when
    the run takes ``--namespace``) into ``out_dir``; returns the files written.

    ``image`` (default :data:`DEFAULT_IMAGE`); ``replicas`` (default 3 with sharding, each
    named by its Pod through the downward API's ``POD_NAME``; 2 with leader election; else
    1); ``resolve``: discovery for ``kinrun.rbac``; ``crds``: CRD files besides the config's
    ``crds:`` (``--crd``); ``extras``: any of :data:`EXTRAS`; ``kubernetes_version``: (major,
    minor) of the oldest cluster it must apply to; ``source``: the config's name in each
    file's header (default ``config.file``); ``secure_metrics``: with ``metrics:``, run with
    ``--metrics-secure`` (HTTPS, delegated authn/authz) and grant what it needs, and write the
    ``<name>-metrics-reader`` ClusterRole for scrapers to be bound to (default True, as
    kubebuilder's scaffold since controller-runtime 0.16); ``warn``: called with what the base
    cannot carry over (a kubeconfig in the config, a metrics port 0). Raises ConfigError
    (the plan's, the RBAC's, more than one replica without leaderElection, two plugin files
    with one name, an extra that needs ``metrics:``) and OSError."""
    if secure_metrics and config.metrics is not None and not config.metrics.secure:
        config = dataclasses.replace(config, metrics=dataclasses.replace(config.metrics,
                                                                          secure=True))
    needs = rbac_needs(plan(config), resolve=resolve, crds=crds,
                       webhook=names.webhook(config))
    replicas = _replicas(config, replicas)
    files = config_files(config, warn)
    image = image or DEFAULT_IMAGE
    objects = {
        **({"namespace.yaml": [namespace_object(names)]} if "namespace" in extras else {}),
        "serviceaccount.yaml": [service_account(names)],
        "rbac.yaml": rbac_objects(needs, **names.rbac_kwargs(), labels=names.labels),
        "configmap.yaml": [config_map(names, files)],
        "deployment.yaml": [deployment(config, names, files, image, replicas)],
    }
    port = metrics_port(config, warn)
    _add_optional(objects, config, names, port, replicas, kubernetes_version)
    objects.update(_monitoring(config, names, extras, port))
    return _write(source or config.file, out_dir, objects, image)


def _replicas(config: Config, replicas: int | None) -> int:
    """``write_base``'s replicas: as given, else 3 with sharding, 2 with leader election, 1.
    Raises ConfigError for more than one without either."""
    if replicas is None:
        replicas = 3 if config.sharding is not None else (
            2 if config.leader_election is not None else 1)
    if replicas > 1 and config.leader_election is None and config.sharding is None:
        raise ConfigError(f"{replicas} replicas without leaderElection would all reconcile "
                          "every key: configure leaderElection", file=config.file)
    return replicas


def _add_optional(objects: dict[str, list[dict[str, Any]]], config: Config, names: Names,
                  port: int | None, replicas: int,
                  kubernetes_version: tuple[int, int]) -> None:
    """Add to ``write_base``'s files what the config asks for: the metrics Service (and its
    reader role when secure), the admission webhook objects, a PodDisruptionBudget."""
    if port is not None:
        objects["service.yaml"] = [metrics_service(names, port)]
        if config.metrics is not None and config.metrics.secure:
            objects["rbac.yaml"].append(metrics_reader_role(names))
    admission = effective_admission(config)  # admission: and sharding.admission's webhook
    if admission is not None:  # the webhook Service and configurations
        objects["webhook.yaml"] = admission_manifests.webhook_objects(
            admission, _webhook_service(config, names), names.namespace, names.labels)
    if replicas > 1:
        objects["pdb.yaml"] = [disruption_budget(names, kubernetes_version)]


def _monitoring(config: Config, names: Names, extras: Sequence[str], port: int | None
                ) -> dict[str, list[dict[str, Any]]]:
    """The ``monitoring`` and ``network-policy`` extras' files; ConfigError without a fixed
    metrics port."""
    wanted = [e for e in extras if e in ("monitoring", "network-policy")]
    unknown = sorted(set(extras) - set(EXTRAS))
    if unknown:
        raise ConfigError(f"--with {', '.join(unknown)}: not one of {', '.join(EXTRAS)}",
                          file=config.file)
    if wanted and port is None:
        raise ConfigError(f"--with {', '.join(wanted)} needs metrics: with a fixed port",
                          file=config.file, path="metrics")
    out: dict[str, list[dict[str, Any]]] = {}
    args = (names.name, names.namespace, names.labels)
    if "monitoring" in wanted:
        out["servicemonitor.yaml"] = [monitoring.service_monitor(
            *args, secure=config.metrics is not None and config.metrics.secure)]
        out["prometheusrule.yaml"] = [monitoring.prometheus_rule(
            *args, f"{names.name}-metrics", leader_election=config.leader_election is not None)]
    if "network-policy" in wanted and port is not None:
        out["networkpolicy.yaml"] = [monitoring.network_policy(
            f"{names.name}-metrics", names.namespace, names.labels, names.labels, port,
            open_ports=[admission.port] if (admission := effective_admission(config)) else [])]
    return out


def _write(source: str, out_dir: Path, objects: Mapping[str, list[dict[str, Any]]],
           image: str) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for file_name, docs in objects.items():
        path = out_dir / file_name
        path.write_text(_HEADER.format(source=source) + dump_yaml(docs))
        written.append(path)
    kustomization = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                     "resources": list(objects), "images": [image_entry(image)]}
    path = out_dir / "kustomization.yaml"
    path.write_text(_HEADER.format(source=source)
                    + yaml.dump(kustomization, Dumper=_Dumper, sort_keys=False))
    return [*written, path]


def image_entry(image: str) -> dict[str, str]:
    """kustomize's ``images:`` entry for ``image`` (``repo[:tag][@digest]``): ``name`` is the
    repository the Deployment names, ``newName``/``newTag``/``digest`` what an overlay
    changes (kustomize's ImageTagTransformer)."""
    repo, digest = image.split("@", 1) if "@" in image else (image, "")
    name, tag = repo, ""
    if ":" in repo.rsplit("/", 1)[-1]:  # a tag, not a registry's port
        name, tag = repo.rsplit(":", 1)
    entry = {"name": name, "newName": name}
    if digest:
        entry["digest"] = digest
    elif tag:
        entry["newTag"] = tag
    return entry


def namespace_object(names: Names) -> dict[str, Any]:
    """The Namespace of the ServiceAccount, Deployment and ConfigMap (``--with namespace``)."""
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": names.namespace, "labels": names.labels}}


def disruption_budget(names: Names, kubernetes_version: tuple[int, int]) -> dict[str, Any]:
    """A PodDisruptionBudget ``<name>`` keeping all but one replica through a voluntary
    disruption (a node drain moves one pod at a time; the Lease moves at most once)."""
    api = "policy/v1" if kubernetes_version >= (1, 21) else "policy/v1beta1"
    return {"apiVersion": api, "kind": "PodDisruptionBudget", "metadata": _meta(names),
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": names.labels}}}


_HEADER = "# Generated by `kinrun manifests` from {source}; regenerate rather than edit.\n"


def config_files(config: Config, warn: Callable[[str], None]) -> dict[str, str]:
    """ConfigMap key -> text: the config file (plugin file and ``crds:`` paths made flat,
    ``./NAME``, and ``cluster.kubeconfig``/``context`` dropped: in a pod kinrun uses its
    ServiceAccount), each plugin file and each ``crds:`` file (a folder's files one by one:
    in the pod kinrun reads their schemas, names and scopes, as offline; it installs no CRD).
    ConfigError for two shipped files with one name or a ``crds:`` path that does not exist."""
    source = Path(config.file)
    text = source.read_text(encoding="utf-8")
    plugin_paths = dict(config.plugin_files())
    files: dict[str, str] = {}
    for path in plugin_paths.values():
        _ship(config, files, Path(path), "plugins")
    crd_keys = [_ship(config, files, path, "crds") for path in _crd_paths(config)]
    data = safe_yaml.load(text)
    cluster = data.get("cluster") or {}
    if plugin_paths or config.crds or "kubeconfig" in cluster or "context" in cluster:
        if data.get("plugins"):
            data["plugins"] = [f"./{Path(plugin_paths[s]).name}" if s in plugin_paths else s
                               for s in data["plugins"]]
        if config.crds:
            data["crds"] = [f"./{key}" for key in crd_keys]
        for key in ("kubeconfig", "context"):
            if cluster.pop(key, None) is not None:
                warn(f"cluster.{key} dropped: in the pod kinrun uses its ServiceAccount")
        if "cluster" in data and not cluster:
            del data["cluster"]
        text = (f"# {source.name} for the ConfigMap (plugin and crds paths flattened) by "
                "kinrun manifests\n" + yaml.dump(data, Dumper=_Dumper, sort_keys=False))
    if config.templates.allow_files:
        warn("templates.allowFiles: files templates read are not in the ConfigMap")
    return {source.name: text, **files}


def _crd_paths(config: Config) -> list[Path]:
    """The files of the config's ``crds:`` (folders expanded as ``kinrun.crds`` reads them);
    ConfigError at ``crds`` for one that does not exist."""
    try:
        return crd_files(config.crd_paths())
    except ConfigError as exc:
        raise ConfigError(f"crds: {exc}", file=config.file, path="crds") from None


def _ship(config: Config, files: dict[str, str], path: Path, key_of: str) -> str:
    """Add ``path``'s text to ``files`` under its file name (a ConfigMap's keys are flat);
    returns the key. ConfigError at ``key_of`` when that name is taken."""
    key = path.name
    if key in files or key == Path(config.file).name:
        raise ConfigError(f"two files named {key} cannot share the ConfigMap",
                          file=config.file, path=key_of)
    files[key] = path.read_text(encoding="utf-8")
    return key


def _meta(names: Names, name: str | None = None) -> dict[str, Any]:
    return {"name": name or names.name, "namespace": names.namespace, "labels": names.labels}


def service_account(names: Names) -> dict[str, Any]:
    """The ServiceAccount the pods run as."""
    meta = _meta(names, names.service_account)
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}


def config_map(names: Names, files: Mapping[str, str]) -> dict[str, Any]:
    """The ConfigMap ``<name>-config`` holding ``files``."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(names, f"{names.name}-config"),
            "data": dict(files)}


def termination_grace_seconds(config: Config) -> int:
    """Seconds the kubelet waits after SIGTERM: the config's stop bound (drain timeout +
    ``kinrun.app.EXIT_SLACK``), rounded up, plus :data:`KILL_MARGIN`."""
    drain = config.shutdown.drain_timeout if config.shutdown is not None else 0.0
    return math.ceil(drain + EXIT_SLACK) + KILL_MARGIN


def probe_port(config: Config) -> tuple[int, list[str]]:
    """The health probe port (``/healthz``, ``/readyz``: ``kinrun.probes``) and the run
    arguments it takes: the config's ``probes.port`` when it serves on every address, else
    :data:`DEFAULT_PROBE_PORT` through ``--health-probe-bind-address`` (``probes:`` omitted
    serves none; port 0 or a loopback address cannot be probed by the kubelet)."""
    probes = getattr(config, "probes", None)
    if probes is not None and probes.port and probes.address not in _LOOPBACK:
        return int(probes.port), []
    return DEFAULT_PROBE_PORT, ["--health-probe-bind-address", f":{DEFAULT_PROBE_PORT}"]


_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def metrics_port(config: Config, warn: Callable[[str], None]) -> int | None:
    """The fixed metrics port, or None (no ``metrics:``, or port 0: a free one, which no
    Service can name)."""
    if config.metrics is None:
        return None
    if config.metrics.port == 0:
        warn("metrics.port 0 picks a free port: no metrics Service")
        return None
    if config.metrics.address in _LOOPBACK:
        warn(f"metrics.address {config.metrics.address} is not reachable from the Service")
    return config.metrics.port


def deployment(config: Config, names: Names, files: Mapping[str, str], image: str,
               replicas: int) -> dict[str, Any]:
    """The Deployment running kinrun (see the module docstring for what it sets)."""
    webhook = admission_manifests.container_additions(config, _webhook_service(config, names))
    digest = "sha256:" + hashlib.sha256(  # never all digits or 1e5-like: kustomize v2 would
        "".join(f"{k}\0{v}\0" for k, v in sorted(files.items()))  # write it as a number
        .encode()).hexdigest()[:16]
    pod = {
        "serviceAccountName": names.service_account,
        "terminationGracePeriodSeconds": termination_grace_seconds(config),
        "securityContext": {"runAsNonRoot": True, "runAsUser": RUN_AS, "runAsGroup": RUN_AS,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [_container(config, names, image, webhook)],
        "volumes": [{"name": "config", "configMap": {"name": f"{names.name}-config"}},
                    {"name": "tmp", "emptyDir": {}}] + webhook["volumes"],
    }
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(names),
        "spec": {"replicas": replicas, "selector": {"matchLabels": names.labels},
                 "template": {"metadata": {"labels": names.labels,
                                           "annotations": {"kinrun.dev/config-hash": digest}},
                              "spec": pod}},
    }


def _container(config: Config, names: Names, image: str,
               webhook: Mapping[str, Any]) -> dict[str, Any]:
    """``deployment``'s kinrun container: arguments, ports, env, probes, mounts; ``webhook``:
    the admission server's additions (``container_additions``)."""
    config_key = Path(config.file).name
    args = [f"{CONFIG_DIR}/{config_key}", "--log-format", "zap"]  # controller-runtime keys
    if config.metrics is not None and config.metrics.secure:
        args.append("--metrics-secure")
    if names.run_namespace:
        args += ["--namespace", names.run_namespace]
    probes, probe_args = probe_port(config)
    args += probe_args
    ports = [{"name": "probes", "containerPort": probes, "protocol": "TCP"}]
    port = metrics_port(config, lambda _t: None)
    if port is not None:
        ports.append({"name": "metrics", "containerPort": port, "protocol": "TCP"})
    ports += webhook["ports"]
    return {
        "name": "kinrun", "image": image, "args": args, "ports": ports,
        "env": [{"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}] + (
            # sharding: the replica's name in the ring is its Pod's (kinrun.sharding)
            [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
            if config.sharding is not None else []) + webhook["env"],
        "livenessProbe": _probe("/healthz", 3), "readinessProbe": _probe("/readyz", 1),
        "resources": RESOURCES,
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
                         {"name": "tmp", "mountPath": "/tmp"}] + webhook["volumeMounts"],
    }


def _webhook_service(config: Config, names: Names) -> str:
    return admission_manifests.webhook_service_name(config, names.name)


def _probe(path: str, failures: int) -> dict[str, Any]:
    return {"httpGet": {"path": path, "port": "probes"}, "periodSeconds": 10,
            "timeoutSeconds": 2, "failureThreshold": failures}


def metrics_reader_role(names: Names) -> dict[str, Any]:
    """The ClusterRole ``<name>-metrics-reader`` (GET the non-resource URL ``/metrics``): bind
    a scraper's ServiceAccount to it (kubebuilder's ``metrics-reader``)."""
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": f"{names.name}-metrics-reader", "labels": names.labels},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}


def metrics_service(names: Names, port: int) -> dict[str, Any]:
    """A ClusterIP Service ``<name>-metrics`` for the pods' metrics port."""
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta(names, f"{names.name}-metrics"),
            "spec": {"selector": names.labels, "ports": [
                {"name": "metrics", "port": port, "targetPort": "metrics", "protocol": "TCP"}]}}
