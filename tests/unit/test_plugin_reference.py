"""docs/plugins-reference.md is generated from the code (kinrun.plugin_reference) and cannot
drift: the page equals render(), every hookspec is on it, and no docstring says the client is
None under --dry-run (it is a Client whose writes are dry runs)."""

from __future__ import annotations

from pathlib import Path

from kinrun import hooks
from kinrun.plugin_reference import PAGE, render

ROOT = Path(__file__).resolve().parents[2]


def test_the_checked_in_page_is_current() -> None:
    """Regenerate with scripts/gen-reference when this fails."""
    assert (ROOT / PAGE).read_text(encoding="utf-8") == render(), \
        "docs/plugins-reference.md is stale: run scripts/gen-reference"


def test_every_hook_and_the_client_are_documented() -> None:
    """Each kinrun_* hookspec has its section; the client's write methods are listed."""
    page = render()
    specs = [n for n, f in vars(hooks).items() if n.startswith("kinrun_")
             and getattr(f, "kinrun_spec", None) is not None]
    assert specs and all(f"### `{name}(" in page for name in specs)
    for method in ("apply", "patch", "delete", "create", "get"):
        assert f"### `{method}(" in page


def test_the_dry_run_client_is_described_as_it_is() -> None:
    """--dry-run gives hooks a Client that sends writes with dryRun=All, not None."""
    page = render()
    assert "None in dry-run" not in page and "dryRun=All" in page
