"""kinrun.reload.diff: which informers and controllers a new config adds, removes, keeps or
swaps (pure: two compiled Plans, no cluster)."""

from __future__ import annotations

from kinrun.config import load_text
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager
from kinrun.reload import carry_over_indexers, diff, keep_sharding

BASE = """
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms:
    apiVersion: v1
    kind: ConfigMap
    indexers: {byApp: "{{ obj.metadata.labels.app }}"}
  pods: {apiVersion: v1, kind: Pod}
controllers:
  - name: a
    for: cms
    reconcile:
      actions:
        - log: "a {{ obj.metadata.name }}"
  - name: b
    for: pods
    reconcile:
      actions:
        - log: "b {{ obj.metadata.name }}"
"""


def compiled(text: str):
    return plan(load_text(text, file="kinrun.yaml"), new_plugin_manager())


def test_identical_configs_change_nothing() -> None:
    """The same text compiled twice: every informer kept, every controller unchanged."""
    change = diff(compiled(BASE), compiled(BASE))
    assert change.empty
    assert change.informers_kept == ("cms", "pods")
    assert change.controllers_unchanged == ("a", "b")


def test_moved_lines_are_no_change() -> None:
    """Positions do not count: a comment block above everything shifts every line."""
    change = diff(compiled(BASE), compiled("# one\n# two\n" + BASE))
    assert change.empty and change.controllers_unchanged == ("a", "b")


def test_a_changed_action_swaps_only_its_controller() -> None:
    change = diff(compiled(BASE), compiled(BASE.replace('"a {{', '"A {{')))
    assert change.controllers_swapped == ("a",)
    assert change.controllers_unchanged == ("b",)
    assert change.informers_kept == ("cms", "pods") and not change.indexes


def test_a_changed_selector_changes_the_informer_and_swaps_its_controllers() -> None:
    new = BASE.replace("pods: {apiVersion: v1, kind: Pod}",
                       "pods: {apiVersion: v1, kind: Pod, labelSelector: app=web}")
    change = diff(compiled(BASE), compiled(new))
    assert change.informers_changed == ("pods",)
    assert change.informers_kept == ("cms",)
    assert change.controllers_swapped == ("b",) and change.controllers_unchanged == ("a",)


def test_an_added_index_keeps_the_informer_and_swaps_its_readers() -> None:
    new = BASE.replace('indexers: {byApp: "{{ obj.metadata.labels.app }}"}',
                       'indexers: {byApp: "{{ obj.metadata.labels.app }}", '
                       'byTier: "{{ obj.metadata.labels.tier }}"}')
    change = diff(compiled(BASE), compiled(new))
    assert change.informers_kept == ("cms", "pods")
    assert change.indexes == {"cms": (("byTier",), (), ())}
    assert change.controllers_swapped == ("a",) and change.controllers_unchanged == ("b",)


def test_a_changed_and_a_removed_index() -> None:
    new = BASE.replace('indexers: {byApp: "{{ obj.metadata.labels.app }}"}',
                       'indexers: {byApp: "{{ obj.metadata.labels.team }}"}')
    assert diff(compiled(BASE), compiled(new)).indexes == {"cms": ((), ("byApp",), ())}
    gone = BASE.replace('    indexers: {byApp: "{{ obj.metadata.labels.app }}"}\n', "")
    assert diff(compiled(BASE), compiled(gone)).indexes == {"cms": ((), (), ("byApp",))}


def test_added_and_removed_informers_and_controllers() -> None:
    new = BASE.replace("  pods: {apiVersion: v1, kind: Pod}\n",
                       "  secrets: {apiVersion: v1, kind: Secret}\n").replace(
        "  - name: b\n    for: pods\n", "  - name: c\n    for: secrets\n")
    change = diff(compiled(BASE), compiled(new))
    assert change.informers_added == ("secrets",) and change.informers_removed == ("pods",)
    assert change.controllers_added == ("c",) and change.controllers_removed == ("b",)
    assert change.controllers_unchanged == ("a",)
    assert "informers added secrets removed pods" in change.summary()
    assert "controllers added c removed b swapped - unchanged a" in change.summary()


def test_a_changed_templates_setting_swaps_every_controller() -> None:
    """Top-level keys that compile into controllers (templates) swap them all."""
    new = BASE + "templates: {allowEnv: true}\n"
    change = diff(compiled(BASE), compiled(new))
    assert change.controllers_swapped == ("a", "b")


