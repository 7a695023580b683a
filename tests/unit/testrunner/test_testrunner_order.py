"""kinrun test's fixed schedule: the turnstile releases watch events in resourceVersion order,
the race patterns of ported controllers give one result in 20 runs, and the case-file forms
that go with it (logs at a step or absent, updated with merge, the diff of extra requests)."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest

from kinrun.cache.listwatch import ObjectList, WatchEvent
from kinrun.errors import ConfigError
from kinrun.testing.casefile import ExpectedLog, load_test_file
from kinrun.testing.expectations import check_logs, check_requests, matches
from kinrun.testing.recording import LogLine, Recorder, Sent
from kinrun.testing.runner import prepare, run_case, transcript
from kinrun.testing.turnstile import Turnstile

RACES = Path(__file__).parent / "races"
RUNS = 20


# -- the turnstile ----------------------------------------------------------------------------


class _Ref:
    def __init__(self, resource: str) -> None:
        self.resource = resource


class _Feed:
    """An in-memory lister-watcher whose one watch yields what the test puts in ``events``."""

    def __init__(self) -> None:
        self.events: list[WatchEvent] = []
        self.arrived = threading.Event()
        self.closed = threading.Event()

    def list(self, **kwargs: object) -> ObjectList:
        return ObjectList([], "1")

    def watch(self, **kwargs: object) -> _Feed:
        return self

    def __iter__(self):
        for event in self.events:
            yield event
        self.arrived.set()
        self.closed.wait(5)

    def close(self) -> None:
        self.closed.set()


class _Client:
    def __init__(self, feeds: dict[str, _Feed]) -> None:
        self.feeds = feeds

    def lister_watcher(self, ref: _Ref, **kwargs: object) -> _Feed:
        return self.feeds[ref.resource]


def _event(rv: int, name: str, kind: str = "ADDED") -> WatchEvent:
    return WatchEvent(kind, {"metadata": {"name": name, "resourceVersion": str(rv)}})


def test_the_turnstile_releases_events_lowest_resource_version_first() -> None:
    """Two streams whose events arrive in any order reach their consumers in resourceVersion
    order, each once the previous one was handled (a BOOKMARK tells a stream is up to date)."""
    feeds = {"a": _Feed(), "b": _Feed()}
    feeds["a"].events = [_event(3, "a3"), _event(5, "a5"), _event(6, "", "BOOKMARK")]
    feeds["b"].events = [_event(2, "b2"), _event(4, "b4"), _event(6, "b6")]
    turnstile = Turnstile()
    client = turnstile.client(_Client(feeds))
    watchers = {name: client.lister_watcher(_Ref(name)) for name in feeds}
    handled: list[str] = []

    def consume(name: str) -> None:
        watchers[name].list()
        for event in watchers[name].watch(resource_version="1"):
            time.sleep(0.002 if name == "b" else 0)  # b handles slowly: order must not care
            if event.type == "ADDED":
                handled.append(event.object["metadata"]["name"])

    threads = [threading.Thread(target=consume, args=(n,), daemon=True) for n in ("b", "a")]
    for thread in threads:
        thread.start()
    assert turnstile.deliver(6, time.monotonic() + 5) == 5
    assert handled == ["b2", "a3", "b4", "a5", "b6"]
    for feed in feeds.values():
        feed.close()


def test_a_sealed_turnstile_gates_no_new_lister_watcher() -> None:
    """A reconcile's own LIST (made after the informers are wired) goes straight through."""
    feed = _Feed()
    turnstile = Turnstile()
    client = turnstile.client(_Client({"a": feed}))
    turnstile.seal()
    assert client.lister_watcher(_Ref("a")) is feed


# -- the race patterns: one result in 20 runs ---------------------------------------------------


@pytest.mark.parametrize("name", ["create-after-own-write", "two-controllers-one-key",
                                  "finalizer-once"])
def test_a_race_pattern_passes_every_run_with_one_transcript(name: str) -> None:
    """Each pattern that flaked on worker threads (a second create and its 409; two
    controllers logging in either order; a finalizer and a "handled once" annotation whose
    first-time branch ran twice) passes 20 of 20 runs, every run recording the same."""
    prepared = prepare(RACES / f"{name}.test.yaml")
    for case in prepared.tests.cases:
        seen = set()
        for _ in range(RUNS):
            recorder = Recorder()
            outcome = run_case(prepared, case, timeout=10, recorder=recorder)
            assert outcome.passed, [f.text() for f in outcome.failures]
            seen.add("\n".join(transcript(recorder)))
        assert len(seen) == 1, f"{case.name}: {len(seen)} different runs"


