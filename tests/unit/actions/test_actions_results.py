"""Results of earlier actions: which actions read them (compile time), when they render (after
the action they read has executed), what render shows without a server, and create."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kinrun.actions import compile_actions
from kinrun.actions.errors import RenderError
from kinrun.actions.program import ActionFailed
from kinrun.actions.results import Placeholder, result_reads
from kinrun.errors import ConfigError
from kinrun.kube.request import ApiRequest

OBJ = {"apiVersion": "v1", "kind": "ConfigMap",
       "metadata": {"name": "cm", "namespace": "ns", "uid": "u-cm"}, "data": {}}
JOB = ("apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: 'run-'}\n")
READS_UID = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ref}\n"
             "data: {job: \"{{ results['make-job'].metadata.name }}\","
             " uid: \"{{ results['make-job'].metadata.uid }}\"}\n")


class Server:
    """Answers a create with a generated name and uid; records the order of everything."""

    def __init__(self) -> None:
        self.sent: list[ApiRequest] = []

    def execute(self, req: ApiRequest) -> dict[str, Any]:
        self.sent.append(req)
        if req.verb == "create":
            meta = {**req.body["metadata"], "name": "run-x7k2p", "uid": "uid-of-run"}
            return {**req.body, "metadata": meta}
        return req.body


def test_result_reads_finds_the_names_read() -> None:
    assert result_reads([("{{ results.a.metadata.uid }}", False)]) == {"a"}
    assert result_reads([("results['make-x'] is none", True)]) == {"make-x"}
    assert result_reads([("{{ obj.metadata.name }}", False), ("true", True)]) == frozenset()
    assert result_reads([("{{ results[obj.data.which] }}", False)]) is None
    assert result_reads([("{% for r in results %}{{ r }}{% endfor %}", False)]) is None


def test_a_later_action_reads_what_the_server_answered() -> None:
    """create (generateName) then apply with the created Job's name and uid: the apply
    renders after the create was answered."""
    prog = compile_actions([{"name": "make-job", "create": {"manifest": JOB}},
                            {"apply": {"manifest": READS_UID}}], controller="c")
    server = Server()
    prog.run(key="ns/cm", obj=OBJ, client=server)
    assert [r.verb for r in server.sent] == ["create", "apply"]
    assert server.sent[0].body["metadata"]["generateName"] == "run-"
    assert server.sent[0].body["metadata"]["ownerReferences"][0]["uid"] == "u-cm"
    assert server.sent[1].body["data"] == {"job": "run-x7k2p", "uid": "uid-of-run"}
    assert server.sent[0].summary() == "create Job ns/run-<generated>"


def test_actions_that_read_no_result_fail_before_anything_is_sent() -> None:
    """A template error in an action that reads no result is found before the first request,
    even when it comes after a reading action."""
    prog = compile_actions([{"name": "make-job", "create": {"manifest": JOB}},
                            {"apply": {"manifest": READS_UID}},
                            {"log": "{{ obj.metadata.missing.x }}"}], controller="c")
    server = Server()
    with pytest.raises(RenderError, match=r"action \[2\]"):
        prog.run(key="ns/cm", obj=OBJ, client=server)
    assert server.sent == []


def test_a_reading_action_that_fails_does_so_after_the_earlier_sends() -> None:
    """Not atomic: a reading action's failure (here its fail) comes after what the actions
    before it sent; the actions after it are not sent."""
    prog = compile_actions([
        {"name": "make-job", "create": {"manifest": JOB}},
        {"fail": {"message": "got {{ results['make-job'].metadata.name }}"},
         "when": "results['make-job'].metadata.uid == 'uid-of-run'"},
        {"apply": {"manifest": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: after}"}},
    ], controller="c")
    server = Server()
    with pytest.raises(ActionFailed, match="got run-x7k2p"):
        prog.run(key="ns/cm", obj=OBJ, client=server)
    assert [r.verb for r in server.sent] == ["create"]


def test_a_stop_before_a_reading_action_ends_the_run_there() -> None:
    prog = compile_actions([{"name": "make-job", "create": {"manifest": JOB}},
                            {"stop": "enough"},
                            {"apply": {"manifest": READS_UID}}], controller="c")
    server = Server()
    prog.run(key="ns/cm", obj=OBJ, client=server)
    assert [r.verb for r in server.sent] == ["create"]


def test_render_shows_placeholders_where_no_server_answered() -> None:
    prog = compile_actions([{"name": "make-job", "create": {"manifest": JOB}},
                            {"apply": {"manifest": READS_UID}}], controller="c")
    steps = prog.render(key="ns/cm", obj=OBJ).describe()
    assert steps[1]["body"]["data"] == {
        "job": "<result of action 'make-job' at metadata.name>",
        "uid": "<result of action 'make-job' at metadata.uid>"}
    assert str(Placeholder("x")["a"].b) == "<result of action 'x' at a.b>"


def test_render_accepts_a_field_that_is_exactly_one_result_expression() -> None:
    """A value that is exactly ``{{ results[...] }}`` keeps the Placeholder itself (not its
    text): status (which JSON-checks what it renders), patch, event and delete take it, and
    what render prints is plain data (YAML-dumpable), the create showing its generateName."""
    whole = "{{ results['make-job'].metadata.name }}"
    prog = compile_actions([
        {"name": "make-job", "create": {"manifest": JOB}},
        {"status": {"fields": {"lastRun": whole}}},
        {"patch": {"patch": {"metadata": {"annotations": {"run": whole}}}}},
        {"event": {"reason": "Ran", "message": whole}},
        {"delete": {"target": {"apiVersion": "batch/v1", "kind": "Job", "name": whole}}},
    ], controller="c")
    steps = prog.render(key="ns/cm", obj=OBJ).describe()
    text = "<result of action 'make-job' at metadata.name>"
    assert yaml.safe_load(yaml.safe_dump(steps)) == steps
    assert steps[0]["generateName"] == "run-" and "name" not in steps[0]
    assert steps[1]["subresource"] == "status" and steps[1]["body"]["status"]["lastRun"] == text
    assert steps[2]["body"]["metadata"]["annotations"]["run"] == text
    assert steps[3]["body"]["message"] == text
    assert steps[4]["verb"] == "delete" and steps[4]["name"] == text


@pytest.mark.parametrize("actions,match", [
    ([{"log": "{{ results.nope.x }}"}], "no earlier action is named 'nope'"),
    ([{"log": "{{ results.later.x }}"}, {"name": "later", "log": "x"}], "runs at or after"),
    ([{"name": "a", "log": "x"}, {"name": "a", "log": "y"}, {"log": "{{ results.a }}"}],
     "2 earlier actions"),
])
def test_reading_an_unknown_or_later_action_is_a_config_error(actions, match) -> None:
    with pytest.raises(ConfigError, match=match):
        compile_actions(actions, controller="c")


def test_vars_cannot_read_results() -> None:
    with pytest.raises(ConfigError, match="vars are evaluated before any action"):
        compile_actions([{"log": "x"}], controller="c", vars={"uid": "results.a.uid"})


def test_create_needs_a_name_or_generate_name() -> None:
    prog = compile_actions([{"create": {"manifest": "apiVersion: v1\nkind: ConfigMap\n"
                                        "metadata: {labels: {a: b}}"}}], controller="c")
    with pytest.raises(RenderError, match="name or a generateName"):
        prog.render(key="ns/cm", obj=OBJ)
