"""What ``kinrun CONFIG`` imports before it loads a config: modules only some configs need stay
out (their cost is start-up time, benchmarks/startup.py). Checked in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

OPTIONAL = ("prometheus_client", "kinrun.metrics", "croniter", "kinrun.probes",
            "kinrun.leader_election", "kinrun.sharding.shard", "kinrun.sharding.sharder",
            "kinrun.sharding.membership", "kinrun.reload", "kinrun.config_watch", "jsonschema")


def imported(statement: str, names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` are in sys.modules after ``statement`` in a new interpreter."""
    code = f"import sys\n{statement}\nprint(' '.join(n for n in {names!r} if n in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    return out.stdout.split()


def test_the_run_path_imports_optional_modules_only_when_used() -> None:
    """Importing everything a run imports up front (the CLI, the config package, the main job)
    leaves metrics, cron, probes, leader election, sharding, hot reload and jsonschema out."""
    assert imported("import kinrun.cli, kinrun.config, kinrun.logging_setup, kinrun.app",
                    OPTIONAL) == []


def test_the_library_pipeline_does_not_import_jsonschema() -> None:
    """The library contender's imports (client, informer pipeline, controller) read schema
    defaults but validate nothing: no jsonschema."""
    assert imported("import kinrun.kube, kinrun.cache, kinrun.controller",
                    ("jsonschema", "prometheus_client", "croniter")) == []


def test_validating_a_config_imports_jsonschema() -> None:
    """The counter-check: loading a config validates it, with jsonschema."""
    statement = ("import kinrun.config as c\ntry:\n    c.load_text('kind: ControllerConfig')\n"
                 "except c.ConfigErrors:\n    pass")
    assert imported(statement, ("jsonschema",)) == ["jsonschema"]
