"""validate checks what templates read of the reconciled object against its kind's schema
(kinrun.template_reads): a misspelt field is an error at its line with the closest field;
maps, preserve-unknown-fields, variable subscripts and kinds without a schema stay open."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from kinrun.config import load, load_text
from kinrun.errors import ConfigError
from kinrun.plan import plan

ROOT = Path(__file__).resolve().parents[3]
HEAD = "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"


def compile_log(template: str, informer: str = "{apiVersion: v1, kind: Pod}") -> None:
    plan(load_text(HEAD + textwrap.dedent(f"""\
        informers:
          x: {informer}
        controllers:
          - name: c
            for: x
            reconcile:
              actions:
                - log: "{template}"
        """), file="c.yaml"))


@pytest.mark.parametrize("template,said", [
    ("{{ obj.metdata.name }}", "the object has no field 'metdata'; did you mean 'metadata'?"),
    ("{{ obj.metadata.nmae }}", "metadata has no field 'nmae'; did you mean 'name'?"),
    ("{{ obj.spec.containers[0].imag }}", "has no field 'imag'; did you mean 'image'?"),
    ("{% for c in obj.spec.containers %}{{ old.spec.nodeNme }}{% endfor %}",
     "did you mean 'nodeName'?"),
], ids=["root", "metadata", "list-item", "old-in-a-loop"])
def test_a_misspelt_field_is_refused_at_its_line(template: str, said: str) -> None:
    """The error names c.yaml:LINE, the path read and the closest field."""
    with pytest.raises(ConfigError) as err:
        compile_log(template)
    assert str(err.value).startswith("c.yaml:10:") and said in str(err.value)


@pytest.mark.parametrize("template", [
    "{{ obj.metadata.labels.app }}",                 # a map: any key
    "{{ obj.metadata.annotations['a/b'] }}",
    "{{ obj.spec.containers[0].image }}",
    "{% set k = 'whatever' %}{{ obj.spec[k] }}",     # a variable subscript: not checked
    "{{ obj['items'] if obj else '' }}",            # a dict method name as a key
    "{{ obj.metadata.name.upper() }}",               # a method of a string
])
def test_what_exists_or_cannot_be_known_passes(template: str) -> None:
    """Fields the schema has, open maps and what the analysis cannot bound compile."""
    compile_log(template)


def test_a_kind_without_a_schema_is_not_checked() -> None:
    """A custom kind with no crds: file: nothing to check against."""
    compile_log("{{ obj.spec.anything.goes }}", "{apiVersion: example.com/v1, kind: Foo}")


def test_a_crd_schema_from_crds_is_used(tmp_path: Path) -> None:
    """sample-controller's Foo (crds: file): a typo in a var is refused, with the field."""
    text = (ROOT / "examples/configs/sample-controller.yaml").read_text()
    config = tmp_path / "sc.yaml"
    config.write_text(text.replace("obj.spec.deploymentName", "obj.spec.deploymentNme", 1)
                      .replace("../crds/foo.yaml", str(ROOT / "examples/crds/foo.yaml")))
    with pytest.raises(ConfigError, match="did you mean 'deploymentName'"):
        plan(load(config))


def test_a_lookup_is_checked_against_its_informers_kind() -> None:
    """get('cms', key).dta: the ConfigMap schema says 'data'."""
    with pytest.raises(ConfigError, match=r"get\('cms', \.\.\.\)\.dta: .*did you mean 'data'"):
        plan(load_text(HEAD + textwrap.dedent("""\
            informers:
              pods: {apiVersion: v1, kind: Pod}
              cms: {apiVersion: v1, kind: ConfigMap}
            controllers:
              - name: c
                for: pods
                reconcile:
                  actions:
                    - log: "{{ get('cms', 'default/x').dta }}"
            """), file="c.yaml"))


