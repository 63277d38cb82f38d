"""Pin insertion: the shipped pin reaches its depth within 0.5 mm under the torque limit; a harder
bone stops on the torque limit; the feed follows the thread (feed = pitch x revolutions)."""

from __future__ import annotations

import numpy as np

from quirobot_control.models.pin_insertion import PinLayer, insertion_torque
from quirobot_control.simulation.pin_procedure import insert_pin, load_pin
from quirobot_description.data_files import find_data_file
from quirobot_description.parameters import load_parameters

PARAMS = load_parameters()
TASK = load_pin(find_data_file("config/tasks/pin.yaml"))


def test_torque_model_is_the_engaged_length_times_each_layer_s_torque():
    layers = (PinLayer("a", 0.004, 650.0), PinLayer("b", 0.017, 30.0), PinLayer("c", 0.004, 650.0))
    # Written out by hand: 2 mm of a; all of a and 10 mm of b; all three.
    assert np.isclose(insertion_torque(0.002, layers), 650.0 * 0.002)
    assert np.isclose(insertion_torque(0.014, layers), 650.0 * 0.004 + 30.0 * 0.010)
    assert np.isclose(insertion_torque(0.030, layers, 2.0), 2.0 * (650.0 * 0.008 + 30.0 * 0.017))


def test_pin_reaches_its_depth_within_the_torque_limit():
    result = insert_pin(TASK, PARAMS, 0.001)
    pin = result.metrics.procedure
    assert result.metrics.run.completed and not pin.stopped_on_torque
    assert pin.insertion_depth_error <= 0.5e-3
    assert pin.peak_insertion_torque <= TASK.torque_limit
    # At full depth both cortices are engaged: the torque the layers give, computed here.
    expected = sum(layer.torque_per_length * layer.thickness for layer in TASK.layers)
    assert abs(pin.peak_insertion_torque - expected) < 0.05 * expected


def test_feed_is_pitch_times_revolutions():
    result = insert_pin(TASK, PARAMS, 0.001)
    depth = np.array(result.depth)
    # Where the spindle runs at its insertion speed, the depth grows by pitch per revolution.
    rate = np.diff(depth) / 0.001
    assert np.isclose(np.median(rate), TASK.pitch * TASK.speed / (2 * np.pi), rtol=1e-3)


def test_harder_bone_stops_on_the_torque_limit():
    result = insert_pin(TASK, PARAMS, 0.001, bone_factor=3.0)
    pin = result.metrics.procedure
    assert pin.stopped_on_torque and not result.metrics.run.completed
    assert "above the limit" in result.metrics.run.stop_reason
    assert pin.final_depth < TASK.depth - 0.5e-3
    # The drive stopped within one control period of passing the limit.
    assert pin.peak_drive_torque <= TASK.torque_limit * 1.01
