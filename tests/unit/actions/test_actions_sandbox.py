"""The template sandbox: escapes refused, env and files only when the config allows them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinrun.actions import RenderError, compile_actions
from kinrun.templating import TemplateEngine, TemplateOptions, TemplateRenderError

ESCAPES = [
    pytest.param("{{ ''.__class__.__mro__ }}", "unsafe", id="str-mro"),
    pytest.param("{{ obj.__class__ }}", "unsafe", id="obj-class"),
    pytest.param("{{ cycler.__init__.__globals__ }}", "", id="cycler-globals"),
    pytest.param("{{ joiner.__init__.__globals__ }}", "", id="joiner-globals"),
    pytest.param("{{ self._TemplateReference__context }}", "unsafe", id="self-context"),
    pytest.param("{{ lipsum.__globals__ }}", "", id="lipsum-globals"),
    pytest.param("{{ namespace.__init__.__globals__ }}", "unsafe", id="namespace-globals"),
    pytest.param("{{ range.__globals__ }}", "unsafe", id="range-globals"),
    pytest.param("{{ get.__globals__ }}", "unsafe", id="lookup-globals"),
    pytest.param("{{ obj | attr('__class__') }}", "unsafe", id="attr-filter"),
    pytest.param("{{ '{0.__class__.__base__}'.format(obj) }}", "unsafe", id="str-format"),
    pytest.param("{{ obj.get.__self__ }}", "unsafe", id="method-self"),
    pytest.param("{{ obj.metadata.update({'name': 'x'}) }}", "unsafe", id="mutate-dict"),
    pytest.param("{{ obj.spec.containers.append(1) }}", "unsafe", id="mutate-list"),
    pytest.param("{{ range(10000000) | list | length }}", "over the limit", id="range-abuse"),
    pytest.param("{% for i in range(1000000) %}{% endfor %}", "over the limit", id="range-loop"),
    pytest.param("{{ 'x' * 100000000 }}", "over the limit", id="string-repeat"),
    pytest.param("{{ [1] * 100000000 }}", "over the limit", id="list-repeat"),
    pytest.param("{{ 9 ** 9999999 }}", "over the limit", id="huge-power"),
    pytest.param("{{ env('HOME') }}", "allowEnv", id="env-off"),
    pytest.param("{{ read_file('/etc/hostname') }}", "allowFiles", id="files-off"),
]


@pytest.mark.parametrize("template, hint", ESCAPES)
def test_sandbox_escape_is_refused(pod, template, hint):
    """Sandbox escapes and resource abuse fail the render instead of running."""
    prog = compile_actions([{"log": template}], controller="web")
    with pytest.raises(RenderError) as info:
        prog.render(key="shop/web-1", obj=pod)
    assert hint in info.value.detail


def test_pod_fixture_is_not_mutated_by_refused_escapes(pod):
    """Refused mutation attempts leave the object unchanged."""
    prog = compile_actions([{"log": "{{ obj.metadata.update({'name': 'x'}) }}"}], controller="w")
    with pytest.raises(RenderError):
        prog.render(key="shop/web-1", obj=pod)
    assert pod["metadata"]["name"] == "web-1"


def test_env_is_readable_when_allowed(pod, monkeypatch):
    """With templates.allowEnv, env(name, default) reads the environment."""
    monkeypatch.setenv("KINRUN_TEST_REGION", "eu-west")
    monkeypatch.delenv("KINRUN_TEST_UNSET", raising=False)
    prog = compile_actions([{"log": "{{ env('KINRUN_TEST_REGION') }}/"
                                    "{{ env('KINRUN_TEST_UNSET', 'dflt') }}"}],
                           controller="w", templates_options={"allowEnv": True})
    assert prog.render(key="k", obj=pod).steps[0].message == "eu-west/dflt"


def test_env_stays_refused_when_only_files_are_allowed(pod, monkeypatch):
    """allowFiles does not open env."""
    monkeypatch.setenv("KINRUN_TEST_REGION", "eu-west")
    prog = compile_actions([{"log": "{{ env('KINRUN_TEST_REGION') }}"}], controller="w",
                           templates_options={"allowFiles": True})
    with pytest.raises(RenderError, match="allowEnv"):
        prog.render(key="k", obj=pod)


def test_files_are_readable_relative_to_base_dir_when_allowed(pod, tmp_path: Path):
    """With templates.allowFiles, read_file reads a file relative to the config's folder."""
    (tmp_path / "motd.txt").write_text("hello from file")
    options = TemplateOptions(allow_files=True, base_dir=tmp_path)
    prog = compile_actions([{"log": "{{ read_file('motd.txt') }}"}], controller="w",
                           templates_options=options)
    assert prog.render(key="k", obj=pod).steps[0].message == "hello from file"
    prog = compile_actions([{"log": "{{ read_file('motd.txt') }}"}], controller="w",
                           templates_options={"allowFiles": True}, base_dir=tmp_path)
    assert prog.render(key="k", obj=pod).steps[0].message == "hello from file"


