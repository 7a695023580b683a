"""The frozen model: defaults, durations in seconds, normalized actions, paths, overrides."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kinrun.config import (ActionSpec, Config, FrozenMap, IndexerSpec, RunOptions, freeze,
                           load_text, thaw)

MINIMAL = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  pods: {apiVersion: v1, kind: Pod}
controllers:
  - {name: c, for: pods, reconcile: {hooks: true}}
"""

FULL = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
cluster: {kubeconfig: ./kube/config, context: dev, qps: 5, burst: 7}
plugins: [kinrun.plugins.log, ./hooks.py]
templates: {allowEnv: true}
informers:
  pods:
    apiVersion: v1
    kind: Pod
    namespaces: [default, web]
    labelSelector: app=web
    fieldSelector: status.phase=Running
    resyncPeriod: 1m30s
    transform: {stripManagedFields: false}
    indexers:
      byNode: "{{ obj.spec.nodeName }}"
      byTeam: {plugin: true}
  nodes: {apiVersion: v1, resource: nodes}
controllers:
  - name: c
    for: pods
    watches:
      - informer: nodes
      - {informer: nodes, mapTo: {template: "{{ obj.metadata.name }}"}}
      - {informer: nodes, mapTo: {index: byNode}}
    predicates: [generationChanged]
    workers: 3
    rateLimiter: {baseDelay: 10ms, maxDelay: 2m, qps: 2.5, burst: 4}
    maxRetries: 0
    reconcile:
      hooks: [kinrun.plugins.log, ./hooks.py]
      actions:
        - log: "hi {{ key }}"
        - when: "obj.spec.nodeName"
          name: child
          apply: {manifest: "kind: X"}
        - patch: {patch: "a: b", subresource: status}
        - delete: {target: {apiVersion: v1, kind: ConfigMap, name: x}}
        - event: {reason: R, message: M}
        - requeueAfter: 2m
        - requeueAfter: "{{ 5 }}s"
        - plugin: scale
          with: {replicas: [1, 2]}
      onDelete:
        - log: {message: gone, level: warning}
