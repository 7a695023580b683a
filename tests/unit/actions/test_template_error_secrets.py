"""Template errors never quote a value: rendering a Secret, every error path names the
expression and the type and size of the value, so neither the value nor a transformed form of
it (a prefix, a split piece, upper case, reversed, URL-encoded, base64) reaches the error text,
its traceback, the action's RenderError, a key mapper's warning or ``kinrun render`` (issue 26,
docs/secrets.md)."""

from __future__ import annotations

import base64
import logging
import traceback
import urllib.parse
from pathlib import Path

import pytest
import yaml
from actions_fakes import FakeLister

from kinrun import cli
from kinrun.actions import RenderError, compile_actions
from kinrun.hooks import ReconcileContext
from kinrun.templating import (TemplateEngine, TemplateRenderError, compile_key_mapper,
                              lookup_functions)

VALUE = "Hunter2-Zebra9/Qx7wv@k8s"
DOC = "settings: [" + VALUE   # YAML that does not parse: the parser's message quotes it


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


FORMS = {
    "value": VALUE, "stored (base64)": _b64(VALUE), "upper": VALUE.upper(),
    "lower": VALUE.lower(), "reversed": VALUE[::-1], "prefix": VALUE[:10],
    "split piece": VALUE.split("-")[0], "other split piece": VALUE.split("/")[1],
    "url-encoded": urllib.parse.quote(VALUE, safe=""), "base64 of upper": _b64(VALUE.upper()),
}
"""What must never appear in an error text."""

SECRET = {"apiVersion": "v1", "kind": "Secret",
          "metadata": {"name": "db", "namespace": "default"},
          "data": {"password": _b64(VALUE), "doc": _b64(DOC)}}

PW = "(obj.data.password | b64decode)"

ERROR_PATHS = {
    "to_datetime": f"{{{{ {PW} | to_datetime }}}}",
    "isoformat": f"{{{{ {PW} | isoformat }}}}",
    "duration": f"{{{{ {PW} | duration }}}}",
    "duration-upper": f"{{{{ {PW} | upper | duration }}}}",
    "by_index-built-index": f"{{{{ by_index('pods', {PW}, 'x') }}}}",
    "list-built-name": f"{{{{ list('cms-' ~ {PW}) }}}}",
    "get-built-name": f"{{{{ get({PW} | upper, 'x') }}}}",
    "undefined-key": f"{{{{ obj.metadata[{PW}] }}}}",
    "undefined-key-stored": "{{ obj.metadata[obj.data.password] }}",
    "undefined-attr-reversed": f"{{{{ obj.metadata | attr({PW} | reverse | join) }}}}",
    "undefined-split-piece": f"{{{{ obj.metadata[{PW}.split('-')[0]] }}}}",
    "undefined-url-encoded": f"{{{{ obj.metadata[{PW} | urlencode] }}}}",
    "undefined-prefix": f"{{{{ obj.metadata[{PW}[:10]] }}}}",
    "undefined-base64-upper": f"{{{{ obj.metadata[{PW} | upper | b64encode] }}}}",
    "undefined-in-literal": f"{{{{ {{'a': 1}}[{PW}] }}}}",
    "undefined-list-attr": f"{{{{ [1][{PW}] }}}}",
    "map-attribute": f"{{{{ [obj.metadata] | map(attribute={PW}) | join }}}}",
    "sort-attribute": f"{{{{ [obj.metadata, obj.data] | sort(attribute={PW} | lower) }}}}",
    "no-such-filter": f"{{{{ [1, 2] | map({PW}) | list }}}}",
    "no-such-test": f"{{{{ [1, 2] | select({PW} | upper) | list }}}}",
    "format-field-name": f"{{{{ ('{{' ~ {PW} ~ '}}').format() }}}}",
    "percent-key": f"{{{{ ('%(' ~ {PW} ~ ')s') % {{}} }}}}",
    "from_yaml": "{{ obj.data.doc | b64decode | from_yaml }}",
    "from_json": f"{{{{ {PW} | from_json }}}}",
    "b64decode-twice": f"{{{{ {PW} | b64decode }}}}",
    "str-index": f"{{{{ {PW}.index('zzz') }}}}",
    "type-error": f"{{{{ {PW} + 1 }}}}",
    "undefined-name": "{{ nothing_here }}",
}
"""Each renders while reconciling the Secret and fails."""


