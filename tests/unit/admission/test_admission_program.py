"""kinrun.admission.program: webhooks compiled at validate, and AdmissionReviews answered as
the API server expects (deny with causes, warnings, one JSON patch, failurePolicy on errors)."""

from __future__ import annotations

import base64
import json
from typing import Any

import jsonpatch
import pytest

from kinrun.config import load_text
from kinrun.errors import ConfigError
from kinrun.plan import plan

HEAD = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  quotas: {apiVersion: v1, kind: ConfigMap}
controllers: [{name: c, for: quotas, reconcile: {actions: [{log: hi}]}}]
admission:
  webhooks:
"""

QUOTA = """\
    - name: replicas.quota.example.com
      type: validating
      rules: [{apiGroups: [apps], apiVersions: [v1], resources: [deployments], operations: [CREATE, UPDATE]}]
      validate:
        - when: "object.spec.replicas > (get('quotas', namespace ~ '/quota').data.max | int)"
          deny: "replicas {{ object.spec.replicas }} exceeds the quota"
          field: spec.replicas
        - when: "'team' not in (object.metadata.labels | default({}))"
          warn: "no team label"
"""

DEFAULTS = """\
    - name: defaults.example.com
      type: mutating
      failurePolicy: {policy}
      rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
      mutate:
        - when: "'team' not in (object.metadata.labels | default({}))"
          mergePatch: |
            metadata: {labels: {team: "{{ userInfo.username }}"}}
        - jsonPatch: |
            - {op: add, path: /metadata/annotations, value: {seen-by: kinrun}}
        - when: "object.metadata.name == 'broken'"
          jsonPatch: "[{op: remove, path: /no/such/path}]"
"""


class Listers(dict):
    """Informer name -> a lister with get(key)."""


class Lister:
    def __init__(self, objects: dict[str, Any]) -> None:
        self.objects = objects

    def get(self, key: str) -> Any:
        return self.objects.get(key)

    def list(self, namespace: Any = None) -> list[Any]:
        return list(self.objects.values())


def program(body: str):
    return plan(load_text(HEAD + body, file="c.yaml")).admission


def review(obj: dict[str, Any], **request: Any) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u-1", "operation": "CREATE", "object": obj,
                        "namespace": "team-a", "userInfo": {"username": "alice"}, **request}}


def deployment(replicas: int, labels: dict | None = None) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "team-a", "labels": labels or {}},
            "spec": {"replicas": replicas}}


QUOTAS = Listers(quotas=Lister({"team-a/quota": {"data": {"max": "3"}}}))


def test_a_deny_names_the_field_and_ends_the_review() -> None:
    """Over the quota (read from the cache): allowed false, 403, the message, a cause on
    spec.replicas; the warn after it does not run; the uid is echoed."""
    hook = program(QUOTA).webhook("/validate/replicas.quota.example.com")
    answer = hook.review(review(deployment(5)), QUOTAS)
    response = answer["response"]
    assert (answer["apiVersion"], answer["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    assert response["uid"] == "u-1" and response["allowed"] is False
    assert response["status"] == {"code": 403, "reason": "Forbidden",
                                  "message": "replicas 5 exceeds the quota",
                                  "details": {"causes": [{"field": "spec.replicas",
                                                          "message": "replicas 5 exceeds the quota"}]}}
    assert "warnings" not in response


def test_within_quota_is_allowed_with_a_warning() -> None:
    """Under the quota: allowed, with the warn rule's warning."""
    hook = program(QUOTA).webhook("/validate/replicas.quota.example.com")
    response = hook.review(review(deployment(2)), QUOTAS)["response"]
    assert response == {"uid": "u-1", "allowed": True, "warnings": ["no team label"]}


def test_patches_chain_and_give_one_json_patch() -> None:
    """mergePatch then jsonPatch: the answer's JSON patch turns the object sent into the
    result of both."""
    hook = program(DEFAULTS.replace("{policy}", "Fail")).webhook("/mutate/defaults.example.com")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}
    response = hook.review(review(pod))["response"]
    assert response["allowed"] is True and response["patchType"] == "JSONPatch"
    ops = json.loads(base64.b64decode(response["patch"]))
    assert jsonpatch.apply_patch(pod, ops)["metadata"] == {
        "name": "p", "labels": {"team": "alice"}, "annotations": {"seen-by": "kinrun"}}


def test_nothing_to_change_sends_no_patch() -> None:
    """A mutating webhook whose patches leave the object as it was answers without a patch."""
    hook = program(DEFAULTS.replace("{policy}", "Fail")).webhook("/mutate/defaults.example.com")
    pod = {"metadata": {"name": "p", "labels": {"team": "x"}, "annotations": {"seen-by": "kinrun"}}}
    assert hook.review(review(pod))["response"] == {"uid": "u-1", "allowed": True}


@pytest.mark.parametrize("policy,allowed", [("Fail", False), ("Ignore", True)])
def test_a_failing_rule_follows_the_failure_policy(policy: str, allowed: bool) -> None:
    """A patch that does not apply: Fail denies with 500 naming the rule; Ignore allows the
    object unchanged with a warning; neither quotes the object."""
    hook = program(DEFAULTS.replace("{policy}", policy)).webhook("/mutate/defaults.example.com")
    pod = {"metadata": {"name": "broken", "labels": {"secret-ish": "hunter2"}}}
    response = hook.review(review(pod))["response"]
    assert response["allowed"] is allowed and "patch" not in response
    text = json.dumps(response)
    assert "mutate[2]" in text and "hunter2" not in text
    if not allowed:
        assert response["status"]["code"] == 500


def test_not_a_review_is_a_value_error() -> None:
    """A body without request.uid cannot be answered (the server says 400)."""
    hook = program(QUOTA).webhook("/validate/replicas.quota.example.com")
    with pytest.raises(ValueError):
        hook.review({"kind": "AdmissionReview"})


@pytest.mark.parametrize("body,message", [
    (QUOTA.replace("warn:", "mergePatch:"), "need a mutating webhook"),
    (QUOTA.replace("validate:", "mutate:"), "takes validate:, not mutate:"),
    (QUOTA.replace("        - when: \"'team'", "        - name: x\n        - when: \"'team'"),
     "a rule does nothing"),
    (QUOTA.replace("{{ object.spec.replicas }}", "{{ object.spec.replicas "), "syntax error"),
    (QUOTA + QUOTA, "two webhooks are named"),
], ids=["patch-in-validating", "wrong-list", "empty-rule", "syntax", "duplicate"])
def test_validate_refuses_bad_webhooks_at_their_line(body: str, message: str) -> None:
    """Each mistake is a ConfigError at c.yaml:LINE."""
    with pytest.raises(ConfigError) as err:
        program(body)
    assert message in str(err.value) and str(err.value).startswith("c.yaml:")


def test_a_webhook_name_must_be_a_three_part_dns_name() -> None:
    """The API server refuses a webhook name with fewer than three segments: so does the
    schema."""
    with pytest.raises(ConfigError, match="three segments"):
        program(QUOTA.replace("replicas.quota.example.com", "quota"))
