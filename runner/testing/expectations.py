"""Comparing what a case run recorded with what its ``expect`` says, and showing the
difference as a unified diff of YAML (expected vs sent).

Rules (the schema's descriptions say the same to users):

* ``requests``: every recorded request must be listed and every listed one sent. Each
  expected request matches the *next* unmatched request of some key (of its ``key:`` when
  given): order within a key is checked, order between keys is free. A field given must
  equal the request's; ``params`` and ``body`` must be *contained* (a mapping's given keys
  present with contained values, lists of equal length item by item, scalars equal);
  ``bodyEquals`` must equal the body. A request without ``error`` matches only a request
  that succeeded; ``error`` (a regular expression) only one that failed, its error text
  (``InvalidError: 422 Invalid: ...``: the error's class, code, reason, message) matching.
* ``results``: the last Result of each listed key (of the case's controller, or any).
* ``logs``: each regular expression must ``re.search`` a log line after the line the
  previous one matched (and of its ``step``, when given); an ``absent`` one must match no
  line (of its ``step``). Lines are in the order logged: the runner's order is fixed
  (``kinrun.testing.quiet``).

The diff aligns the two lists as a diff aligns lines (:func:`pair_requests`): each expected
request with the sent request it matched, which may be a later one of its key when the ones
skipped over match no later expected request (so a request sent in the middle unexpectedly
is the only one blamed, its neighbours still match); an expected request that matched none
is shown beside the closest one left (same key, verb, kind and name if any), reduced to the
fields and body keys the expectation names, so only what differs shows. Requests no
expectation matched are shown whole, in their place (after the request their key sent
before them), each marked ``# sent but not expected`` (:func:`request_diff` builds it pair by
pair, so an extra request identical to an expected one is shown as the extra, never as a
failed match). Pass or fail does not depend on the alignment: a case passes exactly when
every expected request is its key's next one, in order, and no request is left.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import yaml

from kinrun.redact import is_secret, redact_request, redact_strings
from kinrun.testing.casefile import Expect, ExpectedLog, ExpectedResult
from kinrun.testing.recording import LogLine, Reconciled, Sent

_FIELDS = ("key", "verb", "apiVersion", "kind", "namespace", "name", "subresource",
           "patchType")
_ABSENT = "<absent>"


@dataclass(frozen=True)
class Failure:
    """One failed part of a case: ``what`` (requests | results | logs | run), ``message``
    (one line), ``diff`` (a unified diff, or "")."""

    what: str
    message: str
    diff: str = ""

    def text(self) -> str:
        """The message, then the diff, as printed under a FAIL line."""
        return self.message + ("\n" + self.diff if self.diff else "")


def check(expect: Expect, sent: Sequence[Sent], results: Sequence[Reconciled],
          logs: Sequence[LogLine], where: str = "", *,
          show_secrets: bool = False, secrets: frozenset[str] = frozenset()) -> list[Failure]:
    """Every failed part of ``expect`` (empty: the case passes). ``show_secrets``: the diffs
    show Secret values (default: redacted on both sides, ``kinrun.redact``). ``secrets``:
    values (``kinrun.redact.secret_values``) replaced by ``<redacted>`` in every string of
    what the diffs show, before it is dumped as YAML (so however the dump quotes or folds
    it); matching compares the real values."""
    failures = []
    if expect.requests is not None:
        failures += check_requests(expect.requests, sent, show_secrets=show_secrets,
                                   secrets=secrets)
    if expect.results is not None:
        failures += check_results(expect.results, results, secrets=secrets)
    if expect.logs is not None:
        failures += check_logs(expect.logs, logs)
    return failures


# -- requests ---------------------------------------------------------------------------------


def contains(expected: Any, actual: Any) -> bool:
    """Whether ``expected`` is contained in ``actual`` (module docstring)."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            k in actual and contains(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and all(
            contains(e, a) for e, a in zip(expected, actual))
    return _scalar_equal(expected, actual)


def _scalar_equal(expected: Any, actual: Any) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    return expected == actual


def sent_view(sent: Sent) -> dict[str, Any]:
    """A recorded request as a test file would list it: ``key`` first, then the request."""
    view = {"key": sent.key, **sent.request}
    if sent.error:
        view["error"] = sent.error
    return view