def test_validate_explain_lists_the_paths_read_per_informer() -> None:
    """`kinrun validate --explain`: sample-controller reads spec.deploymentName of its Foos,
    checked against the CRD's schema."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "kinrun.cli", "validate", "--explain",
                          str(ROOT / "examples/configs/sample-controller.yaml")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "informer foos (samplecontroller.k8s.io/v1alpha1 Foo)" in run.stdout
    assert "checked against its kind's schema" in run.stdout
    assert ":   spec.deploymentName\n" in run.stdout


@pytest.mark.parametrize("template,said", [
    ("{% for c in obj.spec.containers %}{{ c.imag }}{% endfor %}", "did you mean 'image'?"),
    ("{% for cm in list('cms') %}{{ cm.dta }}{% endfor %}", "did you mean 'data'?"),
    ("{% set s = obj.spec %}{{ s.nodeNme }}", "did you mean 'nodeName'?"),
    ("{{ (obj.status | default({})).phse }}", "did you mean 'phase'?"),
], ids=["loop-variable", "list-items", "set", "through-default"])
def test_names_bound_to_reads_are_followed(template: str, said: str) -> None:
    """Loop variables, set names and `| default` keep the path they stand for."""
    with pytest.raises(ConfigError, match=said):
        plan(load_text(HEAD + textwrap.dedent(f"""\
            informers:
              pods: {{apiVersion: v1, kind: Pod}}
              cms: {{apiVersion: v1, kind: ConfigMap}}
            controllers:
              - name: c
                for: pods
                reconcile:
                  actions:
                    - log: "{template}"
            """), file="c.yaml"))


def test_a_var_bound_to_a_lookup_is_followed() -> None:
    """vars: {cm: get('cms', ...)}: cm.dta is refused; a var rebinding is not guessed."""
    with pytest.raises(ConfigError, match=r"get\('cms', \.\.\.\)\.dta"):
        plan(load_text(HEAD + textwrap.dedent("""\
            informers:
              pods: {apiVersion: v1, kind: Pod}
              cms: {apiVersion: v1, kind: ConfigMap}
            controllers:
              - name: c
                for: pods
                reconcile:
                  vars:
                    cm: "get('cms', 'default/x') if obj else none"
                  actions:
                    - log: "{{ cm.dta }}"
            """), file="c.yaml"))


def test_indexers_and_map_to_templates_read_their_own_informers_kind() -> None:
    """An indexer reads its informer's objects; a mapTo template the secondary's."""
    base = HEAD + textwrap.dedent("""\
        informers:
          pods: {apiVersion: v1, kind: Pod, indexers: {byNode: "INDEX"}}
          cms: {apiVersion: v1, kind: ConfigMap}
        controllers:
          - name: c
            for: pods
            watches: [{informer: cms, mapTo: {template: "MAP"}}]
            reconcile: {actions: [{log: x}]}
        """)
    good = base.replace("INDEX", "{{ obj.spec.nodeName }}").replace("MAP", "{{ obj.data.pod }}")
    plan(load_text(good, file="c.yaml"))
    with pytest.raises(ConfigError, match="did you mean 'nodeName'"):
        plan(load_text(good.replace("spec.nodeName", "spec.nodNme"), file="c.yaml"))
    with pytest.raises(ConfigError, match="did you mean 'data'"):
        plan(load_text(good.replace("obj.data.pod", "obj.dat.pod"), file="c.yaml"))


def test_hooks_declare_what_they_read(tmp_path: Path) -> None:
    """reconcile.reads: checked against the schema (a typo is refused) and listed by
    --explain; without it, --explain says the hooks read whole objects."""
    import subprocess
    import sys

    plugin = ROOT / "examples/plugins/pods_by_node.py"
    text = HEAD + textwrap.dedent(f"""\
        plugins: [{plugin}]
        informers: {{pods: {{apiVersion: v1, kind: Pod, indexers: {{byNode: {{plugin: true}}}}}}}}
        controllers:
          - name: c
            for: pods
            reconcile: {{hooks: true, reads: [spec.nodeName, "spec.containers[].image"]}}
        """)
    config = tmp_path / "h.yaml"
    config.write_text(text)
    explain = subprocess.run([sys.executable, "-m", "kinrun.cli", "validate", "--explain",
                              str(config)], capture_output=True, text=True, timeout=120)
    assert explain.returncode == 0 and ":   spec.containers[].image\n" in explain.stdout
    config.write_text(text.replace("containers[].image", "containers[].imag"))
    with pytest.raises(ConfigError, match=r"reconcile\.reads: .*did you mean 'image'"):
        plan(load(config))
    config.write_text(text.replace(', reads: [spec.nodeName, "spec.containers[].image"]', ""))
    whole = subprocess.run([sys.executable, "-m", "kinrun.cli", "validate", "--explain",
                            str(config)], capture_output=True, text=True, timeout=120)
    assert "runs hooks that declare no reads:" in whole.stdout


@pytest.mark.parametrize("template,said", [
    ("{{ obj.spec.volumes[0].configMap.items }}",
     "spec.volumes[].configMap.items is the dict method 'items' in a template, not the field"),
    ("{% for v in obj.spec.volumes %}{{ v.configMap.items | length }}{% endfor %}",
     "write spec.volumes[].configMap['items']"),
    ("{{ obj.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
     ".nodeSelectorTerms[0].matchExpressions[0].values }}", "the dict method 'values'"),
], ids=["attribute", "loop-variable", "values"])
def test_a_field_named_as_a_dict_method_read_as_an_attribute_is_refused(
        template: str, said: str) -> None:
    """Jinja2 reads the attribute first: ``x.items`` on a dict is its method, so a field of
    that name read with a dot renders as a method; validate says so and how to read it."""
    with pytest.raises(ConfigError) as err:
        compile_log(template)
    assert said in str(err.value) and "c.yaml:" in str(err.value)


@pytest.mark.parametrize("template", [
    "{{ obj.spec.volumes[0].configMap['items'] }}",
    "{% for k, v in obj.metadata.labels.items() %}{{ k }}{% endfor %}",
    "{{ obj.metadata.annotations.get('a') }}",
], ids=["subscript", "items-call", "get-call"])
def test_dict_methods_called_and_fields_subscripted_pass(template: str) -> None:
    compile_log(template)


def test_a_result_named_like_a_dict_method_read_as_an_attribute_is_refused() -> None:
    """An action named ``copy`` read as ``results.copy`` would be the dict's method."""
    def compile_with(template: str) -> None:
        plan(load_text(HEAD + textwrap.dedent(f"""\
            informers:
              x: {{apiVersion: v1, kind: ConfigMap}}
            controllers:
              - name: c
                for: x
                reconcile:
                  actions:
                    - name: copy
                      log: "copying"
                    - log: "{template}"
            """), file="c.yaml"))
    with pytest.raises(ConfigError, match=r"write results\['copy'\] \(template line 1\)"):
        compile_with("{{ results.copy }}")
    compile_with("{{ results['copy'] }}")


