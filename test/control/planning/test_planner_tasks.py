"""Task files (config/tasks/*.yaml): loaded with their sources, refused by key when malformed."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from quirobot_control.planning.tasks import IncisionTask, LineTask, TaskError, bone_task, load_task, task_file


def test_shipped_tasks_load_with_a_source_for_every_number():
    incision = load_task("incision")
    assert isinstance(incision, IncisionTask)
    assert np.linalg.norm(incision.direction) == pytest.approx(1.0, abs=1e-12)
    assert incision.bone.thickness == pytest.approx(0.025)  # near cortex + canal + far cortex
    assert 0.0005 <= incision.feed_rate <= 0.0025  # the literature's bone-drilling feed rates
    line = load_task("line")
    assert isinstance(line, LineTask)

    def leaves(node, path=""):
        if isinstance(node, dict) and "value" in node:
            yield path, node
        elif isinstance(node, dict):
            for key, value in node.items():
                yield from leaves(value, f"{path}.{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                yield from leaves(value, f"{path}[{index}]")

    for name in ("incision", "line"):
        raw = yaml.safe_load(task_file(name).read_text())
        found = list(leaves(raw))
        assert len(found) > 5
        for path, leaf in found:
            assert leaf.get("source", "").strip(), f"{name}{path} has no source"
            assert "unit" in leaf, f"{name}{path} has no unit"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.pop("depth"), "depth: missing"),
        (lambda d: d["depth"].update(value=-0.01), "depth: must be > 0"),
        (lambda d: d["direction"].update(value=[0.0, 0.0, -2.0]), "direction must be a unit vector"),
        (lambda d: d["entry"].update(value=[1.0, 1.0]), "entry: must be a list of 3 finite numbers"),
        (lambda d: d["feed_rate"].update(source=""), "feed_rate: has no source"),
        (lambda d: d["bone"]["layers"][0]["thickness"].update(value=0.0), "thickness: must be > 0"),
        (lambda d: d.update(task="knee"), "task must be one of incision, line"),
    ],
)
def test_malformed_task_files_are_refused_by_key(tmp_path, edit, message):
    raw = yaml.safe_load(task_file("incision").read_text())
    edit(raw)
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(TaskError, match=message.replace("(", r"\(").replace("[", r"\[")):
        load_task(path)


def test_unknown_task_names_and_missing_files_are_refused(tmp_path):
    with pytest.raises(TaskError, match="unknown task 'knee'"):
        load_task("knee")
    with pytest.raises(TaskError, match="cannot read task file"):
        load_task(tmp_path / "absent.yaml")


def test_a_simulated_bone_is_an_incision_task_checked_before_use(tmp_path, monkeypatch):
    """The launch files' bone (drive_node's simulated_bone): none, a shipped incision, or an
    incision task file made absolute; anything else refused naming the value and the problem."""
    assert bone_task("") == bone_task("none") == "none"
    assert bone_task("incision") == "incision"
    raw = yaml.safe_load(task_file("incision").read_text())
    (tmp_path / "tibia.yaml").write_text(yaml.safe_dump(raw))
    monkeypatch.chdir(tmp_path)
    assert bone_task("tibia.yaml") == str(tmp_path / "tibia.yaml")
    assert load_task(bone_task("tibia.yaml")).bone == load_task("incision").bone
    with pytest.raises(TaskError, match="bone 'line': a LineTask has no bone"):
        bone_task("line")
    with pytest.raises(TaskError, match="bone 'absent.yaml': cannot read task file"):
        bone_task("absent.yaml")
    raw["depth"]["value"] = -0.01
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(TaskError, match="bone 'bad.yaml': .*depth: must be > 0"):
        bone_task("bad.yaml")