def matches(expected: Mapping[str, Any], sent: Sent) -> bool:
    """Whether the expected request ``expected`` matches the recorded ``sent``: without
    ``error`` only a request that succeeded, with it only one that failed with an error
    whose text (``InvalidError: 422 Invalid: ...``) ``error`` (a regular expression) searches."""
    if "error" in expected:
        if sent.error is None or re.search(expected["error"], sent.error) is None:
            return False
    elif sent.error is not None:
        return False
    view = sent_view(sent)
    for name in _FIELDS:
        if name in expected and expected[name] != view.get(name):
            return False
    if "params" in expected and not contains(expected["params"], view.get("params") or {}):
        return False
    if "body" in expected and not contains(expected["body"], view.get("body")):
        return False
    return "bodyEquals" not in expected or expected["bodyEquals"] == view.get("body")


Pair = tuple[Mapping[str, Any], "Sent | None", bool]
"""(expected request, the sent one shown beside it or None, whether it matched in order)."""


def pair_requests(expected: Sequence[Mapping[str, Any]], sent: Sequence[Sent]
                  ) -> tuple[list[Pair], list[Sent]]:
    """Each expected request (in order) with the sent one it matched (matched: the next of
    its key, or a later one of that key when the requests skipped over match no later
    expected request: they are sent but not expected, an alignment as a diff's), else for
    the diff the closest one no expectation matched, or None. The case passes when every
    expected request matched at its key's next request and none is left: exactly when the
    first-in-order pairing (skipping nothing) matches them all. Returns (pairs, sent
    requests left unpaired)."""
    chains: dict[tuple[str, str], list[int]] = {}
    for i, s in enumerate(sent):
        chains.setdefault((s.controller, s.key), []).append(i)
    at = dict.fromkeys(chains, 0)
    found = [_next_match(exp, expected[i + 1:], sent, chains, at)
             for i, exp in enumerate(expected)]
    left = [s for i, s in enumerate(sent) if i not in found]
    pairs: list[Pair] = []
    for exp, hit in zip(expected, found):
        shown = sent[hit] if hit is not None else _closest(exp, left)
        if hit is None and shown is not None:
            left = [s for s in left if s is not shown]
        pairs.append((exp, shown, hit is not None))
    return pairs, left


def _next_match(exp: Mapping[str, Any], later: Sequence[Mapping[str, Any]],
                sent: Sequence[Sent], chains: Mapping[tuple[str, str], list[int]],
                at: dict[tuple[str, str], int]) -> int | None:
    """The index in ``sent`` of a request of some key (``chains``: key -> its indices) that
    ``exp`` matches, fewest skipped first (0: the key's next; then the key whose next was
    sent first), never skipping one that a ``later`` expected request matches; moves that
    key's position (``at``) past it."""
    best: tuple[int, int, tuple[str, str], int] | None = None
    for chain, items in chains.items():
        start = at[chain]
        j = next((j for j in range(start, len(items)) if matches(exp, sent[items[j]])), None)
        if j is None or any(matches(e, sent[k]) for k in items[start:j] for e in later):
            continue
        if best is None or (j - start, items[start]) < best[:2]:
            best = (j - start, items[start], chain, j)
    if best is None:
        return None
    *_, chain, j = best
    at[chain] = j + 1
    return chains[chain][j]


def _closest(exp: Mapping[str, Any], left: Sequence[Sent]) -> Sent | None:
    def score(s: Sent) -> int:
        view = sent_view(s)
        return sum(1 for f in _FIELDS if f in exp and exp[f] == view.get(f))
    best = max(left, key=score, default=None)
    return best if best is not None and score(best) > 0 else None


def check_requests(expected: Sequence[Mapping[str, Any]], sent: Sequence[Sent], *,
                   show_secrets: bool = False, secrets: frozenset[str] = frozenset()
                   ) -> list[Failure]:
    """The requests failure, or []. Unless ``show_secrets``, the diff shows the values of a
    Secret's data, stringData and last-applied annotation as their sizes, on both sides of
    a pair that is about a Secret (matching compared the real values); ``secrets`` (see
    :func:`check`) are hidden in every request shown."""
    pairs, extra = pair_requests(expected, sent)
    missing = sum(1 for _, _, ok in pairs if not ok)
    if not missing and not extra:
        return []
    hide = (lambda e, s: (e, s)) if show_secrets else _redacted_pair
    blocks = []
    for exp, sent_one, ok in pairs:
        shown_exp, shown_sent = hide(exp, sent_one)
        want = _expected_view(shown_exp)
        if shown_sent is None:
            blocks.append((want, None, ok))
        else:
            got = project(shown_exp, shown_sent) if ok or not matches(exp, sent_one) \
                else sent_view(shown_sent)
            blocks.append((want, got, ok))
    blocks = _with_extras(blocks, [p[1] for p in pairs], extra, sent,
                          lambda s: sent_view(hide({}, s)[1]))
    blocks = [(redact_strings(want, secrets), redact_strings(got, secrets), ok)
              for want, got, ok in blocks]
    parts = []
    if missing:
        parts.append(f"{missing} expected request(s) not sent as listed")
    if extra:
        parts.append(f"{len(extra)} request(s) sent but not expected")
    return [Failure("requests", "requests: " + "; ".join(parts), request_diff(blocks))]


