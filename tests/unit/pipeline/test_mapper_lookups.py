"""Key mappers (``mapTo: {template}``) with lookups, the ``initial_list`` flag, and where a slow
mapper runs: on a listener thread of its own, so it stalls neither its informer nor the other
handlers (client-go processorListener)."""

from __future__ import annotations

import queue
import threading

import pytest

from pipeline_fakes import WAIT, Recorder, pod

from kinrun.cache import Lister
from kinrun.cache.thread_safe_store import KeyedIndexer
from kinrun.controller import CAUSE_ADDED, CAUSE_ADDED_INITIAL, enqueue_mapped, enqueue_own_key
from kinrun.reconcile import ADDED, Cause
from kinrun.templating import TemplateEngine, compile_key_mapper


def lister_of(*objects: dict) -> Lister:
    indexer = KeyedIndexer()
    for obj in objects:
        indexer.add(obj)
    return Lister(indexer)


def namespace(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


# -- lookups -----------------------------------------------------------------------------------


def test_mapper_fans_out_with_list_over_the_bound_listers():
    """``list('namespaces')`` in a mapper gives one key per cached Namespace."""
    mapper = compile_key_mapper("{{ list('namespaces') | map(attribute='metadata.name') | list }}")
    bound = mapper.bind({"namespaces": lister_of(namespace("a"), namespace("b"))})
    assert sorted(bound(pod("source"))) == ["a", "b"]
    assert mapper.uses_lookups


def test_mapper_get_and_by_index_read_the_caches():
    """``get`` and ``by_index`` read the named informer's cache; ``list`` takes a namespace."""
    indexer = KeyedIndexer(indexers={"byApp": lambda o: [o["metadata"]["labels"]["app"]]})
    for name, app in (("w1", "web"), ("w2", "web"), ("d1", "db")):
        indexer.add(pod(name, meta={"labels": {"app": app}}))
    indexer.add(pod("other", ns="prod", meta={"labels": {"app": "web"}}))
    listers = {"pods": Lister(indexer)}
    by_index = compile_key_mapper(
        "{% for p in by_index('pods', 'byApp', obj.metadata.labels.app) %}"
        "{{ p.metadata.namespace }}/{{ p.metadata.name }}\n{% endfor %}").bind(listers)
    got = compile_key_mapper("{{ 'x/' ~ get('pods', 'default/d1').metadata.name }}").bind(listers)
    in_ns = compile_key_mapper(
        "{{ list('pods', 'prod') | map(attribute='metadata.name') | list }}").bind(listers)
    assert sorted(by_index(pod("s", meta={"labels": {"app": "web"}}))) == \
        ["default/w1", "default/w2", "prod/other"]
    assert got(pod("s")) == ["x/d1"]
    assert in_ns(pod("s")) == ["other"]


def test_mapper_lookup_of_an_unknown_informer_gives_no_key_and_a_warning(caplog):
    """An unknown informer name is a warning naming the known ones; no key, no exception."""
    mapper = compile_key_mapper("{{ list('nope') | length }}", ("cfg.yaml", 7, "watches[0]"))
    bound = mapper.bind({"namespaces": lister_of()})
    with caplog.at_level("WARNING", logger="kinrun.templating"):
        assert bound(pod("s")) == []
    assert "cfg.yaml:7: watches[0]: key mapper" in caplog.text
    assert "unknown informer 'nope' (known: namespaces)" in caplog.text


def test_mapper_lookup_of_an_unknown_index_names_the_informer_and_its_indexes(caplog):
    """``by_index`` with an index the informer lacks is a warning naming the informer and the
    indexes it has, not a bare ``KeyError: 'nope'``."""
    indexer = KeyedIndexer(indexers={"byApp": lambda o: [o["metadata"]["labels"]["app"]]})
    mapper = compile_key_mapper("{{ by_index('pods', 'nope', 'x') | length }}",
                                ("cfg.yaml", 7, "watches[0]"))
    bound = mapper.bind({"pods": Lister(indexer, "pods")})
    with caplog.at_level("WARNING", logger="kinrun.templating"):
        assert bound(pod("s")) == []
    assert "informer 'pods' has no index 'nope' (its indexes: byApp, namespace)" in caplog.text


def test_mapper_lookups_spend_the_per_call_budget(caplog):
    """A fan-out over a big cache stops at templates.budget.maxLoopSteps (no key, a warning)."""
    engine = TemplateEngine({"budget": {"maxLoopSteps": 50}})
    mapper = compile_key_mapper(
        "{% for n in list('namespaces') %}{{ n.metadata.name }}\n{% endfor %}", engine=engine)
    small = mapper.bind({"namespaces": lister_of(*[namespace(f"n{i}") for i in range(40)])})
    big = mapper.bind({"namespaces": lister_of(*[namespace(f"n{i}") for i in range(60)])})
    assert len(small(pod("s"))) == 40
    with caplog.at_level("WARNING", logger="kinrun.templating"):
        assert big(pod("s")) == []
    assert "more than 50 loop steps" in caplog.text


# -- the initial-list flag ---------------------------------------------------------------------


def test_mapper_sees_initial_list_for_the_first_list_only(server, make_informer):
    """Objects of the first list map with ``initial_list`` true; a later add with false (as
    client-go's ``OnAdd(obj, isInInitialList)``); an update maps with false."""
    server.create(pod("old"))
    informer = make_informer(server)
    keys: queue.Queue[str] = queue.Queue()
    mapper = compile_key_mapper("{{ 'initial' if initial_list else 'live' }}/"
                                "{{ obj.metadata.name }}")
    informer.add_event_handler(enqueue_mapped(keys.put, mapper, initial_list=True))
    informer.start()
    assert informer.wait_for_sync(WAIT)
    assert keys.get(timeout=WAIT) == "initial/old"
    server.create(pod("new"))
    assert keys.get(timeout=WAIT) == "live/new"
    server.update(pod("new", meta={"labels": {"a": "b"}}))
    assert keys.get(timeout=WAIT) == "live/new"


def test_primary_added_cause_carries_initial_list():
    """The own-key handler queues ``added`` with initial_list from the informer's flag; the
    text of the cause (the templates' ``reason``) stays ``added``."""
    got: list[tuple[str, Cause]] = []
    handler = enqueue_own_key(lambda key, cause: got.append((key, cause)), causes=True)
    handler.on_add(pod("a"), True)
    handler.on_add(pod("b"), False)
    assert got == [("default/a", CAUSE_ADDED_INITIAL), ("default/b", CAUSE_ADDED)]
    assert got[0][1] == Cause(ADDED, initial_list=True) and str(got[0][1]) == "added"


# -- a slow mapper stalls only itself ----------------------------------------------------------


def test_blocked_mapper_does_not_stall_its_informer_or_other_handlers(server, make_informer):
    """A template mapper blocked inside a call (here: a filter waiting on an Event) holds up
    only its own listener: the informer stores later changes and the other handlers of the
    same informer, synchronous or buffered, receive them; once released, the mapper catches
    up in order. This is how ``kinrun.bound`` wires template mappers (synchronous=False)."""
    release, entered = threading.Event(), threading.Event()

    def block(obj):
        if obj["metadata"]["name"] == "slow":
            entered.set()
            assert release.wait(WAIT)
        return obj["metadata"]["name"]
    engine = TemplateEngine(extra_filters={"block": block})
    mapped: queue.Queue[str] = queue.Queue()
    mapper = compile_key_mapper("default/{{ obj | block }}", engine=engine)
    informer = make_informer(server)
    primary, other = Recorder(), Recorder()
    informer.add_event_handler(primary, synchronous=True)
    informer.add_event_handler(enqueue_mapped(mapped.put, mapper, initial_list=True))
    informer.add_event_handler(other)
    informer.start()
    assert informer.wait_for_sync(WAIT)
    server.create(pod("slow"))
    assert entered.wait(WAIT)
    server.create(pod("next"))
    assert primary.wait_for(lambda ev: ("add", "next") in [(e[0], e[1]) for e in ev])
    assert other.wait_for(lambda ev: ("add", "next") in [(e[0], e[1]) for e in ev])
    assert informer.lister.get("default/next") is not None
    assert mapped.empty() and not informer.handlers_idle()
    release.set()
    assert [mapped.get(timeout=WAIT), mapped.get(timeout=WAIT)] == ["default/slow", "default/next"]
    assert _eventually(informer.handlers_idle)


def _eventually(condition) -> bool:
    """Wait (bounded, on an Event's timeout: no sleep as sync) until ``condition`` holds."""
    tick = threading.Event()
    for _ in range(int(WAIT * 1000)):
        if condition():
            return True
        tick.wait(0.001)
    return condition()


# -- validate: lookups of informers the config lacks ---------------------------------------------


LOOKUP_CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  namespaces: {apiVersion: v1, kind: Namespace}
  source: {apiVersion: v1, kind: Secret}
controllers:
  - name: c
    for: namespaces
    watches:
      - informer: source
        mapTo: {template: "%s"}
    reconcile:
      vars: {v: "%s"}
      actions:
        - log: "%s"
"""


def _plan(mapper: str = "''", var: str = "1", log: str = "x"):
    from kinrun.config import load_text
    from kinrun.plan import plan
    from kinrun.plugin_manager import new_plugin_manager
    return plan(load_text(LOOKUP_CONFIG % (mapper, var, log), file="c.yaml"), new_plugin_manager())


@pytest.mark.parametrize("mapper, var, log, where", [
    ("{{ list('namespace') }}", "1", "x", "c.yaml:10:9: controllers[0].watches[0]"),
    ("''", "get('sources', key)", "x", "c.yaml:13:17: controllers[0].reconcile.vars.v"),
    ("''", "1", "{{ by_index('nope', 'i', 'v') }}",
     "c.yaml:15:11: controllers[0].reconcile.actions[0]"),
])
def test_plan_refuses_a_lookup_of_an_informer_the_config_lacks(mapper, var, log, where):
    from kinrun.errors import ConfigError
    with pytest.raises(ConfigError, match="no informer") as caught:
        _plan(mapper, var, log)
    assert str(caught.value).startswith(where), str(caught.value)
    assert "known: namespaces, source" in str(caught.value)


@pytest.mark.parametrize("mapper, var, log", [
    ("{{ by_index('source', 'byNode', 'n1') }}", "1", "x"),
    ("''", "index_keys('namespaces', 'byOwner')", "x"),
    ("''", "1", "{{ by_index('source', 'namespaces', 'v') | length }}"),
])
def test_plan_refuses_a_literal_index_its_informer_lacks(mapper, var, log):
    """The informer exists but has no such index: every render would fail."""
    from kinrun.errors import ConfigError
    with pytest.raises(ConfigError, match="has no index") as caught:
        _plan(mapper, var, log)
    assert "(its indexes: namespace)" in str(caught.value), str(caught.value)


def test_plan_accepts_the_namespace_index_and_computed_index_names():
    _plan("{{ by_index('source', 'namespace', 'default') }}", "index_keys('source', key)",
          "{{ by_index('namespaces', controller, 'v') }}")


def test_a_bare_text_map_to_is_an_expression_and_the_error_says_how_to_write_a_key():
    from kinrun.errors import ConfigError
    with pytest.raises(ConfigError, match="'default' is undefined") as caught:
        _plan("default/web")
    assert """write a fixed key as "{{ 'default/web' }}\"""" in str(caught.value)
    assert _plan("{{ 'default/web' }}").controller("c").watches[0].mapper is not None


def test_plan_accepts_known_and_computed_informer_names():
    compiled = _plan("{{ list('namespaces') }}", "get('source', key)",
                     "{{ list(controller) | length }}")
    assert compiled.controller("c").watches[0].mapper.uses_lookups
