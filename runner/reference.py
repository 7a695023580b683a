"""The template reference page, ``docs/templates.md``, generated from the code so it cannot drift.

Everything on the page comes from what the engine defines: the registry
:data:`kinrun.templating.TEMPLATE_NAMES` (each variable, function and kinrun filter with where
it is available; the filters' text is their docstring), the places
(:data:`kinrun.templating.PLACES`), Jinja2's built-in filters and tests as the sandbox has them,
the budget's defaults from the schema, and the fixed limits. The recipes (:data:`RECIPES`) are
complete configs; ``tests/unit/actions/test_reference.py`` compiles each and checks what it
does, and fails when the checked-in page differs from :func:`render` or when the engine or the
action scope exposes a name the registry lacks.

Regenerate: ``python -m kinrun.reference docs/templates.md`` (``scripts/gen-reference``).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from kinrun.templating import (
    BUILTIN_FILTERS, MAX_EXPONENT, MAX_RANGE, MAX_SEQUENCE, MAX_TREE_DEPTH, PLACES,
    TEMPLATE_NAMES, BudgetLimits, TemplateEngine,
)

PAGE = Path("docs/templates.md")
"""Where the page lives, relative to the repository."""


@dataclass(frozen=True)
class Recipe:
    """A short, complete example: ``id`` (the test's handle), ``title``, ``text`` (what it
    shows), ``config`` (a whole config file)."""

    id: str
    title: str
    text: str
    config: str


_HEAD = "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"

RECIPES: tuple[Recipe, ...] = (
    Recipe("ownership-var", "An ownership test written once, as a var",
           "A var is evaluated once per reconcile, before `when:` and the actions; `stop` ends "
           "the reconcile there, as a success, with nothing of the later actions sent.",
           _HEAD + """\
informers:
  cms: {apiVersion: v1, kind: ConfigMap}
controllers:
  - name: mirror
    for: cms
    reconcile:
      vars:
        managed: >-
          obj.metadata.ownerReferences | default([]) | selectattr('controller') | list
          | length > 0
      actions:
        - stop: "{{ key }} belongs to its controller"
          when: managed
        - apply:
            manifest: |
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: "{{ obj.metadata.name }}-mirror"}
              data: {{ obj.data | default({}) | tojson }}
"""),
    Recipe("fan-out", "Fan one object out to many keys with a lookup",
           "A `mapTo` template may return a list of keys and look objects up in any informer's "
           "cache; `initial_list` skips the start-up list, when every primary is reconciled "
           "anyway. The mapper runs on a listener thread of its own, within the template budget.",
           _HEAD + """\
informers:
  namespaces: {apiVersion: v1, kind: Namespace}
  settings: {apiVersion: v1, kind: ConfigMap, namespaces: [kinrun-system]}
controllers:
  - name: per-namespace
    for: namespaces
    watches:
      - informer: settings
        mapTo:
          template: >-
            {{ [] if initial_list else
               list('namespaces') | map(attribute='metadata.name') | list }}
    reconcile:
      actions:
        - log: "{{ key }}: {{ reason }}"
"""),
    Recipe("schedule", "Reconcile every key at fixed times",
           "`schedule` is cron syntax as CronJob's, read in UTC unless `timeZone` names an IANA "
           "zone; each fire time queues every cached primary key with reason `scheduled`, "
           "besides `resyncPeriod`.",
           _HEAD + """\
informers:
  certs: {apiVersion: v1, kind: Secret, fieldSelector: type=kubernetes.io/tls}
controllers:
  - name: expiry
    for: certs
    schedule: "0 6 * * MON-FRI"
    timeZone: Europe/Berlin
    reconcile:
      actions:
        - log: "checking {{ key }} ({{ reason }})"
          when: reason == 'scheduled'
"""),
    Recipe("stop-fail", "Stop, fail, fail permanently",
           "`fail` retries the key with backoff; `permanent: true` gives up until the object "
           "changes. Of a failed reconcile only the Events and log lines before the `fail` are "
           "carried out (record, then return an error); then `onError` runs. `stop` logs its "
           "message at `level` (default info).",
           _HEAD + """\
informers:
  jobs: {apiVersion: v1, kind: ConfigMap, labelSelector: example.com/job}
controllers:
  - name: jobs
    for: jobs
    reconcile:
      vars:
        mode: "obj.data.mode | default('run')"
      actions:
        - fail: {message: "mode {{ mode }} is not run or skip", permanent: true}
          when: mode not in ['run', 'skip']
        - stop: "{{ key }} skipped"
          when: mode == 'skip'
        - fail: {message: "waiting for data.input"}
          when: "'input' not in obj.data"
        - log: "running {{ key }} on {{ obj.data.input }}"