@pytest.mark.parametrize("source,expression,whole", [
    pytest.param("{{ obj | to_json }}", False, [("obj", "obj used whole")], id="filter"),
    pytest.param("{{ old == obj }}", False, [("obj", "obj used whole"), ("old", "old used whole")],
                 id="compared"),
    pytest.param("{{ obj.spec | to_json }}", False, [], id="a-chain-filtered-is-a-path"),
    pytest.param("{{ 'x' if obj is none else obj.metadata.name }}", False, [], id="truth"),
    pytest.param("{% if not old %}{{ obj.spec.a }}{% endif %}", False, [], id="not"),
    pytest.param("{% set d = get('cms', key) %}{{ d.data.a }}", False, [], id="set-bound"),
    pytest.param("get('cms', key) if obj else none", True, [], id="a-var-binding"),
    pytest.param("{{ get('cms', key) | to_yaml }}", False,
                 [("get:cms", "get('cms', ...) used whole")], id="lookup-whole"),
    pytest.param("{% for c in list('cms') %}{{ c.data }}{% endfor %}", False,
                 [("get:cms", "list('cms', ...) items")], id="list-items"),
])
def test_whole_reads(source: str, expression: bool, whole: list[tuple[str, str]]) -> None:
    """Where a template reads an object whole (what a projection of the cache must keep)."""
    from kinrun.template_reads import whole_reads
    from kinrun.templating import TemplateEngine

    tree = TemplateEngine().syntax_tree(source, expression=expression)
    assert sorted((root, how) for root, _line, how in whole_reads(tree, {}, expression)) == whole


def test_explain_lists_whole_reads_with_their_line(tmp_path: Path) -> None:
    from kinrun.plan import read_report
    config = plan(load_text(textwrap.dedent("""\
        apiVersion: kinrun.dev/v1alpha1
        kind: ControllerConfig
        informers: {pods: {apiVersion: v1, kind: Pod}}
        controllers:
          - name: c
            for: pods
            reconcile:
              actions:
                - log: "{{ obj | to_json }}"
                - status: {fields: {a: "1"}}
        """), file="w.yaml"))
    report = read_report(config)
    assert "  (whole objects: obj used whole at w.yaml:9)" in report
    assert "  status" in report  # the status action reads the whole status


