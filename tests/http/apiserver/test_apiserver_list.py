"""LIST: selectors, paging with continue tokens, resourceVersion semantics."""

from __future__ import annotations

import kubernetes
import pytest
from apiserver_http import call, configmap, pod

CM = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"


def names(reply) -> list[str]:
    return [i["metadata"]["name"] for i in reply.body["items"]]


@pytest.fixture
def labelled(embedded_server):
    """Four configmaps: a{env=prod,tier=web} b{env=dev,tier=web} c{env=prod} d{}."""
    embedded_server.load([configmap("a", labels={"env": "prod", "tier": "web"}),
                          configmap("b", labels={"env": "dev", "tier": "web"}),
                          configmap("c", labels={"env": "prod"}), configmap("d")])
    return embedded_server


@pytest.mark.parametrize("selector,expected", [
    pytest.param("env=prod", ["a", "c"], id="equals"),
    pytest.param("env==prod", ["a", "c"], id="double-equals"),
    pytest.param("env!=prod", ["b", "d"], id="not-equals-includes-missing"),
    pytest.param("env in (dev, prod),tier=web", ["a", "b"], id="in-and"),
    pytest.param("env notin (prod)", ["b", "d"], id="notin-includes-missing"),
    pytest.param("tier", ["a", "b"], id="exists"),
    pytest.param("!tier", ["c", "d"], id="not-exists"),
    pytest.param("", ["a", "b", "c", "d"], id="empty"),
])
def test_label_selectors(labelled, embedded_api_client, selector, expected):
    """Equality- and set-based label selectors select as Kubernetes does."""
    assert names(call(embedded_api_client, "GET", CM, query={"labelSelector": selector})) == expected


def test_label_selector_through_typed_client(labelled, embedded_api_client):
    """CoreV1Api.list_* passes label_selector through."""
    v1 = kubernetes.client.CoreV1Api(embedded_api_client)
    got = v1.list_namespaced_config_map("default", label_selector="env in (dev)")
    assert [i.metadata.name for i in got.items] == ["b"]


@pytest.mark.parametrize("selector", ["env in prod", "=x", "a b", "Bad Key!=x", "env,"])
def test_malformed_label_selector_is_bad_request(embedded_api_client, selector):
    """A label selector that does not parse answers 400 BadRequest."""
    r = call(embedded_api_client, "GET", CM, query={"labelSelector": selector})
    assert r.status == 400 and r.body["reason"] == "BadRequest"


def test_empty_value_label_selector_matches_empty_label(embedded_server, embedded_api_client):
    """``k=`` selects objects whose label k is the empty string."""
    embedded_server.load([configmap("a", labels={"k": ""}), configmap("b", labels={"k": "v"})])
    assert names(call(embedded_api_client, "GET", CM, query={"labelSelector": "k="})) == ["a"]


def test_field_selector_on_name_and_namespace(embedded_server, embedded_api_client):
    """metadata.name and metadata.namespace field selectors work on every kind."""
    embedded_server.load([configmap("a"), configmap("b"), configmap("a", namespace="kube-system")])
    r = call(embedded_api_client, "GET", "/api/v1/configmaps",
             query={"fieldSelector": "metadata.name=a,metadata.namespace!=default"})
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in r.body["items"]] == [
        ("kube-system", "a")]


def test_pod_field_selectors(embedded_server, embedded_api_client):
    """Pods also accept spec.nodeName and status.phase."""
    running = pod("r", nodeName="n1")
    running["status"] = {"phase": "Running"}
    embedded_server.load([running, pod("p")])
    by_node = call(embedded_api_client, "GET", PODS, query={"fieldSelector": "spec.nodeName=n1"})
    assert names(by_node) == ["r"]
    unscheduled = call(embedded_api_client, "GET", PODS, query={"fieldSelector": "spec.nodeName="})
    assert names(unscheduled) == ["p"]
    phase = call(embedded_api_client, "GET", PODS, query={"fieldSelector": "status.phase!=Running"})
    assert names(phase) == ["p"]


def test_unsupported_field_selector_is_bad_request(embedded_api_client):
    """A field the resource does not index answers 400, as the real server."""
    r = call(embedded_api_client, "GET", CM, query={"fieldSelector": "data.k=v"})
    assert r.status == 400 and r.body["message"] == (
        '"data.k" is not a known field selector: only "metadata.name", "metadata.namespace"')
    r = call(embedded_api_client, "GET", CM, query={"fieldSelector": "status.phase=Running"})
    assert r.status == 400
    r = call(embedded_api_client, "GET", PODS, query={"fieldSelector": "spec.foo=x"})
    assert r.status == 400 and r.body["message"] == "field label not supported: spec.foo"


def test_list_across_namespaces(embedded_server, embedded_api_client):
    """The cluster-wide path lists every namespace, in namespace/name order."""
    embedded_server.load([configmap("b"), configmap("a", namespace="kube-system"), configmap("a")])
    r = call(embedded_api_client, "GET", "/api/v1/configmaps")
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in r.body["items"]] == [
        ("default", "a"), ("default", "b"), ("kube-system", "a")]
    assert r.body["kind"] == "ConfigMapList" and r.body["apiVersion"] == "v1"


def test_list_resource_version_is_latest(embedded_server, embedded_api_client):
    """The list's metadata.resourceVersion is the store's current one."""
    embedded_server.load([configmap("a")])
    r = call(embedded_api_client, "GET", CM)
    assert r.body["metadata"]["resourceVersion"] == str(embedded_server.store.resource_version)