def test_templates_options_accept_config_model_objects(pod, monkeypatch):
    """Options may be an object with allow_env/allow_files attributes (the config model)."""
    class TemplatesSpec:
        allow_env = True
        allow_files = False
    monkeypatch.setenv("KINRUN_TEST_REGION", "eu-west")
    prog = compile_actions([{"log": "{{ env('KINRUN_TEST_REGION') }}"}], controller="w",
                           templates_options=TemplatesSpec())
    assert prog.render(key="k", obj=pod).steps[0].message == "eu-west"


def test_read_only_methods_and_builtins_still_work(pod):
    """The sandbox keeps ordinary read-only operations (dict.get, items, filters, loops)."""
    template = ("{% for k, v in obj.metadata.labels | dictsort %}{{ k }}={{ v }};{% endfor %}"
                "{{ obj.metadata.labels.get('missing', 'none') }};{{ range(3) | list }}"
                "{% set ns = namespace(n=0) %}{% for c in obj.spec.containers %}"
                "{% set ns.n = ns.n + 1 %}{% endfor %};{{ ns.n }}")
    prog = compile_actions([{"log": template}], controller="w")
    assert prog.render(key="k", obj=pod).steps[0].message == "app=web;tier=web;none;[0, 1, 2];1"


def test_undefined_is_never_an_empty_string():
    """StrictUndefined: printing, testing or iterating an undefined name raises."""
    engine = TemplateEngine()
    for source in ("{{ nothing }}", "{% if nothing %}{% endif %}", "{% for x in nothing %}{% endfor %}",
                   "{{ nothing ~ 'x' }}"):
        with pytest.raises(TemplateRenderError, match="'nothing' is undefined"):
            engine.template(source).render({})


def test_dict_attribute_reads_keep_jinja2_semantics():
    """``obj.name`` on a dict reads the key (the sandbox's shortcut for dicts), except that a
    dict-method name gives the method, as in Jinja2; a missing key is StrictUndefined with
    Jinja2's message; a key starting with ``_`` is data, not an attribute."""
    engine = TemplateEngine()
    data = {"items": [1, 2], "name": "x", "_private": "p", "nested": {"keys": "k", "n": 1}}
    render = engine.template
    assert render("{{ d.name }}|{{ d._private }}|{{ d.nested.n }}").render({"d": data}) == "x|p|1"
    assert render("{{ d['items'] }}").render({"d": data}) == "[1, 2]"
    # a dict-method name is the method, not the key (docs/templates.md: write obj['items'])
    assert render("{{ d.items is callable }}|{{ d.nested.keys is callable }}").render(
        {"d": data}) == "True|True"
    assert render("{{ d.nested.keys() | list }}").render({"d": data}) == "['keys', 'n']"
    with pytest.raises(TemplateRenderError, match="'dict object' has no attribute 'nmae'"):
        render("{{ d.nmae }}").render({"d": data})
    with pytest.raises(TemplateRenderError, match="'dict object' has no attribute 'x'"):
        render("{{ d.nested.x.y }}").render({"d": data})
    assert render("{{ d.nmae is defined }}|{{ d.nmae | default('dflt') }}").render(
        {"d": data}) == "False|dflt"
    # not a plain dict: Jinja2's path (attribute first), safety checks included
    import collections
    ordered = collections.OrderedDict(name="o", move_to_end="key")
    assert render("{{ d.name }}|{{ d.move_to_end is callable }}").render(
        {"d": ordered}) == "o|True"
    with pytest.raises(TemplateRenderError, match="unsafe"):
        render("{{ d.__class__.__init__ }}").render({"d": data})