def _listers() -> dict[str, FakeLister]:
    return {"pods": FakeLister([], {"byNode": lambda o: []})}


def _assert_no_form(text: str) -> None:
    leaked = [name for name, form in FORMS.items() if form in text]
    assert not leaked, f"{leaked} in {text!r}"


@pytest.mark.parametrize("source", ERROR_PATHS.values(), ids=ERROR_PATHS.keys())
def test_a_template_error_never_quotes_the_value(source: str) -> None:
    """The error (message, repr, and the traceback as a log would print it) names the type
    and size, never the value or a transformed form of it."""
    engine = TemplateEngine()
    with pytest.raises(TemplateRenderError) as info:
        engine.template(source).render({"obj": SECRET, **lookup_functions(_listers())})
    err = info.value
    _assert_no_form(str(err) + repr(err) + err.detail)
    _assert_no_form("".join(traceback.format_exception(err)))


@pytest.mark.parametrize("source", ERROR_PATHS.values(), ids=ERROR_PATHS.keys())
def test_an_action_render_error_never_quotes_the_value(source: str) -> None:
    """The actions' RenderError (what the text and JSON logs, dry-run and ``render`` print)
    holds no form of the value either."""
    prog = compile_actions([{"log": source}], controller="copier")
    ctx = ReconcileContext(controller="copier", key="default/db", listers=_listers())
    with pytest.raises(RenderError) as info:
        prog.render(key="default/db", obj=SECRET, ctx=ctx)
    _assert_no_form(str(info.value) + "".join(traceback.format_exception(info.value)))


def test_errors_stay_readable_for_what_the_template_wrote() -> None:
    """What the template itself wrote (a misspelt key, an informer name) is still quoted, and
    the value's type and size are given instead of the value."""
    engine = TemplateEngine()
    with pytest.raises(TemplateRenderError, match="'dict object' has no attribute 'metdata'"):
        engine.template("{{ obj.metdata.name }}").render({"obj": SECRET})
    with pytest.raises(TemplateRenderError,
                       match="'dict object' has no attribute <a str of 24 characters>"):
        engine.template(f"{{{{ obj.metadata[{PW}] }}}}").render({"obj": SECRET})
    with pytest.raises(TemplateRenderError, match="to_datetime: cannot parse a str of 24 "
                                                  "characters as an RFC 3339 timestamp"):
        engine.template(f"{{{{ {PW} | to_datetime }}}}").render({"obj": SECRET})
    with pytest.raises(TemplateRenderError, match=r"unknown informer 'cmz' \(known: pods\)"):
        engine.template("{{ list('cmz') }}").render(lookup_functions(_listers()))
    with pytest.raises(TemplateRenderError,
                       match="by_index: informer 'pods' has no index 'byNoed'"):
        engine.template("{{ by_index('pods', 'byNoed', 'x') }}").render(
            lookup_functions(_listers()))
    with pytest.raises(TemplateRenderError, match=r"from_yaml: ParserError: did not find "
                                                r"expected ',' or ']' \(line \d+, column \d+\)"):
        engine.template("{{ obj.data.doc | b64decode | from_yaml }}").render({"obj": SECRET})


def test_a_key_mapper_warning_never_quotes_the_value(caplog) -> None:
    """A key mapper that fails on a Secret logs a warning without the value."""
    mapper = compile_key_mapper(f"{{{{ list('x-' ~ {PW}) }}}}").bind(_listers())
    with caplog.at_level(logging.WARNING, logger="kinrun.templating"):
        assert mapper(SECRET) == []
    assert "unknown informer" in caplog.text
    _assert_no_form(caplog.text)


CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  secrets: {apiVersion: v1, kind: Secret}
controllers:
  - name: copier
    for: secrets
    reconcile:
      actions:
        - log: %r