leaderElection: {leaseName: lock, retryPeriod: 1s}
metrics: {port: 9090}
"""


@pytest.fixture
def full(tmp_path: Path) -> Config:
    (tmp_path / "hooks.py").write_text("")
    return load_text(FULL, file="full.yaml", base_dir=tmp_path)


def test_defaults_are_applied() -> None:
    """A minimal config gets every documented default."""
    config = load_text(MINIMAL, file="m.yaml")
    pods, ctrl = config.informer("pods"), config.controller("c")
    assert (pods.namespaces, pods.resync_period, pods.transform.strip_managed_fields) == (None, 0.0, True)
    assert (ctrl.workers, ctrl.max_retries, ctrl.predicates, ctrl.watches) == (1, 15, (), ())
    limiter = ctrl.rate_limiter
    assert (limiter.base_delay, limiter.max_delay, limiter.qps, limiter.burst) == (0.005, 1000.0, 10.0, 100)
    assert (config.cluster.qps, config.cluster.burst, config.cluster.kubeconfig) == (50.0, 100, None)
    assert config.leader_election is None and config.metrics is None
    assert (ctrl.reconcile.hooks, ctrl.reconcile.hook_plugins) == (True, None)


def test_values_are_converted(full: Config, tmp_path: Path) -> None:
    """Durations become seconds, paths absolute, lists tuples, names pythonic."""
    pods = full.informer("pods")
    assert pods.resync_period == 90.0 and pods.namespaces == ("default", "web")
    assert (pods.label_selector, pods.field_selector) == ("app=web", "status.phase=Running")
    assert pods.transform.strip_managed_fields is False
    assert full.plugins == ("kinrun.plugins.log", "./hooks.py")
    assert full.plugin_files() == {"./hooks.py": str((tmp_path / "hooks.py").resolve())}
    assert full.cluster.kubeconfig == str((tmp_path / "kube" / "config").resolve())
    assert (full.cluster.context, full.cluster.qps, full.cluster.burst) == ("dev", 5.0, 7)
    assert full.templates.allow_env is True and full.templates.allow_files is False
    ctrl = full.controller("c")
    assert (ctrl.rate_limiter.base_delay, ctrl.rate_limiter.max_delay) == (0.01, 120.0)
    assert (ctrl.workers, ctrl.max_retries, ctrl.primary) == (3, 0, "pods")
    assert full.leader_election.lease_duration == 15.0 and full.leader_election.retry_period == 1.0
    assert full.metrics.port == 9090 and full.metrics.address == "0.0.0.0"


def test_informer_kind_or_resource_and_indexers(full: Config) -> None:
    """An informer keeps kind or resource; indexers are expressions or plugin-supplied."""
    assert (full.informer("nodes").kind, full.informer("nodes").resource) == (None, "nodes")
    indexers = full.informer("pods").indexers
    assert indexers["byNode"].expression == "{{ obj.spec.nodeName }}"
    assert indexers["byTeam"] == IndexerSpec("byTeam", plugin=True,
                                             location=indexers["byTeam"].location)
    assert indexers["byTeam"].location.line == 17


def test_watches_map_to_owner_template_or_index(full: Config) -> None:
    """mapTo defaults to owner; template and index forms carry their argument."""
    watches = full.controller("c").watches
    assert [(w.map_to, w.template, w.index) for w in watches] == [
        ("owner", None, None), ("template", "{{ obj.metadata.name }}", None),
        ("index", None, "byNode")]


def test_actions_are_normalized(full: Config) -> None:
    """Each action kind's spec has the schema's defaults (None for optional fields without
    one); string forms become mappings."""
    reconcile = full.controller("c").reconcile
    specs = [(a.kind, thaw(a.spec)) for a in reconcile.actions]
    assert specs == [
        ("log", {"message": "hi {{ key }}", "level": "info"}),
        ("apply", {"manifest": "kind: X", "ownerReference": True, "force": False,
                   "fieldManager": "kinrun"}),
        ("patch", {"type": "merge", "subresource": "status", "target": None, "patch": "a: b"}),
        ("delete", {"propagationPolicy": None,
                    "target": {"apiVersion": "v1", "kind": "ConfigMap", "name": "x"}}),
        ("event", {"type": "Normal", "target": None, "reason": "R", "message": "M"}),
        ("requeueAfter", {"seconds": 120.0}),
        ("requeueAfter", {"template": "{{ 5 }}s"}),
        ("scale", {"replicas": [1, 2]}),
    ]
    assert reconcile.hook_plugins == ("kinrun.plugins.log", "./hooks.py")
    assert thaw(reconcile.on_delete[0].spec) == {"message": "gone", "level": "warning"}


def test_action_names_when_and_plugin_flag(full: Config) -> None:
    """name defaults to the list position and kind; when is kept; plugin kinds are flagged."""
    actions = full.controller("c").reconcile.actions
    assert [a.name for a in actions[:3]] == ["actions[0].log", "child", "actions[2].patch"]
    assert actions[1].when == "obj.spec.nodeName"
    assert [a.kind for a in actions if a.plugin] == ["scale"]


def test_action_raw_is_the_one_kind_key_form(full: Config) -> None:
    """raw is the item as written, with plugin actions rewritten as {kind: with}."""
    actions = full.controller("c").reconcile.actions
    assert thaw(actions[1].raw) == {"when": "obj.spec.nodeName", "name": "child",
                                    "apply": {"manifest": "kind: X"}}
    assert thaw(actions[-1].raw) == {"scale": {"replicas": [1, 2]}}


def test_action_locations_point_into_the_file(full: Config) -> None:
    """An action knows its item's position and each field's position."""
    apply = full.controller("c").reconcile.actions[1]
    assert (apply.location.file, apply.location.line, apply.location.path) == \
        ("full.yaml", 34, "controllers[0].reconcile.actions[1]")
    assert apply.field_locations["manifest"].line == 36
    assert apply.field_locations["when"].line == 34
    assert apply.location.error("boom").args[0] == \
        "full.yaml:34:11: controllers[0].reconcile.actions[1]: boom"


def test_model_is_frozen_and_hashable(full: Config) -> None:
    """Specs cannot be changed in place and can be used as dict keys."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        full.controllers[0].workers = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        full.informers["x"] = None  # type: ignore[index]
    assert hash(full) == hash(full)
    assert isinstance(full.controllers[0].reconcile.actions[0], ActionSpec)


def test_with_namespace_restricts_every_informer(full: Config) -> None:
    """with_namespace sets namespaces=(ns,) on all informers and records the override."""
    scoped = full.with_namespace("team-a")
    assert {i.namespaces for i in scoped.informers.values()} == {("team-a",)}
    assert scoped.namespace_override == "team-a"
    assert full.informer("pods").namespaces == ("default", "web")


def test_run_options_override_the_cluster_spec(full: Config) -> None:
    """--kubeconfig/--context replace the file's cluster settings; others are kept."""
    options = RunOptions(config_path=Path("full.yaml"), context="prod")
    assert options.effective_cluster(full) == dataclasses.replace(full.cluster, context="prod")
    assert RunOptions(config_path=Path("x")).effective_cluster(full) == full.cluster


def test_freeze_and_thaw_round_trip() -> None:
    """freeze makes nested data immutable and hashable; thaw gives a plain copy back."""
    data = {"a": [1, {"b": "c"}], "d": None}
    frozen = freeze(data)
    assert isinstance(frozen, FrozenMap) and isinstance(frozen["a"], tuple)
    assert hash(frozen) == hash(freeze(data))
    assert thaw(frozen) == data


def test_unknown_lookups_raise_key_error(full: Config) -> None:
    """informer()/controller() raise KeyError for unknown names."""
    with pytest.raises(KeyError):
        full.informer("nope")
    with pytest.raises(KeyError):
        full.controller("nope")