# -- logs: at a step, absent ------------------------------------------------------------------


def _line(step: int, message: str) -> LogLine:
    return LogLine("c", "ns/a", step, 0, "INFO", "kinrun.controller.c", message)


LINES = [_line(0, "first time"), _line(0, "handled"), _line(1, "handled")]


def test_a_log_entry_with_a_step_matches_only_lines_of_that_step() -> None:
    """{match, step}: in order and of that step; the failure names the step."""
    assert check_logs([ExpectedLog("handled", 1)], LINES) == []
    [failure] = check_logs([ExpectedLog("first", 1)], LINES)
    assert "logs[0] 'first' matched no line in step 1" in failure.message
    assert "[0] c ns/a: INFO first time" in failure.message


def test_an_absent_log_entry_fails_when_any_line_matches() -> None:
    """{absent}: no line (of its step) may match; it takes no part in the order."""
    assert check_logs(["handled", ExpectedLog("first", 1, absent=True), "handled"], LINES) == []
    [failure] = check_logs([ExpectedLog("first", absent=True)], LINES)
    assert "logs[0] 'first' must match no line, but matched [0] c ns/a: INFO first time" \
        in failure.message


# -- the case file: merge updates, log forms ------------------------------------------------------

HEAD = "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerTest\nconfig: c.yaml\ncases:\n"
CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers: {cms: {apiVersion: v1, kind: ConfigMap}}
controllers:
  - name: c
    for: cms
    reconcile:
      actions:
        - log: "{{ key }} color={{ obj.data.color }} shape={{ obj.data.shape | default('') }}"
"""


def _write(tmp_path: Path, cases: str) -> Path:
    (tmp_path / "c.yaml").write_text(CONFIG)
    path = tmp_path / "t.test.yaml"
    path.write_text(HEAD + cases)
    return path


def test_a_merge_update_patches_the_object_the_server_holds(tmp_path: Path) -> None:
    """updated: {key, merge} changes only what it names (null removes); a missing object
    fails the case with a reason."""
    path = _write(tmp_path, """\
  - name: merged
    given: [{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: default}, data: {color: red, shape: box}}]
    when:
      - updated: {key: default/a, merge: {data: {color: blue, shape: null}}}
    expect:
      logs: [{match: "^default/a color=red shape=box$", step: 0},
             {match: "^default/a color=blue shape=$", step: 1}]
  - name: missing
    when:
      - updated: {apiVersion: v1, kind: ConfigMap, key: default/b, merge: {data: {color: blue}}}
    expect: {}
""")
    prepared = prepare(path)
    merged, missing = (run_case(prepared, c, timeout=10) for c in prepared.tests.cases)
    assert merged.passed, [f.text() for f in merged.failures]
    assert "when[0] (updated ConfigMap default/b (merge)): ConfigMap default/b does not " \
           "exist (use added:)" in missing.failures[0].message


def test_updated_takes_to_or_key_and_merge_not_both(tmp_path: Path) -> None:
    """The schema refuses a step that mixes the two forms of updated:, at its location."""
    path = _write(tmp_path, """\
  - name: x
    when:
      - updated: {key: default/a, merge: {}, to: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}}
    expect: {}
""")
    with pytest.raises(ConfigError, match=r"t.test.yaml:7:\d+: cases\[0\].when\[0\].updated"):
        load_test_file(path)


def test_a_log_entry_that_is_not_a_regex_is_located_at_its_key(tmp_path: Path) -> None:
    """{absent: '('} is refused at the absent key's value."""
    path = _write(tmp_path, "  - name: x\n    expect: {logs: [{absent: '('}]}\n")
    with pytest.raises(ConfigError, match=r"cases\[0\].expect.logs\[0\].absent: '\(' is not "
                                          r"a regular expression"):
        load_test_file(path)


# -- the requests diff ----------------------------------------------------------------------------


def test_an_extra_request_equal_to_an_expected_one_is_shown_as_extra() -> None:
    """A second, identical create is marked as sent but not expected; the one that matched
    stays context (no '-' line: nothing expected is missing)."""
    request = {"verb": "create", "apiVersion": "v1", "kind": "ConfigMap",
               "namespace": "default", "name": "job", "body": {"data": {"run": "1"}}}
    sent = [Sent("c", "default/run", 0, 0, dict(request)),
            Sent("c", "default/run", 0, 1, dict(request), "ConflictError: 409")]
    [failure] = check_requests([{"key": "default/run", "verb": "create", "name": "job"}], sent)
    assert failure.message == "requests: 1 request(s) sent but not expected"
    lines = failure.diff.splitlines()
    assert lines[:6] == ["--- expected requests", "+++ sent requests", "@@ -1,3 +1,14 @@",
                         " - key: default/run", "   verb: create", "   name: job"]
    assert lines[6] == "+# sent but not expected:"
    assert not [line for line in lines[3:] if line.startswith("-")]


