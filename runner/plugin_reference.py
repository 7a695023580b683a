"""The plugin API reference page, ``docs/plugins-reference.md``, generated from the code.

Everything on the page is read from what plugin authors import, so it cannot drift: the
hookspecs of :mod:`kinrun.hooks` (signature and docstring of each ``kinrun_*`` hook, in file
order), :class:`kinrun.hooks.ReconcileContext`, the methods of the client a hook writes
through (:class:`kinrun.kube.Client`, what ``ctx.client`` is, also under ``--dry-run``), what
a hook returns (:class:`kinrun.result.Result`) or raises (:class:`kinrun.errors.PermanentError`,
:class:`kinrun.errors.TemporaryError`), and the names ``import kinrun`` gives.
``tests/unit/test_plugin_reference.py`` fails when the checked-in page differs from
:func:`render`.

Regenerate: ``python -m kinrun.plugin_reference docs/plugins-reference.md``
(``scripts/gen-reference`` regenerates every generated page).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

PAGE = Path("docs/plugins-reference.md")
"""Where the page lives, relative to the repository."""

_INTRO = """\
# Plugin API reference

Generated from the code by `scripts/gen-reference` (`kinrun.plugin_reference`): do not edit.
How to write and load a plugin, with examples: [hooks and the plugin API](plugins.md).

A plugin is a module (or a `.py` file listed under `plugins:`) whose functions carry
`@kinrun.hookimpl` and are named after the hooks below. pluggy calls them with keyword
arguments; a plugin may take any subset of a hook's arguments.
"""


def _signature(func: Callable[..., Any]) -> str:
    return f"{func.__name__}{inspect.signature(func)}".replace("'", "")


def _doc(obj: Any) -> str:
    return inspect.cleandoc(obj.__doc__ or "(undocumented)")


def _hooks() -> Iterator[Callable[..., Any]]:
    from kinrun import hooks

    found = [f for name, f in vars(hooks).items()
             if name.startswith("kinrun_") and callable(f)
             and getattr(f, "kinrun_spec", None) is not None]
    yield from sorted(found, key=lambda f: f.__code__.co_firstlineno)


def _client_methods() -> Iterator[tuple[str, Callable[..., Any]]]:
    from kinrun.kube import Client

    for name, member in inspect.getmembers(Client, inspect.isfunction):
        if not name.startswith("_"):
            yield name, member


def _section(title: str, body: str) -> str:
    return f"## {title}\n\n{body.rstrip()}\n"


def _block(signature: str, doc: str) -> str:
    return f"### `{signature}`\n\n```text\n{doc}\n```\n"


def render() -> str:
    """The whole page (Markdown)."""
    import kinrun
    from kinrun.errors import PermanentError, TemporaryError
    from kinrun.hooks import ReconcileContext
    from kinrun.result import Result

    parts = [_INTRO]
    parts.append(_section("Hooks", "\n".join(_block(_signature(f), _doc(f)) for f in _hooks())))
    parts.append(_section("The reconcile context (`ctx`)", _block("ReconcileContext",
                                                                 _doc(ReconcileContext))))
    client = "\n".join(_block(_signature(m), _doc(m)) for _, m in _client_methods())
    parts.append(_section("The client (`ctx.client`)",
                          "`ctx.client` is a `kinrun.kube.Client`. Under `kinrun CONFIG "
                          "--dry-run` it is the same class with `dry_run` set: reads are real, "
                          "every write is sent with `dryRun=All` (the server validates it and "
                          "persists nothing) and logged as what it would change.\n\n" + client))
    returns = "\n".join(_block(c.__name__, _doc(c)) for c in (Result, PermanentError,
                                                               TemporaryError))
    parts.append(_section("What a reconcile hook returns or raises", returns))
    names = ", ".join(f"`{n}`" for n in sorted(kinrun.__all__))
    parts.append(_section("`import kinrun`", f"The public names: {names}."))
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    """``python -m kinrun.plugin_reference [PATH]``: write the page (default: stdout)."""
    args = sys.argv[1:] if argv is None else argv
    text = render()
    if args:
        Path(args[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
