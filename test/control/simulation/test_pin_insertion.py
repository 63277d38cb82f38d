"""Pin insertion: the shipped pin reaches its depth within 0.5 mm under the torque limit; a harder
bone stops on the torque limit; the feed follows the thread (feed = pitch x revolutions)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.models.pin_insertion import PinLayer, insertion_torque
from quirobot_control.simulation.pin_procedure import REST_FEED, insert_pin, load_pin
from quirobot_description.data_files import find_data_file
from quirobot_description.parameters import load_parameters

PARAMS = load_parameters()
CONTROL = control_configuration(PARAMS)
TASK = load_pin(find_data_file("config/tasks/pin.yaml"))


def test_torque_model_is_the_engaged_length_times_each_layer_s_torque():
    layers = (PinLayer("a", 0.004, 650.0), PinLayer("b", 0.017, 30.0), PinLayer("c", 0.004, 650.0))
    # Written out by hand: 2 mm of a; all of a and 10 mm of b; all three.
    assert np.isclose(insertion_torque(0.002, layers), 650.0 * 0.002)
    assert np.isclose(insertion_torque(0.014, layers), 650.0 * 0.004 + 30.0 * 0.010)
    assert np.isclose(insertion_torque(0.030, layers, 2.0), 2.0 * (650.0 * 0.008 + 30.0 * 0.017))


def test_pin_reaches_its_depth_within_the_torque_limit():
    result = insert_pin(TASK, PARAMS, CONTROL)
    pin = result.metrics.procedure
    assert result.metrics.run.completed and not pin.stopped_on_torque
    assert pin.insertion_depth_error <= 0.5e-3
    assert pin.peak_insertion_torque <= TASK.torque_limit
    # At full depth both cortices are engaged: the torque the layers give, computed here.
    expected = sum(layer.torque_per_length * layer.thickness for layer in TASK.layers)
    assert abs(pin.peak_insertion_torque - expected) < 0.05 * expected


def test_feed_is_pitch_times_revolutions():
    result = insert_pin(TASK, PARAMS, CONTROL)
    depth = np.array(result.depth)
    # Where the spindle runs at its insertion speed, the depth grows by pitch per revolution.
    rate = np.diff(depth) / 0.001
    assert np.isclose(np.median(rate), TASK.pitch * TASK.speed / (2 * np.pi), rtol=1e-3)


def test_harder_bone_stops_on_the_torque_limit():
    result = insert_pin(TASK, PARAMS, CONTROL, bone_factor=3.0)
    pin = result.metrics.procedure
    assert pin.stopped_on_torque and not result.metrics.run.completed
    assert "above the limit" in result.metrics.run.stop_reason
    assert pin.final_depth < TASK.depth - 0.5e-3
    # The drive stopped within one control period of passing the limit.
    assert pin.peak_drive_torque <= TASK.torque_limit * 1.01


def _task_file(tmp_path, change) -> Path:
    raw = yaml.safe_load(find_data_file("config/tasks/pin.yaml").read_text())
    change(raw)
    path = tmp_path / "pin.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@pytest.mark.parametrize("depth", [0.080, 0.150])
def test_a_depth_past_the_far_cortex_by_more_than_the_protrusion_limit_is_refused(tmp_path, depth):
    # Issue 33 item 12: 80 and 150 mm through the 25 mm bone ran and reported success.
    path = _task_file(tmp_path, lambda raw: raw["depth"].update(value=depth))
    bone = sum(layer.thickness for layer in TASK.layers)
    with pytest.raises(ValueError, match="past the bone's far side") as error:
        insert_pin(load_pin(path), PARAMS, CONTROL)
    assert f"{depth * 1e3:.1f} mm" in str(error.value)
    assert f"({bone * 1e3:.1f} mm" in str(error.value)
    # The shipped depth, at the far side plus the limit, is accepted.
    assert TASK.depth <= bone + TASK.protrusion_limit + 1e-9


def test_a_depth_beyond_the_feed_s_stroke_is_refused(tmp_path):
    # A bone thick enough that the far-side check passes: the feed cannot reach the depth.
    drill = PARAMS.drill
    stroke = drill.feed.upper - drill.feed.lower - 2.0 * drill.feed.soft_margin

    def deep(raw):
        raw["layers"][1]["thickness"]["value"] = 0.080
        raw["depth"]["value"] = stroke + 0.004

    with pytest.raises(ValueError, match=f"beyond the drill feed's {stroke * 1e3:.1f} mm stroke"):
        insert_pin(load_pin(_task_file(tmp_path, deep)), PARAMS, CONTROL)


def test_a_feed_above_the_feed_axis_velocity_limit_is_refused(tmp_path):
    # Issue 33 item 12: pitch x speed = 318 mm/s ran against the feed's 10 mm/s limit.
    def fast(raw):
        raw["pitch"]["value"] = 0.01
        raw["speed"]["value"] = 200.0

    with pytest.raises(ValueError) as error:
        insert_pin(load_pin(_task_file(tmp_path, fast)), PARAMS, CONTROL)
    feed = 0.01 * 200.0 / (2 * np.pi)
    assert f"{feed * 1e3:.1f} mm/s" in str(error.value)
    assert f"velocity limit {PARAMS.drill.feed.velocity * 1e3:.1f} mm/s" in str(error.value)


def test_the_run_ends_with_the_pin_at_rest(tmp_path):
    # Issue 33 item 12: the run ended with the pin still advancing (55.7 mm/s) and a depth error
    # of 0. Without the approach's slow-down the pin reaches its depth at full feed: the run goes
    # on until the spindle has run down, every revolution counted in the depth.
    path = _task_file(tmp_path, lambda raw: raw["approach_rate"].update(value=1e3))
    task = load_pin(path)
    result = insert_pin(task, PARAMS, CONTROL)
    pin = result.metrics.procedure
    last_feed = (result.depth[-1] - result.depth[-2]) / 0.001
    assert last_feed <= REST_FEED
    assert pin.final_feed_speed <= REST_FEED and result.metrics.run.completed
    # The run-down's overshoot is reported, not clipped to the target.
    assert pin.final_depth > task.depth
    assert pin.insertion_depth_error == pytest.approx(pin.final_depth - task.depth)
    # The shipped task ends at rest too.
    shipped = insert_pin(TASK, PARAMS, CONTROL)
    assert (shipped.depth[-1] - shipped.depth[-2]) / 0.001 <= REST_FEED
