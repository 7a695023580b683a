"""`kinrun CONFIG` in-process, with a stand-in for kinrun.app: options passed, errors mapped."""

from __future__ import annotations

import logging
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from kinrun import cli
from kinrun.config import Config, RunOptions
from kinrun.errors import ApiError, ClusterConfigError

ROOT = Path(__file__).parents[3]
POD_LOGGER = ROOT / "examples" / "configs" / "pod-logger.yaml"


@pytest.fixture
def fake_app(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Install a fake ``kinrun.app`` whose run records its arguments and does ``behaviour``."""
    seen: dict[str, Any] = {"result": 0}

    def run(config: Config, options: RunOptions) -> int:
        seen["config"], seen["options"] = config, options
        if isinstance(seen["result"], BaseException):
            raise seen["result"]
        return seen["result"]

    module = types.ModuleType("kinrun.app")
    module.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "kinrun.app", module)
    def configure(level: str, fmt: str, stream: Any = None, *, batched: bool = False) -> Any:
        seen.setdefault("logging", (level, fmt, batched))
        return logging.NullHandler()
    monkeypatch.setattr("kinrun.logging_setup.configure_logging", configure)
    return seen


def test_run_passes_config_and_options(fake_app: dict[str, Any], tmp_path: Path) -> None:
    """The loaded config (namespace applied) and every flag reach kinrun.app.run."""
    seed = tmp_path / "seed.yaml"
    seed.write_text("[]\n")
    code = cli.main([str(POD_LOGGER), "--namespace", "team", "--embedded", "--seed", str(seed),
                     "--seed", str(seed), "--kubeconfig", "kc", "--context", "ctx",
                     "--log-level", "debug", "--log-format", "json"])
    assert code == 0
    options: RunOptions = fake_app["options"]
    assert options == RunOptions(config_path=POD_LOGGER, kubeconfig="kc", context="ctx",
                                 namespace="team", embedded=True, seeds=(seed, seed),
                                 log_level="debug", log_format="json")
    assert fake_app["config"].informer("pods").namespaces == ("team",)
    assert fake_app["logging"] == ("debug", "json", True)  # lines batched where it pays


def test_explicit_run_subcommand_is_accepted(fake_app: dict[str, Any]) -> None:
    """`kinrun run CONFIG` is the same as `kinrun CONFIG`."""
    assert cli.main(["run", str(POD_LOGGER)]) == 0
    assert fake_app["options"].config_path == POD_LOGGER


@pytest.mark.parametrize(("outcome", "code", "message"), [
    pytest.param(3, 3, "", id="app-exit-code-passed-through"),
    pytest.param(ClusterConfigError("no kubeconfig found"), 2, "--embedded", id="cluster-config"),
    pytest.param(ApiError("boom", status=500), 1, "kinrun: 500", id="kinrun-error"),
    pytest.param(RuntimeError("bug"), 1, "unexpected error", id="unexpected"),
    pytest.param(KeyboardInterrupt(), 130, "interrupted", id="interrupted"),
])
def test_run_outcomes_map_to_exit_codes(fake_app: dict[str, Any], capsys: pytest.CaptureFixture[str],
                                        caplog: pytest.LogCaptureFixture, outcome: Any, code: int,
                                        message: str) -> None:
    """The app's result or error becomes the documented exit code and a message."""
    fake_app["result"] = outcome
    assert cli.main([str(POD_LOGGER)]) == code
    assert message in capsys.readouterr().err + caplog.text


@pytest.mark.parametrize(("flag", "seconds"), [
    pytest.param([], None, id="not-given"),
    pytest.param(["--drain-timeout", "1m30s"], 90.0, id="units"),
    pytest.param(["--drain-timeout", "2.5"], 2.5, id="seconds"),
])
def test_drain_timeout_flag_reaches_the_run_options(fake_app: dict[str, Any], flag: list[str],
                                                    seconds: float | None) -> None:
    """--drain-timeout is parsed as a duration into RunOptions.drain_timeout (seconds)."""
    assert cli.main([str(POD_LOGGER), *flag]) == 0
    assert fake_app["options"].drain_timeout == seconds


def test_bad_drain_timeout_is_a_usage_error(fake_app: dict[str, Any],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A --drain-timeout that is not a duration: usage error (2), nothing run."""
    assert cli.main([str(POD_LOGGER), "--drain-timeout", "soon"]) == 2
    assert "--drain-timeout" in capsys.readouterr().err
    assert "options" not in fake_app


@pytest.mark.parametrize(("file_value", "flag", "seconds"), [
    pytest.param(None, None, 10.0, id="schema-default"),
    pytest.param("30s", None, 30.0, id="config"),
    pytest.param("30s", 2.0, 2.0, id="flag-wins"),
])
def test_effective_drain_timeout(tmp_path: Path, file_value: str | None, flag: float | None,
                                 seconds: float) -> None:
    """The drain bound: --drain-timeout, else shutdown.drainTimeout, else the schema's 10s."""
    from kinrun.config import load_schema, load_text, parse_duration

    text = POD_LOGGER.read_text()
    if file_value is not None:
        text += f"shutdown: {{drainTimeout: {file_value}}}\n"
    config = load_text(text, file="c.yaml")
    options = RunOptions(config_path=POD_LOGGER, drain_timeout=flag)
    assert options.effective_drain_timeout(config) == seconds
    default = load_schema()["$defs"]["shutdown"]["properties"]["drainTimeout"]["default"]
    assert parse_duration(default) == 10.0


def test_busy_metrics_port_is_one_line_and_exit_1(tmp_path: Path) -> None:
    """metrics.port already bound: `kinrun: metrics port N on ADDR is in use (metrics.port)`,
    no traceback, exit 1."""
    import socket
    import subprocess

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        config = tmp_path / "metrics.yaml"
        config.write_text(POD_LOGGER.read_text()
                          + f"metrics: {{port: {port}, address: 127.0.0.1}}\n")
        done = subprocess.run([sys.executable, "-m", "kinrun.cli", str(config), "--embedded"],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert f"kinrun: metrics port {port} on 127.0.0.1 is in use (metrics.port)" in \
        done.stderr.splitlines()
    assert "Traceback" not in done.stderr


def test_a_failed_startup_hook_calls_kinrun_shutdown_of_the_started_plugins(
        tmp_path: Path) -> None:
    """A plugin's kinrun_startup raising: one line naming it, no traceback, exit 1 (a runtime
    error, docs/cli.md); kinrun_shutdown runs for the plugins whose kinrun_startup returned,
    not for the failed one nor those whose kinrun_startup was never called."""
    import subprocess

    def plugin(name: str, startup: str) -> None:
        (tmp_path / f"{name}.py").write_text(
            f"from kinrun.hooks import hookimpl\n\n@hookimpl\n"
            f"def kinrun_startup(config, client):\n    {startup}\n\n@hookimpl\n"
            f"def kinrun_shutdown():\n    print('{name.upper()} SHUTDOWN', flush=True)\n")
    plugin("ok", "print('OK STARTUP', flush=True)")
    plugin("s", "raise RuntimeError('license server unreachable')")
    plugin("late", "print('LATE STARTUP', flush=True)")
    config = tmp_path / "s.yaml"  # called last-registered first: ok, then s; late not reached
    config.write_text(POD_LOGGER.read_text() + "plugins: [./late.py, ./s.py, ./ok.py]\n")
    done = subprocess.run([sys.executable, "-m", "kinrun.cli", str(config), "--embedded"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "kinrun: plugin './s.py': kinrun_startup failed: RuntimeError: license server " \
           "unreachable" in done.stderr.splitlines()
    assert "Traceback" not in done.stderr
    said = [line for line in done.stdout.splitlines() if line.endswith(("STARTUP", "SHUTDOWN"))]
    assert said == ["OK STARTUP", "OK SHUTDOWN"]
