"""Every reader of YAML goes through kinrun.safe_yaml: seed files, kinrun test object files and
the ``from_yaml`` template filter refuse an alias bomb with a clear error instead of expanding it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinrun.errors import ConfigError

BOMB = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"
        "x: [&a0 [lol], " + ", ".join(f"&a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]"
                                      for i in range(1, 10)) + "]\n")


def test_a_seed_file_bomb_is_a_config_error_with_file_and_line(tmp_path: Path) -> None:
    """kinrun run --seed: the bomb is a ConfigError at its line, nothing is loaded."""
    from kinrun.testing.seeds import load_seed_file

    path = tmp_path / "seed.yaml"
    path.write_text(BOMB)
    with pytest.raises(ConfigError) as caught:
        load_seed_file(path)
    assert caught.value.file == str(path) and caught.value.line == 4
    assert "aliases expand to more than" in caught.value.message


def test_from_yaml_refuses_a_bomb_in_object_data() -> None:
    """``obj.data.doc | from_yaml`` with a bomb any writer of the object controls is an error."""
    import yaml

    from kinrun.templating import from_yaml

    with pytest.raises(yaml.YAMLError, match="aliases expand to more than"):
        from_yaml(BOMB)
    assert from_yaml("a: {b: c}") == {"a": {"b": "c"}}


STAMPED = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s\n"
           "  annotations: {at: 2024-05-01T10:00:00Z, day: 2024-05-01}\n")


def test_object_yaml_keeps_timestamps_as_written(tmp_path: Path) -> None:
    """A timestamp in a Kubernetes object is the string written, as sigs.k8s.io/yaml reads
    it: a safe loader made a datetime that was sent as ``2024-05-01T10:00:00+00:00`` (a
    rendered manifest, a seed file, a ``kinrun test`` object file)."""
    from kinrun.actions.applyset import parse_yaml_documents
    from kinrun.actions.kinds import parse_yaml
    from kinrun.testing.seeds import load_seed_file

    wanted = {"at": "2024-05-01T10:00:00Z", "day": "2024-05-01"}
    assert parse_yaml(STAMPED)["metadata"]["annotations"] == wanted
    assert parse_yaml_documents(STAMPED)[0]["metadata"]["annotations"] == wanted
    path = tmp_path / "seed.yaml"
    path.write_text(STAMPED)
    assert load_seed_file(path)[0]["metadata"]["annotations"] == wanted
