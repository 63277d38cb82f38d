"""The feed's thrust limit on the real-drive path: DriveBridge (drive_node's core) runs the
drilling monitor's thrust limit on the feed drive's measured effort every period.

The simulated backend's plant drills the shipped incision's bone (simulation.bone_contact, the
thrust model of `quirobot simulate`) laid along the feed axis in front of the bit, wherever the
arm stands: its normal thrust must not trip the limit, and the same bone made too hard for the
feed must end in the thrust-limit stop before the feed pushes at its current clamp.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from quirobot_control.bridge.drive_bridge import DriveBridge
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.planning.tasks import load_task
from quirobot_control.safety.stop_codes import StopCode
from quirobot_control.simulation.bone_contact import BoneContact, Drilling
from quirobot_control.simulation.simulated_backend import simulated_bridge
from quirobot_description.parameters import DrillParameters, axes_for
from quirobot_description.urdf import robot_description

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

START = [0.8, 0.9, 1.0, 1.5, 0.5, 0.004]
FEED = DRILL_AXES.index(DrillParameters.feed_joint)
STANDOFF = 0.001  # m: the bone's surface this far ahead of the bit's tip


@pytest.fixture(scope="module")
def control(parameters):
    return control_configuration(parameters)


def feed_axis(bridge: DriveBridge) -> np.ndarray:
    """(3,) the world direction the bit's tip moves along when the feed advances (unit)."""
    plant = bridge.backend.plant
    axis = plant.tip - plant.tool0
    return axis / np.linalg.norm(axis)


def drill(parameters, control, thrust_scale: float, distance: float) -> tuple[DriveBridge, list[float], list]:
    """Feed the bit `distance` (m) past the bone's surface at the incision's feed rate into its bone
    (reference thrust times `thrust_scale`); the bridge, the feed's effort each period and the
    samples, up to and including the first with a stop latched."""
    task = load_task("incision")
    bridge = simulated_bridge(parameters, control, robot_description("drill", "real"), now=0.0, initial=START)
    plant = bridge.backend.plant
    axis = feed_axis(bridge)
    bone = dataclasses.replace(task.bone, reference_thrust=thrust_scale * task.bone.reference_thrust)
    bridge.backend.tip_force = BoneContact(plant, Drilling(plant.tip + STANDOFF * axis, axis, bone))
    rate, acceleration = task.feed_rate, task.feed_acceleration
    ramp = rate / acceleration  # s to reach the feed rate
    travel = STANDOFF + distance
    duration = ramp + travel / rate
    efforts, samples = [], []
    for k in range(round(duration / bridge.dt)):
        t = k * bridge.dt
        if t < ramp:
            s, v = 0.5 * acceleration * t**2, acceleration * t
        else:
            s, v = 0.5 * rate * ramp + rate * (t - ramp), rate
        position = list(START)
        position[FEED] += s
        velocity = [0.0] * len(DRILL_AXES)
        velocity[FEED] = v
        bridge.command(list(DRILL_AXES), position, velocity, now=t)
        sample = bridge.step(t)
        samples.append(sample)
        efforts.append(sample.effort[FEED])
        if sample.stop_reason is not None:
            break
    return bridge, efforts, samples


def test_the_feed_axis_is_the_tool_axis(parameters, control):
    """The test's bone lies along tool0 -> tip: check that the feed moves the tip along it."""
    with simulated_bridge(
        parameters, control, robot_description("drill", "real"), now=0.0, initial=START
    ) as b:
        before, axis = b.backend.plant.tip.copy(), feed_axis(b)
        target = list(START)
        for k in range(600):
            target[FEED] = START[FEED] + 0.002 * min(k / 400, 1.0)  # a 0.4 s ramp
            b.command(list(DRILL_AXES), target, now=k * b.dt)
            b.step(k * b.dt)
        moved = b.backend.plant.tip - before
    assert np.linalg.norm(moved) == pytest.approx(0.002, rel=0.02)
    np.testing.assert_allclose(moved / np.linalg.norm(moved), axis, atol=1e-3)


def test_normal_drilling_through_the_near_cortex_does_not_trip(parameters, control):
    # Through the near cortex (4 mm, its thrust the highest of the bone) into the canal.
    bridge, efforts, samples = drill(parameters, control, 1.0, 0.005)
    with bridge:
        assert samples[-1].stop_reason is None, samples[-1].stop_reason
        peak = max(efforts)
        # The shipped bone's cortical thrust at 1.5 mm/s: 30 N * 1.5^0.6 = 38 N, well cut.
        assert 30.0 < peak < parameters.drilling.safety.thrust_limit
        assert bridge.thrust_monitor.thrust < parameters.drilling.safety.thrust_limit
        assert samples[-1].position[FEED] > START[FEED] + STANDOFF + 0.0045


def test_a_too_hard_bone_ends_in_the_thrust_limit_stop(parameters, control):
    # Three times the shipped cortex' thrust: 115 N at the feed rate, above the feed's 100 N clamp.
    bridge, efforts, samples = drill(parameters, control, 3.0, 0.004)
    limit = parameters.drilling.safety.thrust_limit
    with bridge:
        reason = samples[-1].stop_reason
        assert reason is not None, f"no stop; peak feed effort {max(efforts):.1f} N"
        assert reason.startswith("thrust limit: feed thrust"), reason
        assert f"above the limit {limit:.1f} N" in reason
        # Stopped while the feed still had authority: its effort never reached the current clamp.
        assert max(efforts) < parameters.drill.feed.effort_limit
        assert max(efforts[:-1]) > limit - 10.0  # it did push hard before the stop
        assert bridge.hardware.stop_reason == reason
        assert bridge.status().stop_code is StopCode.DRILLING_MONITOR  # what DrivesState carries