def _apply(name: str, seq: int, data: dict | None = None) -> Sent:
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}, **({"data": data} if data else {})}
    return Sent("c", "default/s", 0, seq, {"verb": "apply", "apiVersion": "v1",
                                           "kind": "ConfigMap", "namespace": "default",
                                           "name": name, "body": body})


def test_an_unexpected_request_in_the_middle_is_the_only_one_blamed() -> None:
    """Sent one, two, three; expected one, three: the diff says two was sent but not
    expected, in its place, and shows one and three as context (nothing about them)."""
    sent = [_apply("one", 0), _apply("two", 1), _apply("three", 2)]
    [failure] = check_requests([{"verb": "apply", "name": "one"},
                                {"verb": "apply", "name": "three"}], sent)
    assert failure.message == "requests: 1 request(s) sent but not expected"
    lines = failure.diff.splitlines()
    assert lines[3:6] == [" - verb: apply", "   name: one", "+# sent but not expected:"]
    assert lines[6:8] == ["+- key: default/s", "+  verb: apply"]
    assert lines[-2:] == [" - verb: apply", "   name: three"]
    assert not [line for line in lines[3:] if line.startswith("-")]
    assert [line for line in lines if "name:" in line] == [
        "   name: one", "+  name: two", "+      name: two", "   name: three"]


def test_a_request_missing_in_the_middle_is_the_only_one_blamed() -> None:
    """Expected one, two, three; sent one, three: only two is not sent (all '-')."""
    sent = [_apply("one", 0), _apply("three", 1)]
    [failure] = check_requests([{"name": "one"}, {"name": "two"}, {"name": "three"}], sent)
    assert failure.message == "requests: 1 expected request(s) not sent as listed"
    assert [line for line in failure.diff.splitlines()[3:] if line[0] != " "] == \
        ["-- name: two"]


def test_a_changed_request_beside_an_unexpected_one_shows_its_difference() -> None:
    """Expected one, three (data x); sent one, two, three (data y): three's body differs,
    reduced to what the case names, and two is the one sent but not expected."""
    sent = [_apply("one", 0), _apply("two", 1), _apply("three", 2, {"k": "y"})]
    [failure] = check_requests([{"name": "one"}, {"name": "three", "body": {"data": {"k": "x"}}}],
                               sent)
    assert failure.message == ("requests: 1 expected request(s) not sent as listed; "
                               "1 request(s) sent but not expected")
    lines = failure.diff.splitlines()[3:]
    at = lines.index("+# sent but not expected:")
    end = next(i for i in range(at + 1, len(lines)) if not lines[i].startswith("+"))
    assert "+  name: two" in lines[at:end] and lines[:at] == [" - name: one"]
    assert [line for line in lines[end:] if line[0] != " "] == ["-      k: x", "+      k: y"]


def _first_in_order_passes(expected: list[dict], sent: list[Sent]) -> bool:
    """The pass/fail rule as it was written before the diff aligned requests: each expected
    request matches the next unmatched request of some key, and none is left."""
    left = list(sent)
    for exp in expected:
        heads = [s for i, s in enumerate(left)
                 if all((t.controller, t.key) != (s.controller, s.key) for t in left[:i])]
        found = next((s for s in heads if matches(exp, s)), None)
        if found is None:
            return False
        left.remove(found)
    return not left


def test_aligning_for_the_diff_passes_and_fails_the_cases_it_did() -> None:
    """2000 random lists of expected and sent requests over two keys (orders, gaps, extras,
    repeats): a case fails exactly when the first-in-order rule fails it."""
    rng, outcomes = random.Random(7), set()
    for _ in range(2000):
        sent = [Sent("c", rng.choice("ab"), 0, i, {"name": rng.choice("xyz")})
                for i in range(rng.randint(0, 5))]
        expected = [{"name": s.request["name"], **({"key": s.key} if rng.random() < .5 else {})}
                    for s in sent if rng.random() < .9]
        expected += [{"name": rng.choice("xyzw")} for _ in range(rng.randint(0, 1))]
        if rng.random() < .5:
            rng.shuffle(expected)
        failed = bool(check_requests(expected, sent))
        assert failed == (not _first_in_order_passes(expected, sent)), (expected, sent)
        outcomes.add(failed)
    assert outcomes == {True, False}