Block = tuple["dict[str, Any] | None", "dict[str, Any] | None", bool]
"""(expected view or None: an extra request, sent view or None: nothing sent, matched)."""


def _with_extras(blocks: list[Block], shown: Sequence[Sent | None], extra: Sequence[Sent],
                 sent: Sequence[Sent], view: Any) -> list[Block]:
    """``blocks`` (one per expected request, ``shown`` the sent one beside each) with a block
    per ``extra`` request in its place: after the block of the request its key sent before
    it, else before the block of the one its key sent after it, else at the end."""
    order = {id(s): i for i, s in enumerate(sent)}
    rows = list(zip(blocks, shown))
    for s in extra:  # in sent order: an extra follows the extras of its key before it
        same = [(i, order[id(r)]) for i, (_, r) in enumerate(rows)
                if r is not None and (r.controller, r.key) == (s.controller, s.key)]
        before = [i for i, n in same if n < order[id(s)]]
        after = [i for i, n in same if n > order[id(s)]]
        at = before[-1] + 1 if before else after[0] if after else len(rows)
        rows.insert(at, ((None, view(s), False), s))
    return [block for block, _ in rows]


def request_diff(blocks: Sequence[Block]) -> str:
    """A unified diff (``-`` expected, ``+`` sent) built block by block, so a request is
    never aligned with another one's lines: a matched pair is context, a pair that did not
    match shows its differing lines, an expected request with nothing beside it is all
    ``-``, and a request no expectation matched is all ``+`` under a ``# sent but not
    expected`` line (also when it equals an expected one: a duplicate)."""
    body: list[str] = []
    for want, got, ok in blocks:
        a = dump([want]).splitlines() if want is not None else []
        b = dump([got]).splitlines() if got is not None else []
        if want is None:
            body += ["+# sent but not expected:"] + ["+" + line for line in b]
        elif ok:
            body += [" " + line for line in a]
        else:
            body += _line_diff(a, b)
    old = sum(1 for line in body if line[0] in " -")
    new = sum(1 for line in body if line[0] in " +")
    return "\n".join(["--- expected requests", "+++ sent requests",
                      f"@@ -1,{old} +1,{new} @@", *body])


def _line_diff(a: list[str], b: list[str]) -> list[str]:
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out += [" " + line for line in a[i1:i2]]
            continue
        out += ["-" + line for line in a[i1:i2]] + ["+" + line for line in b[j1:j2]]
    return out


def _redacted_pair(exp: Mapping[str, Any], sent: Sent | None
                   ) -> tuple[Mapping[str, Any], Sent | None]:
    """(expected request, sent request) with Secret values redacted in both when either is
    about a core/v1 Secret (an expectation may leave out its apiVersion)."""
    secret = exp.get("kind") == "Secret" and exp.get("apiVersion", "v1") == "v1"
    if sent is not None:
        secret = secret or is_secret(sent.request.get("apiVersion"), sent.request.get("kind"))
    if not secret:
        return exp, sent
    shown = dict(exp)
    for name in ("body", "bodyEquals"):
        if name in exp:
            shown[name] = redact_request({"apiVersion": "v1", "kind": "Secret",
                                          "body": exp[name]})["body"]
    if sent is not None:
        request = redact_request({**sent.request, "apiVersion": "v1", "kind": "Secret"})
        sent = replace(sent, request={**request, "apiVersion": sent.request.get("apiVersion"),
                                      "kind": sent.request.get("kind")})
    return shown, sent


def _expected_view(exp: Mapping[str, Any]) -> dict[str, Any]:
    order = [*_FIELDS, "params", "body", "bodyEquals", "error"]
    return {k: exp[k] for k in sorted(exp, key=lambda k: order.index(k) if k in order else 99)}


def project(exp: Mapping[str, Any], sent: Sent) -> dict[str, Any]:
    """``sent`` reduced to what ``exp`` names (fields, params/body keys), in its order."""
    view = sent_view(sent)
    out: dict[str, Any] = {}
    for name in _expected_view(exp):
        if name == "bodyEquals":
            out[name] = view.get("body", _ABSENT)
        elif name in ("body", "params"):
            out[name] = _project_value(exp[name], view.get(name, _ABSENT))
        else:
            out[name] = view.get(name, _ABSENT)
    if sent.error:
        out["error"] = sent.error
    return out