"""


@pytest.mark.parametrize("path", ["to_datetime", "duration", "by_index-built-index",
                                  "list-built-name", "undefined-key", "from_yaml"])
def test_kinrun_render_prints_no_form_of_the_value(tmp_path: Path, capsys, caplog,
                                                   path: str) -> None:
    """``kinrun render`` of a Secret whose action fails prints, and logs, no form of it."""
    (tmp_path / "c.yaml").write_text(CONFIG % ERROR_PATHS[path])
    secret = dict(SECRET, metadata={"name": "db", "namespace": "default"})
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(secret))
    caplog.set_level(logging.DEBUG)
    code = cli.main(["render", str(tmp_path / "c.yaml"), "--object",
                     str(tmp_path / "s.yaml")])
    out = capsys.readouterr()
    assert code != 0
    _assert_no_form(out.out + out.err + caplog.text)


def test_a_yaml_error_gives_its_problem_and_position_not_its_snippet() -> None:
    """PyYAML's pure-Python loader quotes a snippet of the document in its errors (libyaml's
    does not): a filter that parses with it fails with the problem and the position only."""
    engine = TemplateEngine(extra_filters={
        "py_yaml": lambda text: yaml.load(text, Loader=yaml.SafeLoader)})  # noqa: S506
    for doc in (DOC, "a: *" + VALUE.split("/")[0], "k: " + VALUE + ": [x"):
        with pytest.raises(TemplateRenderError, match=r"py_yaml: \w+Error: .*\(line \d+, "
                                                      r"column \d+\)") as info:
            engine.template("{{ d | py_yaml }}").render({"d": doc})
        _assert_no_form(str(info.value) + "".join(traceback.format_exception(info.value)))


CHECKED_ACTIONS = {
    "apply-metadata": {"apply": {"manifest": "apiVersion: v1\nkind: ConfigMap\n"
                                             f"metadata: \"{{{{ {PW} }}}}\"\n"}},
    "create-metadata": {"create": {"manifest": "apiVersion: v1\nkind: ConfigMap\n"
                                               f"metadata: \"{{{{ {PW} | upper }}}}\"\n"}},
    "apply-name": {"apply": {"manifest": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                                         f"  name: {{{{ [{PW}] }}}}\n"}},
    "apply-namespace": {"apply": {"manifest": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                                              f"  name: x\n  namespace: {{{{ [{PW}] }}}}\n"}},
    "merge-patch": {"patch": {"patch": f"\"{{{{ {PW} }}}}\""}},
    "json-patch": {"patch": {"type": "json", "patch": f"\"{{{{ {PW} }}}}\""}},
    "json-patch-op": {"patch": {"type": "json", "patch": f"- \"{{{{ {PW} }}}}\""}},
}
"""Actions whose rendered result fails its shape check while reconciling the Secret."""


@pytest.mark.parametrize("action", CHECKED_ACTIONS.values(), ids=CHECKED_ACTIONS.keys())
def test_a_rendered_shape_error_never_quotes_the_value(action: dict) -> None:
    """An action whose rendered manifest or patch has the wrong shape says what it got by
    type and size, not by value."""
    prog = compile_actions([action], controller="copier")
    with pytest.raises(RenderError, match="got a (str|list)") as info:
        prog.render(key="default/db", obj=SECRET)
    _assert_no_form(str(info.value))


def test_invalid_rendered_yaml_gives_no_snippet_of_the_value() -> None:
    """A manifest that renders to invalid YAML (a value breaking the syntax) is refused with
    the problem and the rendered line, not a snippet of the text."""
    action = {"apply": {"manifest": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
                                    f"data: {{k: *{{{{ {PW}.split('-')[0] }}}}}}\n"}}
    prog = compile_actions([action], controller="copier")
    with pytest.raises(RenderError, match="rendered YAML is invalid at rendered line 4") as info:
        prog.render(key="default/db", obj=SECRET)
    _assert_no_form(str(info.value) + "".join(traceback.format_exception(info.value)))