"""),
)


def _markdown(text: str) -> str:
    """A docstring's reStructuredText inline markup as Markdown."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def _cell(text: str) -> str:
    return _markdown(text).replace("|", "\\|")


def render() -> str:
    """The page's Markdown text, from the registry and the engine as they are now."""
    out = [*_introduction(), *_name_tables(), *_builtins(TemplateEngine()), *_budget(),
           *_recipes()]
    return "\n".join(out).rstrip() + "\n"


def _introduction() -> list[str]:
    return [
        "# Templates: what they can see",
        "",
        "<!-- Generated by `python -m kinrun.reference docs/templates.md` (scripts/gen-reference) "
        "from kinrun.templating.TEMPLATE_NAMES; do not edit. A unit test fails when this page "
        "and the code differ. -->",
        "",
        "Templates are Jinja2 in an immutable sandbox with strict undefined names: a typo "
        "(`obj.metdata`) is an error, never an empty string. A field that is a single "
        "`{{ expression }}` keeps the expression's value (a list, a number); text mixing literal "
        "parts renders as a string. Dict keys named like a dict method (`items`, `keys`, "
        "`values`, `get`) are written `obj['items']`.",
        "",
        "## Where templates render",
        "",
        "| place | what |",
        "|---|---|",
        *(f"| `{name}` | {_cell(what)} |" for name, what in PLACES.items()),
        "",
    ]


def _name_tables() -> list[str]:
    out: list[str] = []
    for kind, title in (("variable", "Variables"), ("function", "Functions"),
                        ("filter", "kinrun's filters")):
        out += [f"## {title}", "", "| name | written | where | what |", "|---|---|---|---|"]
        for entry in TEMPLATE_NAMES:
            if entry.kind != kind:
                continue
            where = "everywhere" if set(entry.places) == set(PLACES) else \
                ", ".join(f"`{p}`" for p in entry.places)
            out.append(f"| `{entry.name}` | `{_cell(entry.usage)}` | {where} | "
                       f"{_cell(entry.doc)} |")
        out.append("")
    return out


def _builtins(engine: TemplateEngine) -> list[str]:
    jinja_filters = sorted(set(engine.filters) - set(BUILTIN_FILTERS))
    jinja_tests = sorted(engine._env.tests)  # noqa: SLF001 - the sandbox's own tests
    return [
        "## Jinja2's built-ins",
        "",
        "Everywhere, as Jinja2 documents them (https://jinja.palletsprojects.com/templates/). "
        "Filters: " + ", ".join(f"`{n}`" for n in jinja_filters) + ".",
        "",
        "Tests (`value is defined`): " + ", ".join(f"`{n}`" for n in jinja_tests) + ".",
        "",
        "Plugins add filters with the `kinrun_template_filters` hook; a name that clashes "
        "with one above is a configuration error.",
        "",
    ]


def _budget() -> list[str]:
    limits = BudgetLimits()
    return [
        "## The budget",
        "",
        "Every render spends a budget (`templates.budget`), so no template ties up a worker "
        "or an informer: one budget for a whole reconcile (its vars, every `when:` and every "
        "action, `onDelete` and `finalize` alike), one per call of a key mapper (`mapTo`) or an "
        "indexer. Past it the reconcile fails and is retried with backoff; a key mapper or an "
        "indexer gives nothing and logs a warning at most once a minute.",
        "",
        "| setting | default | bounds |",
        "|---|---|---|",
        f"| `timeout` | {limits.timeout:g} s | seconds of rendering |",
        f"| `maxLoopSteps` | {limits.max_loop_steps} | iterations of every loop plus the "
        "items of each collection a filter returns |",
        f"| `maxOutputChars` | {limits.max_output_chars} | characters of output, and the "
        "size of a string or list built with `*`, `+` or `~` |",
        "",
        f"Fixed limits: `range()` of at most {MAX_RANGE} items (or `maxLoopSteps` when "
        f"larger), sequences of at most {MAX_SEQUENCE} items built with `*` when no budget is "
        f"active, exponents up to {MAX_EXPONENT}, templates nested at most {MAX_TREE_DEPTH} "
        "levels deep (refused when the config loads).",
        "",
    ]


def _recipes() -> list[str]:
    out = [
        "## Recipes",
        "",
        "Each is a complete config; `tests/unit/actions/test_reference.py` compiles it and "
        "checks what it does.",
        "",
    ]
    for recipe in RECIPES:
        out += [f"### {recipe.title}", "", recipe.text, "", "```yaml", recipe.config.rstrip(),
                "```", ""]
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m kinrun.reference [FILE]``: write the page to FILE (default: stdout)."""
    args = sys.argv[1:] if argv is None else argv
    text = render()
    if not args:
        sys.stdout.write(text)
        return 0
    Path(args[0]).parent.mkdir(parents=True, exist_ok=True)
    Path(args[0]).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