def _project_value(expected: Any, actual: Any) -> Any:
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return {k: _project_value(v, actual[k]) if k in actual else _ABSENT
                for k, v in expected.items()}
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [_project_value(e, a) for e, a in zip(expected, actual)]
    return actual


def unified(expected: Any, actual: Any, from_name: str, to_name: str) -> str:
    """A unified diff of two values dumped as YAML (``-`` expected, ``+`` actual)."""
    a, b = dump(expected).splitlines(), dump(actual).splitlines()
    lines = difflib.unified_diff(a, b, f"{from_name}", f"{to_name}", n=max(len(a), len(b)),
                                 lineterm="")
    return "\n".join(lines)


def dump(value: Any) -> str:
    """YAML, keys in the given order, block style."""
    return yaml.safe_dump(value, sort_keys=False, default_flow_style=False,
                          allow_unicode=True, width=100)


# -- results ----------------------------------------------------------------------------------


def result_view(result: Any) -> dict[str, Any]:
    """A Result as a test file would write it: ``{outcome, after, message}`` (only what
    applies)."""
    out: dict[str, Any] = {"outcome": result.outcome}
    if result.delay is not None:
        out["after"] = f"{result.delay:g}s"
    if result.error is not None:
        out["message"] = str(result.error)
    return out


def _result_ok(exp: ExpectedResult, result: Any) -> bool:
    if result.outcome != exp.outcome:
        return False
    if exp.after is not None and (result.delay is None or abs(result.delay - exp.after) > 1e-9):
        return False
    return exp.message is None or (result.error is not None
                                   and re.search(exp.message, str(result.error)) is not None)


def check_results(expected: Mapping[str, ExpectedResult], results: Sequence[Reconciled], *,
                  secrets: frozenset[str] = frozenset()) -> list[Failure]:
    """The results failure, or []; ``secrets`` (see :func:`check`) hidden in its diff."""
    last = {r.key: r.result for r in results}
    bad = [k for k, e in expected.items() if k not in last or not _result_ok(e, last[k])]
    if not bad:
        return []
    want = {k: _expected_result_view(expected[k]) for k in bad}
    got = {k: result_view(last[k]) if k in last else "<never reconciled>" for k in bad}
    return [Failure("results", f"results: {', '.join(bad)} ended otherwise",
                    unified(redact_strings(want, secrets), redact_strings(got, secrets),
                            "expected results", "last results"))]


def _expected_result_view(exp: ExpectedResult) -> dict[str, Any]:
    out: dict[str, Any] = {"outcome": exp.outcome}
    if exp.after is not None:
        out["after"] = f"{exp.after:g}s"
    if exp.message is not None:
        out["message"] = exp.message
    return out


# -- logs -------------------------------------------------------------------------------------


def log_view(line: LogLine) -> str:
    """``[step] controller key: LEVEL message`` as shown in a logs failure."""
    return f"[{line.step}] {line.controller or '-'} {line.key or '-'}: {line.level} {line.message}"


def check_logs(expected: Sequence[ExpectedLog | str], logs: Sequence[LogLine]
               ) -> list[Failure]:
    """The logs failure, or []: names the first present entry not found in order (after the
    line the previous one matched, in its step when it names one), or the first absent entry
    that matched a line."""
    at = 0
    for i, entry in enumerate(expected):
        entry = ExpectedLog(entry) if isinstance(entry, str) else entry
        regex = re.compile(entry.pattern)
        if entry.absent:
            found = next((j for j, line in enumerate(logs)
                          if _in_step(entry, line) and regex.search(line.message)), None)
            if found is not None:
                where = "" if entry.step is None else f" in step {entry.step}"
                return [Failure("logs", f"logs: logs[{i}] {entry.pattern!r} must match no "
                                f"line{where}, but matched {log_view(logs[found])}; the lines "
                                f"were:\n{_shown(logs)}")]
            continue
        found = next((j for j in range(at, len(logs))
                      if _in_step(entry, logs[j]) and regex.search(logs[j].message)), None)
        if found is None:
            later = "" if at == 0 else f" after line {at} ({log_view(logs[at - 1])})"
            step = "" if entry.step is None else f" in step {entry.step}"
            return [Failure("logs", f"logs: logs[{i}] {entry.pattern!r} matched no line{step}"
                            f"{later}; the lines were:\n{_shown(logs)}")]
        at = found + 1
    return []


def _in_step(entry: ExpectedLog, line: LogLine) -> bool:
    return entry.step is None or line.step == entry.step


def _shown(logs: Sequence[LogLine]) -> str:
    return "\n".join("  " + log_view(line) for line in logs) or "  (no log lines)"
