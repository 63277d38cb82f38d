"""The arthroscopy task file (planning.arthroscopy): a start depth outside the task's own depth
range, a stream longer than the task duration limit and a depth range deeper than the scope's
sheath are refused in one line naming the file, the key and the numbers (before: the first two
were accepted, a 3,840 s stream planned sample by sample)."""

from __future__ import annotations

import pytest
import yaml

from quirobot_control.planning.arthroscopy import load_arthroscopy, servo_for
from quirobot_control.planning.tasks import MAX_TASK_DURATION, TaskError
from quirobot_description.data_files import find_data_file
from quirobot_description.parameters import load_parameters

SHIPPED = find_data_file("config/tasks/arthroscopy.yaml")
PARAMS = load_parameters()


def _task_file(tmp_path, change) -> object:
    """The shipped task file with `change(raw)` applied, written to tmp_path/knee.yaml."""
    raw = yaml.safe_load(SHIPPED.read_text())
    change(raw)
    path = tmp_path / "knee.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _refusal(path) -> str:
    with pytest.raises(TaskError) as error:
        servo_for(load_arthroscopy(path), PARAMS)
    message = str(error.value)
    assert "\n" not in message and message.startswith("knee.yaml: ")
    return message


@pytest.mark.parametrize(("depth", "shown"), [(0.1, "100.0"), (0.01, "10.0")])
def test_a_start_depth_outside_the_tasks_own_depth_range_is_refused(tmp_path, depth, shown):
    path = _task_file(tmp_path, lambda raw: raw["depth"].update(value=depth))
    assert _refusal(path) == (
        f"knee.yaml: depth: {shown} mm is outside the task's own depth range 15.0-80.0 mm "
        "(min_depth, max_depth)"
    )


def test_a_depth_range_upside_down_is_refused(tmp_path):
    path = _task_file(tmp_path, lambda raw: raw["min_depth"].update(value=0.09))
    assert _refusal(path) == "knee.yaml: max_depth: 80.0 mm must be deeper than min_depth 90.0 mm"


def test_a_stream_longer_than_the_task_limit_is_refused(tmp_path):
    segment = {
        "duration": {"value": 60.0, "unit": "s", "source": "test"},
        "linear": {"value": [0.0, 0.0, 0.0], "unit": "m/s", "source": "test"},
        "angular": {"value": [0.0, 0.0, 0.0], "unit": "rad/s", "source": "test"},
    }
    path = _task_file(tmp_path, lambda raw: raw.update(servo=[segment] * 64))  # 3,840 s of segments
    assert _refusal(path) == (
        f"knee.yaml: servo: the task would last 3841 s (two settles and 64 segments), more than the "
        f"{MAX_TASK_DURATION:g} s limit (MAX_TASK_DURATION)"
    )


def test_a_depth_range_past_the_scopes_sheath_is_refused(tmp_path):
    # The 180 mm scope's sheath runs 150 mm in front of its 30 mm camera coupler.
    path = _task_file(tmp_path, lambda raw: raw["max_depth"].update(value=0.16))
    assert _refusal(path) == (
        "knee.yaml: max_depth 160.0 mm is deeper than the scope's 150.0 mm sheath "
        "(tools.arthroscope.scope_length less meshes.scope_head_length): the camera coupler would "
        "enter the portal"
    )
