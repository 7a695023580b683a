"""A watched change back to the bytes in force after a rejected reload (a ConfigMap rollback,
``cp run.good run.yaml``) clears the rejected state: one info line, the reload metrics say
success, and nothing is loaded or applied again."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from kinrun.errors import ConfigError
from kinrun.metrics import Metrics
from kinrun.reload import Reloader, config_hash


def _reloader(files: list[Path], loads: list[str]) -> tuple[Reloader, Metrics]:
    manager = SimpleNamespace(plan=SimpleNamespace(config=SimpleNamespace(sharding=None),
                                                   informers={}),
                              waiting_informers=dict)

    def load_config():
        loads.append("load")
        raise ConfigError(f"{files[0]}:3: unknown informer 'deploymentz'")
    metrics = Metrics()
    reloader = Reloader(manager, load_config, compile=lambda c: c, metrics=metrics,
                        files=lambda: [str(f) for f in files])
    return reloader, metrics


def _value(metrics: Metrics, name: str, labels: dict[str, str] | None = None) -> float | None:
    return metrics.registry.get_sample_value(name, labels or {})


@pytest.mark.parametrize("broken", [0, 1], ids=["config file", "plugin file"])
def test_restoring_the_bytes_in_force_clears_the_rejected_state(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, broken: int) -> None:
    files = [tmp_path / "run.yaml", tmp_path / "p.py"]
    files[0].write_text("for: deployments\n")
    files[1].write_text("def kinrun_startup(): pass\n")
    loads: list[str] = []
    reloader, metrics = _reloader(files, loads)
    in_force = reloader.hash
    good = files[broken].read_bytes()
    files[broken].write_bytes(good.replace(b"(): pass", b"(:") + b"for: deploymentz\n")
    rejected = config_hash(map(str, files))
    assert reloader.reload() is False
    assert _value(metrics, "kinrun_config_last_reload_successful") == 0
    files[broken].write_bytes(good)  # cp run.good run.yaml
    loads.clear()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="kinrun.reload"):
        assert reloader.reload() is True
    assert loads == []  # nothing loaded, compiled or applied again
    assert [r.getMessage() for r in caplog.records] == [
        f"config reload (file changed): back to the config in force (hash {in_force[:12]}); "
        f"nothing to apply"]
    assert reloader.hash == in_force
    assert _value(metrics, "kinrun_config_last_reload_successful") == 1
    assert _value(metrics, "kinrun_config_info", {"hash": in_force, "state": "active"}) == 1
    assert _value(metrics, "kinrun_config_info", {"hash": rejected, "state": "rejected"}) is None


def test_the_same_broken_bytes_after_a_rollback_are_logged_again(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    files = [tmp_path / "run.yaml"]
    files[0].write_text("for: deployments\n")
    reloader, metrics = _reloader(files, [])
    good = files[0].read_bytes()
    with caplog.at_level(logging.INFO, logger="kinrun.reload"):
        for content in (b"for: deploymentz\n", good, b"for: deploymentz\n"):
            files[0].write_bytes(content)
            reloader.reload()
    levels = [r.levelname for r in caplog.records]
    assert levels == ["ERROR", "INFO", "ERROR"]
    assert _value(metrics, "kinrun_config_last_reload_successful") == 0


def test_touching_the_file_in_force_without_a_rejected_reload_says_nothing(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    files = [tmp_path / "run.yaml"]
    files[0].write_text("for: deployments\n")
    reloader, metrics = _reloader(files, [])
    files[0].write_text("for: deployments\n")
    with caplog.at_level(logging.INFO, logger="kinrun.reload"):
        assert reloader.reload() is True
    assert caplog.records == []
    assert not _value(metrics, "kinrun_config_reloads_total", {"result": "success"})