def test_restart_only_keys_are_reported_not_applied() -> None:
    new = BASE + "metrics: {port: 9090}\nshutdown: {drainTimeout: 3s}\n"
    change = diff(compiled(BASE), compiled(new))
    assert change.restart_only == ("metrics", "shutdown")
    assert change.empty and change.controllers_unchanged == ("a", "b")


def test_discovery_refs_decide_whether_an_informer_is_kept() -> None:
    """A kind resolving to another resource (another version served) is another informer."""
    old, new = compiled(BASE), compiled(BASE)
    refs = {"cms": "v1/configmaps", "pods": "v1/pods"}
    assert diff(old, new, old_refs=refs, new_refs=refs).empty
    moved = {**refs, "pods": "v2/pods"}
    change = diff(old, new, old_refs=refs, new_refs=moved)
    assert change.informers_changed == ("pods",) and change.controllers_swapped == ("b",)


def test_waiting_controllers_are_removed_when_running_and_added_when_they_can_run() -> None:
    old, new = compiled(BASE), compiled(BASE)
    assert diff(old, new, waiting=["b"]).controllers_removed == ("b",)
    assert diff(old, new, running=["a"]).controllers_added == ("b",)


def test_carry_over_keeps_the_function_of_an_unchanged_index_only() -> None:
    old = compiled(BASE)
    new = compiled(BASE.replace("pods: {apiVersion: v1, kind: Pod}",
                                'pods: {apiVersion: v1, kind: Pod, indexers: '
                                '{byNode: "{{ obj.spec.nodeName }}"}}'))
    carried = carry_over_indexers(old, new)
    assert carried.informers["cms"].indexers["byApp"] is old.informers["cms"].indexers["byApp"]
    assert carried.informers["pods"].indexers["byNode"] is new.informers["pods"].indexers["byNode"]
    changed = compiled(BASE.replace("labels.app", "labels.team"))
    assert carry_over_indexers(old, changed).informers["cms"].indexers["byApp"] \
        is not old.informers["cms"].indexers["byApp"]


SCHEDULED = BASE.replace("""  - name: a
    for: cms
""", """  - name: a
    for: cms
    schedule: "0 3 * * *"
    timeZone: Europe/Paris
    finalizer: kinrun.dev/a
""").replace("""        - log: "a {{ obj.metadata.name }}"
""", """        - log: "a {{ obj.metadata.name }}"
      finalize:
        - log: "bye {{ obj.metadata.name }}"
""")


def test_an_added_informer_above_a_scheduled_controller_changes_nothing_of_it() -> None:
    """A line added above shifts the positions of ``schedule``/``timeZone``/``finalizer``
    (``*_location`` fields): the controller is still unchanged (issue 15 trial)."""
    new = SCHEDULED.replace("informers:\n",
                            "informers:\n  eps: {apiVersion: v1, kind: Endpoints}\n")
    change = diff(compiled(SCHEDULED), compiled(new))
    assert change.informers_added == ("eps",)
    assert change.controllers_swapped == () and change.controllers_unchanged == ("a", "b")


def test_a_changed_schedule_swaps_its_controller() -> None:
    change = diff(compiled(SCHEDULED), compiled(SCHEDULED.replace("0 3 *", "0 4 *")))
    assert change.controllers_swapped == ("a",) and change.controllers_unchanged == ("b",)


def test_a_changed_sharding_key_needs_a_restart() -> None:
    """``sharding`` is read at start (the replica's Lease, the Shard): reported, not applied."""
    change = diff(compiled(BASE), compiled(BASE + "sharding: {ring: web}\n"))
    assert change.restart_only == ("sharding",)
    assert change.empty and change.controllers_unchanged == ("a", "b")


def test_a_reload_keeps_sharding_as_started() -> None:
    """A replica started sharded keeps sharding the primary informers after a reload that
    drops ``sharding`` (restart only: it must not list every replica's objects), and one
    started unsharded does not start sharding."""
    sharded = compiled(BASE + "sharding: {ring: web}\n")
    assert set(sharded.sharded) == {"cms", "pods"}
    unsharded = compiled(BASE)
    assert keep_sharding(unsharded, sharded.config.sharding).sharded == sharded.sharded
    assert keep_sharding(sharded, None).sharded == {}
    assert keep_sharding(sharded, sharded.config.sharding) is sharded