def test_explain_gives_each_whole_read_once() -> None:
    """A loop over list() items is one whole read, listed once (it was listed twice)."""
    from kinrun.plan import read_report
    config = plan(load_text(HEAD + textwrap.dedent("""\
        informers:
          deployments: {apiVersion: apps/v1, kind: Deployment}
          ns: {apiVersion: v1, kind: Namespace}
        controllers:
          - name: c
            for: ns
            reconcile:
              actions:
                - log: "{% for d in list('deployments') %}{{ d.metadata.name }}{% endfor %}"
        """), file="w.yaml"))
    whole = [line for line in read_report(config) if "(whole objects:" in line]
    assert whole == ["  (whole objects: list('deployments', ...) items at w.yaml:11)"]


def compile_pods(actions: str, extra: str = "") -> None:
    """A Pod controller with ``actions`` (YAML list items, indented 10) and ``extra`` keys of
    its reconcile (vars:), a ConfigMap informer beside it."""
    plan(load_text(HEAD + textwrap.dedent("""\
        informers:
          pods: {apiVersion: v1, kind: Pod}
          cms: {apiVersion: v1, kind: ConfigMap}
        controllers:
          - name: c
            for: pods
            reconcile:
        """) + extra + "      actions:\n" + actions, file="c.yaml"))


@pytest.mark.parametrize("actions,extra", [
    ("        - log: \"{% for obj in list('cms') %}{{ obj.data.k }}{% endfor %}\"\n", ""),
    ("        - log: \"{% set obj = get('cms', 'default/cm') %}{{ obj.data.k }}\"\n", ""),
    ("        - log: \"{% macro m(obj) %}{{ obj.data.k }}{% endmacro %}"
     "{{ m(get('cms', 'default/cm')) }}\"\n", ""),
    ("        - log: \"{% macro m(c) %}{{ c.nodeName }}{% endmacro %}"
     "{% for c in obj.spec.containers %}{{ c.image }}{% endfor %}{{ m(obj.spec) }}\"\n", ""),
    ("        - log: \"{% with d = obj.spec %}{{ d.nodeName }}{% endwith %}\"\n",
     "      vars:\n        d: \"get('cms', 'default/cm')\"\n"),
    ("        - log: \"{{ d.image }}\"\n          forEach: obj.spec.containers\n"
     "          as: d\n        - log: \"{{ d.data.k }}\"\n",
     "      vars:\n        d: \"get('cms', 'default/cm')\"\n"),
    ("        - log: \"{{ d.count('x') }}\"\n",
     "      vars:\n        d: \"{% if true %}{{ obj }}{% endif %}\"\n"),
    ("        - applySet:\n            forEach: obj.spec.containers\n            as: c\n"
     "            manifests: |\n              apiVersion: v1\n              kind: ConfigMap\n"
     "              metadata: {name: \"x-{{ c.name }}\", namespace: default}\n",
     "      vars:\n        c: \"obj.status\"\n"),
    ("        - log: \"{% set f = 'os' %}{% set os = obj.spec[f] %}{{ os.name }}\"\n", ""),
    ("        - log: \"{{ sc.runAsUser }}\"\n",
     "      vars:\n        f: \"'securityContext'\"\n        sc: \"obj.spec[f]\"\n"),
    ("        - log: \"{{ d.data.k }}\"\n",
     "      vars:\n        d: \"obj if false else get('cms', 'default/cm')\"\n"),
], ids=["loop-obj", "set-obj", "macro-obj", "macro-param-and-loop", "with-hides-var",
        "forEach-as-hides-var", "template-var-is-text", "applySet-as-hides-var",
        "computed-subscript-set", "computed-subscript-var", "branches-of-two-kinds"])
def test_a_name_bound_again_is_not_taken_for_what_it_hides(actions: str, extra: str) -> None:
    """A name the template binds again (obj/old in a loop or set, a macro parameter, a with
    target, an action's forEach item) stands for something else there: its reads are not
    checked against what the name meant outside (each of these configs is valid); a var
    written as a template is its text."""
    compile_pods(actions, extra)