def test_paging_with_limit_and_continue(embedded_server, embedded_api_client):
    """limit pages the list; continue resumes; remainingItemCount counts what is left."""
    embedded_server.load([configmap(f"cm-{i:02d}") for i in range(7)])
    first = call(embedded_api_client, "GET", CM, query={"limit": 3})
    assert names(first) == ["cm-00", "cm-01", "cm-02"]
    assert first.body["metadata"]["remainingItemCount"] == 4
    token = first.body["metadata"]["continue"]
    second = call(embedded_api_client, "GET", CM, query={"limit": 3, "continue": token})
    assert names(second) == ["cm-03", "cm-04", "cm-05"]
    third = call(embedded_api_client, "GET", CM, query={"limit": 3, "continue": second.body["metadata"]["continue"]})
    assert names(third) == ["cm-06"]
    assert "continue" not in third.body["metadata"]
    assert third.body["metadata"]["resourceVersion"] == first.body["metadata"]["resourceVersion"]


def test_continue_serves_a_consistent_snapshot(embedded_server, embedded_api_client):
    """Pages after the first show the state at the first page's resourceVersion."""
    embedded_server.load([configmap(f"cm-{i}") for i in range(4)])
    first = call(embedded_api_client, "GET", CM, query={"limit": 2})
    embedded_server.store.delete("v1", "ConfigMap", "cm-3", "default")
    embedded_server.load([configmap("cm-9")])
    rest = call(embedded_api_client, "GET", CM, query={"limit": 10, "continue": first.body["metadata"]["continue"]})
    assert names(rest) == ["cm-2", "cm-3"]


def test_resource_version_with_continue_is_bad_request(embedded_server, embedded_api_client):
    """A continue token cannot be combined with a resourceVersion."""
    embedded_server.load([configmap("a"), configmap("b")])
    token = call(embedded_api_client, "GET", CM, query={"limit": 1}).body["metadata"]["continue"]
    r = call(embedded_api_client, "GET", CM, query={"continue": token, "resourceVersion": "5"})
    assert r.status == 400


def test_resource_version_zero_ignores_limit(embedded_server, embedded_api_client):
    """resourceVersion=0 is served whole (as from the watch cache), without continue."""
    embedded_server.load([configmap(f"cm-{i}") for i in range(5)])
    r = call(embedded_api_client, "GET", CM, query={"limit": 2, "resourceVersion": "0"})
    assert len(r.body["items"]) == 5 and "continue" not in r.body["metadata"]


def test_exact_resource_version_lists_past_state(embedded_server, embedded_api_client):
    """resourceVersionMatch=Exact rebuilds the list as it was at that resourceVersion."""
    embedded_server.load([configmap("a")])
    rv = call(embedded_api_client, "GET", CM).body["metadata"]["resourceVersion"]
    embedded_server.load([configmap("b")])
    embedded_server.store.delete("v1", "ConfigMap", "a", "default")
    past = call(embedded_api_client, "GET", CM, query={"resourceVersion": rv, "resourceVersionMatch": "Exact"})
    assert names(past) == ["a"] and past.body["metadata"]["resourceVersion"] == rv
    assert names(call(embedded_api_client, "GET", CM, query={"resourceVersion": rv})) == ["b"]


def test_exact_resource_version_older_than_history_is_expired(embedded_api_client):
    """An exact list older than the retained history answers 410 Expired."""
    from kinrun.testing.apiserver import EmbeddedAPIServer
    with EmbeddedAPIServer(history_size=2) as srv:
        client = kubernetes.config.new_client_from_config(config_file=srv.kubeconfig_path)
        srv.load([configmap("a")])
        old = str(srv.store.resource_version)
        srv.load([configmap(f"x{i}") for i in range(5)])
        r = call(client, "GET", CM, query={"resourceVersion": old, "resourceVersionMatch": "Exact"})
        assert r.status == 410 and r.body["reason"] == "Expired"
        client.close()


def test_future_resource_version_is_too_large(embedded_api_client):
    """A resourceVersion newer than the store's answers 504 Timeout."""
    r = call(embedded_api_client, "GET", CM, query={"resourceVersion": "999999"})
    assert r.status == 504 and r.body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"


@pytest.mark.parametrize("query", [
    pytest.param({"resourceVersionMatch": "Exact"}, id="match-without-rv"),
    pytest.param({"resourceVersion": "0", "resourceVersionMatch": "Exact"}, id="exact-zero"),
    pytest.param({"resourceVersion": "abc"}, id="not-a-number"),
    pytest.param({"limit": "many"}, id="bad-limit"),
])
def test_bad_list_parameters_are_bad_request(embedded_api_client, query):
    """Malformed list options answer 400."""
    assert call(embedded_api_client, "GET", CM, query=query).status == 400


def test_malformed_continue_token_is_bad_request(embedded_api_client):
    """A continue token that does not decode answers 400."""
    assert call(embedded_api_client, "GET", CM, query={"continue": "garbage!"}).status == 400


def test_large_list_round_trips(embedded_server, embedded_api_client):
    """A list of 2,000 pods decodes completely with every item's resourceVersion."""
    embedded_server.store.create_many(pod(f"p-{i:05d}") for i in range(2000))
    r = call(embedded_api_client, "GET", PODS)
    assert len(r.body["items"]) == 2000
    assert all(i["metadata"]["resourceVersion"] for i in r.body["items"])
