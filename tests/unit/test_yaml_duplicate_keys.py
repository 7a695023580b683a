"""A key written twice in one mapping of an object kinrun reads (a rendered manifest or patch,
a test's ``given: - file:``, a ``--seed`` file) is refused at the second, naming the first's
line, as kubectl refuses it; the embedded server's request bodies keep 1.20's last-wins."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kinrun import safe_yaml
from kinrun.actions.applyset import parse_yaml_documents
from kinrun.actions.kinds import CheckError, parse_yaml
from kinrun.errors import ConfigError
from kinrun.testing.seeds import load_seed_file

TWICE = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
data:
  mode: sync
  mode: hold
"""


def test_strict_loader_refuses_the_second_key_and_names_the_first() -> None:
    with pytest.raises(yaml.constructor.ConstructorError) as caught:
        safe_yaml.load(TWICE, safe_yaml.StrictObjectLoader)
    assert "found duplicate key 'mode' (first at line 5)" in str(caught.value)
    assert caught.value.problem_mark.line + 1 == 6


def test_merge_keys_may_be_overridden_and_request_bodies_keep_last_wins() -> None:
    merged = safe_yaml.load("base: &b {x: 1, y: 2}\nthis: {<<: *b, x: 3}\n",
                            safe_yaml.StrictObjectLoader)
    assert merged["this"] == {"x": 3, "y": 2}
    assert safe_yaml.load(TWICE, safe_yaml.ObjectLoader)["data"] == {"mode": "hold"}


def test_a_rendered_manifest_with_a_key_twice_is_an_action_error() -> None:
    with pytest.raises(CheckError, match="rendered YAML is invalid at rendered line 6"):
        parse_yaml(TWICE)
    with pytest.raises(CheckError, match="duplicate key 'mode'"):
        parse_yaml_documents("---\n" + TWICE)


def test_a_seed_file_with_a_key_twice_is_refused_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "seed.yaml").write_text(TWICE)
    with pytest.raises(ConfigError, match="duplicate key 'mode'") as caught:
        load_seed_file(tmp_path / "seed.yaml")
    assert "seed.yaml:6" in str(caught.value)