def test_finalizer_when_reads_are_checked() -> None:
    """``finalizer.when`` is a template of the controller like the others."""
    with pytest.raises(ConfigError, match=r"finalizer\.when: obj\.spec\.nodNmae"):
        plan(load_text(HEAD + textwrap.dedent("""\
            informers:
              pods: {apiVersion: v1, kind: Pod}
            controllers:
              - name: c
                for: pods
                finalizer: {name: example.com/f, when: "obj.spec.nodNmae == 'x'"}
                reconcile: {actions: [{log: x}], finalize: [{log: gone}]}
            """), file="c.yaml"))


@pytest.mark.parametrize("entry,said", [
    ("spec.nodeName]", "is not a field path"),
    ("spec.containers[]image", "is not a field path"),
    ("spec.[nodeName", "is not a field path"),
    ("spec.nodeName-x", "spec has no field 'nodeName-x'"),
])
def test_a_malformed_declared_read_is_refused(entry: str, said: str, tmp_path: Path) -> None:
    """A ``reads:`` entry is a field path: malformed ones are refused at load (they made
    paths no object has), and a name that is not a field is refused as one."""
    hook = tmp_path / "hook.py"
    hook.write_text("import kinrun\n\n\n@kinrun.hookimpl\n"
                    "def kinrun_reconcile(controller, key, obj, ctx):\n    return None\n")
    with pytest.raises(ConfigError, match=re.escape(said)) as caught:
        plan(load_text(HEAD + textwrap.dedent(f"""\
            plugins: [{hook}]
            informers:
              pods: {{apiVersion: v1, kind: Pod}}
            controllers:
              - name: c
                for: pods
                reconcile: {{hooks: true, reads: ["{entry}"], actions: [{{log: x}}]}}
            """), file="c.yaml"))
    assert "template line" not in str(caught.value)  # a reads: entry is no template


@pytest.mark.parametrize("actions,extra,said", [
    ("        - log: \"{{ colr }}\"\n", "", "'colr' is undefined (template line 1)"),
    ("        - log: \"{{ objj.metadata.name }}\"\n", "",
     "'objj' is undefined (template line 1); did you mean 'obj'?"),
    ("        - log: \"{{ wantd }}\"\n", "      vars:\n        wanted: \"obj.spec\"\n",
     "did you mean 'wanted'?"),
    ("        - log: x\n          when: \"nodee == 'a'\"\n", "", "'nodee' is undefined"),
    ("        - log: \"{{ error.message }}\"\n", "",
     "'error' is undefined (template line 1); error exists in onError actions"),
    ("        - log: x\n      onError:\n        - log: \"{{ child.kind }}\"\n", "",
     "'child' is undefined"),
    ("        - log: \"{{ why }}\"\n      onError:\n        - log: \"{{ why }}\"\n",
     "      vars:\n        msg: error.message\n        why: \"'failed: ' ~ msg\"\n",
     "'error' is undefined (template line 1); error exists in onError actions"),
], ids=["unknown", "root-typo", "var-typo", "when", "error-outside-onError",
        "child-outside-readyWhen", "error-in-a-var-actions-read"])
def test_an_undefined_name_is_refused(actions: str, extra: str, said: str) -> None:
    """A name nothing defines fails every render: validate refuses it at its action, with the
    closest known name."""
    with pytest.raises(ConfigError, match=re.escape(said)):
        compile_pods(actions, extra)


@pytest.mark.parametrize("actions,extra", [
    ("        - log: \"{{ key }} {{ reason }} {{ initial_list }} {{ controller }} {{ now() }} "
     "{{ range(2) | list }} {{ dict(a=1) }} {{ namespace(a=1).a }} {{ get('cms', key) }}\"\n",
     ""),
    ("        - log: \"{% if obj %}{% set z = 1 %}{% endif %}{{ z }}\"\n", ""),
    ("        - log: \"{{ item.image }}\"\n          forEach: obj.spec.containers\n", ""),
    ("        - log: \"{% macro m(a) %}{{ a }}{{ caller() }}{% endmacro %}"
     "{% call m(1) %}x{% endcall %}{% for c in [1] %}{{ loop.index }}{% endfor %}\"\n", ""),
    ("        - log: x\n      onError:\n        - log: \"{{ error.message }} {{ e }}\"\n",
     "      vars:\n        e: \"error.message if error is defined else ''\"\n"),
    ("        - log: x\n      onError:\n        - log: \"{{ why }}\"\n",
     "      vars:\n        msg: error.message\n        why: \"'failed: ' ~ msg\"\n"),
    ("        - log: \"{{ error.message if error is defined else 'none' }}\"\n", ""),
    ("        - log: \"{{ (error | default({'message': 'ok'})).message }} {{ error | d('-') }}"
     " {{ 'x' if error is none else 'y' }} {{ child | default('none') }}\"\n", ""),
], ids=["every-known-name", "bound-in-a-branch", "forEach-item", "macro-caller-loop",
        "error-in-onError-and-vars", "error-in-vars-only-onError-reads", "guarded-by-is-defined",
        "guarded-by-default-or-none"])
def test_names_templates_have_pass(actions: str, extra: str) -> None:
    """The template variables, functions, globals, a forEach item, names a template binds
    (in any branch), macro parameters, caller and loop are all defined; ``error`` in onError
    actions and vars; a name tested with ``is defined`` is the author's to guard."""
    compile_pods(actions, extra)


def test_finalizer_when_sees_obj_only() -> None:
    """``finalizer.when`` is evaluated with ``obj`` and the globals only
    (``FinalizerCondition``): a var there fails every reconcile, so validate refuses it."""
    def config(when: str) -> str:
        return HEAD + textwrap.dedent(f"""\
            informers:
              pods: {{apiVersion: v1, kind: Pod}}
            controllers:
              - name: c
                for: pods
                finalizer: {{name: example.com/x, when: "{when}"}}
                reconcile:
                  vars: {{m: obj.spec.nodeName}}
                  actions: [{{log: x}}]
                  finalize: [{{log: bye}}]
            """)
    plan(load_text(config("obj.spec.nodeName == 'a' and now() is not none"), file="c.yaml"))
    with pytest.raises(ConfigError, match="'m' is undefined"):
        plan(load_text(config("m == 'a'"), file="c.yaml"))


@pytest.mark.parametrize(("map_to", "index", "said"), [
    ("{{ obj.metadata.namespace }}/{{ obj.metadata.name }} {{ initial_list }} "
     "{{ list('cms') | length }} {{ now() }}", "obj.metadata.labels.app", None),
    ("{{ key }}", "obj.metadata.name", "'key' is undefined (template line 1); a mapTo template "
     "sees obj"),
    ("{{ obj.metadata.name }}", "key", "'key' is undefined (template line 1); an indexer sees "
     "obj"),
], ids=["valid", "mapTo", "indexer"])
def test_map_to_templates_and_indexers_see_their_own_names(map_to: str, index: str,
                                                           said: str | None) -> None:
    """A mapTo template sees obj, initial_list, the lookups and the functions; an indexer obj
    and the functions: another name gives no key or index value on every event, so validate
    refuses it."""
    text = HEAD + textwrap.dedent(f"""\
        informers:
          pods: {{apiVersion: v1, kind: Pod}}
          cms:
            apiVersion: v1
            kind: ConfigMap
            indexers: {{by-app: "{index}"}}
        controllers:
          - name: c
            for: pods
            watches: [{{informer: cms, mapTo: {{template: "{map_to}"}}}}]
            reconcile: {{actions: [{{log: x}}]}}
        """)
    if said is None:
        plan(load_text(text, file="c.yaml"))
        return
    with pytest.raises(ConfigError, match=re.escape(said)):
        plan(load_text(text, file="c.yaml"))


def test_every_undefined_name_and_a_read_typo_are_listed_in_one_run() -> None:
    """validate lists every template problem it finds, not only the first: a fix per run
    would take one run per typo."""
    from kinrun.config import ConfigErrors

    with pytest.raises(ConfigErrors) as caught:
        compile_pods('        - log: "{{ colr }}"\n'
                     '        - log: "{{ obj.metadata.nmae }}"\n'
                     '        - log: "{{ error.message }}"\n')
    said = [e.message for e in caught.value.errors]
    assert len(said) == 3 and [e.line for e in caught.value.errors] == sorted(
        e.line for e in caught.value.errors)
    assert "'colr' is undefined" in said[0] and "did you mean 'name'" in said[1] \
        and "'error' is undefined" in said[2]
