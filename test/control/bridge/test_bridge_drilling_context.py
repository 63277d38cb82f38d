"""The whole drilling monitor and the virtual fixtures on the ROS path: DriveBridge with a hole's
context (bridge.drilling_context, what drive_node makes of task_node's /quirobot/drilling_context).

Behaviour, on the simulated backend: the task file's no-go zone stops the drives naming it, the
spindle interlock refuses a feed towards the bone before the spindle is at speed, and far-cortex
breakthrough holds the feed; the settings are checked against the task file's own numbers.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import yaml

from quirobot_control.axes.virtual_fixtures import ToolGeometry, tip_positions
from quirobot_control.bridge.drilling_context import HoleContext, hole_setup
from quirobot_control.bridge.drive_bridge import open_bridge
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.planning.tasks import load_task
from quirobot_control.simulation.bone_contact import BoneContact
from quirobot_control.simulation.closed_loop import Drilling
from quirobot_description.data_files import find_data_file
from quirobot_description.parameters import DrillParameters, axes_for
from quirobot_description.urdf import robot_description

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

pytest.importorskip("mujoco")

START = [0.8, 0.9, 1.0, 1.5, 0.5, 0.004]
FEED = DRILL_AXES.index(DrillParameters.feed_joint)


@pytest.fixture(scope="module")
def control(parameters):
    return control_configuration(parameters)


def context(entry, direction, task: str = "", max_thrust: float = 60.0) -> HoleContext:
    return HoleContext(True, np.asarray(entry), np.asarray(direction), 0.0252, 0.0015, max_thrust, task)


def bridge_at_start(parameters, control):
    return open_bridge(
        "simulated", parameters, control, robot_description("drill", "real"), now=0.0, initial=START
    )


def tip_and_axis(bridge) -> tuple[np.ndarray, np.ndarray]:
    plant = bridge.backend.plant
    axis = plant.tip - plant.tool0
    return plant.tip.copy(), axis / np.linalg.norm(axis)


def test_settings_follow_the_task_file(parameters, control):
    """The shipped incision: breakthrough armed at its far cortex (the layers' thicknesses read
    from the YAML here) less the arm margin, the goal's lower thrust limit, its no-go zone."""
    raw = yaml.safe_load(Path(find_data_file("config/tasks/incision.yaml")).read_text())
    layers = raw["bone"]["layers"]
    far_cortex = sum(layer["thickness"]["value"] for layer in layers[:-1])
    task = load_task("incision")
    setup = hole_setup(context(task.entry, task.direction, "incision", 45.0), parameters, control)
    margin = parameters.drilling.safety.breakthrough_arm_margin
    assert setup.settings.arm_depth == pytest.approx(far_cortex - margin, abs=1e-12)
    assert setup.settings.thrust_limit == 45.0
    assert setup.bone_model
    assert [zone.name for zone in setup.fixtures.zones] == [z["name"] for z in raw["no_go_zones"]]
    without = hole_setup(context(task.entry, task.direction), parameters, control)
    assert without.settings.arm_depth == 0.0 and not without.bone_model and without.fixtures is None
    assert without.settings.thrust_limit == min(60.0, parameters.drilling.safety.thrust_limit)
    idle = hole_setup(None, parameters, control)
    assert idle.settings.arm_depth is None and not idle.settings.drilling_context


def test_a_bad_context_is_refused_naming_the_problem(parameters, control):
    with pytest.raises(ValueError, match="no-such-task.yaml"):
        hole_setup(context([0, 0, 0], [0, 0, -1], "/tmp/no-such-task.yaml"), parameters, control)
    with pytest.raises(ValueError, match="direction"):
        context([0, 0, 0], [0, 0, 0])
    with pytest.raises(ValueError, match="max_thrust"):
        context([0, 0, 0], [0, 0, -1], max_thrust=float("nan"))


def test_the_task_files_no_go_zone_stops_the_drives_naming_it(parameters, control, tmp_path):
    """A task file whose zone holds the tool where it stands: its context stops every drive at
    the next period, naming the zone; without the context the same pose runs on."""
    with bridge_at_start(parameters, control) as bridge:
        tip = tip_positions(np.array([START]), ToolGeometry.from_parameters(parameters))[0]
        raw = yaml.safe_load(Path(find_data_file("config/tasks/incision.yaml")).read_text())
        raw["no_go_zones"] = [
            {
                "name": "test_zone_around_the_tip",
                "shape": "box",
                "center": {"value": [float(v) for v in tip], "unit": "m", "source": "test"},
                "size": {"value": [0.05, 0.05, 0.05], "unit": "m", "source": "test"},
            }
        ]
        task_file = tmp_path / "zone.yaml"
        task_file.write_text(yaml.safe_dump(raw))
        for k in range(20):
            bridge.command(list(DRILL_AXES), START, now=k * bridge.dt)
            assert bridge.step(k * bridge.dt).stop_reason is None
        _, axis = tip_and_axis(bridge)
        bridge.set_drilling_context(context(tip + 0.01 * axis, axis, str(task_file)))
        bridge.command(list(DRILL_AXES), START, now=20 * bridge.dt)
        reason = bridge.step(20 * bridge.dt).stop_reason
        assert reason is not None and "test_zone_around_the_tip" in reason, reason


def test_the_spindle_interlock_refuses_a_feed_towards_the_bone_before_the_spindle_is_at_speed(
    parameters, control
):
    with bridge_at_start(parameters, control) as bridge:
        tip, axis = tip_and_axis(bridge)
        bridge.command(list(DRILL_AXES), START, now=0.0)
        bridge.step(0.0)
        bridge.set_drilling_context(context(tip + 0.0003 * axis, axis))  # the bone 0.3 mm ahead
        assert not bridge.backend.spindle.at_speed  # just switched on
        reason = None
        for k in range(1, 50):
            position = list(START)
            position[FEED] += 0.5 * 0.01 * (k * bridge.dt) ** 2
            velocity = [0.0] * len(DRILL_AXES)
            velocity[FEED] = 0.01 * k * bridge.dt
            bridge.command(list(DRILL_AXES), position, velocity, now=k * bridge.dt)
            reason = bridge.step(k * bridge.dt).stop_reason
            if reason:
                break
        assert reason is not None and "spindle not at speed" in reason, reason


@pytest.mark.slow
def test_far_cortex_breakthrough_holds_the_feed(parameters, control, tmp_path):
    """The shipped bone laid along the feed axis, drilled at 2.5 mm/s past its far cortex: the
    bridge's monitor (armed from the task file's far cortex) ends the feed within 0.5 mm past the
    far surface (issue 8's aim) and holds it there while the command goes on; no stop latched."""
    task = load_task("incision")
    bone = task.bone
    thickness = sum(layer.thickness for layer in bone.layers)
    with bridge_at_start(parameters, control) as bridge:
        tip, axis = tip_and_axis(bridge)
        entry = tip + 0.001 * axis
        bridge.backend.tip_force = BoneContact(bridge.backend.plant, Drilling(entry, axis, bone))
        for k in range(50):  # the spindle up to speed before the feed
            bridge.command(list(DRILL_AXES), START, now=k * bridge.dt)
            bridge.step(k * bridge.dt)
        # The incision's bone without its zones: the test bone lies wherever the arm stands.
        raw = yaml.safe_load(Path(find_data_file("config/tasks/incision.yaml")).read_text())
        raw.pop("no_go_zones")
        raw.pop("entry_speed_limit")
        task_file = tmp_path / "bone_only.yaml"
        task_file.write_text(yaml.safe_dump(raw))
        hole = dataclasses.replace(context(entry, axis, str(task_file)), feed_rate=0.0025)
        assert "breakthrough armed from the task's far cortex" in bridge.set_drilling_context(hole)
        spin_up = 50 + round(1.0 / bridge.dt)
        for k in range(50, spin_up):
            bridge.command(list(DRILL_AXES), START, now=k * bridge.dt)
            bridge.step(k * bridge.dt)
        assert bridge.backend.spindle.at_speed
        rate, acceleration = 0.0025, 0.01
        ramp = rate / acceleration
        travel = 0.001 + thickness + 0.002  # 2 mm past the far surface if nothing stops it
        depths = []
        for k in range(round((ramp + travel / rate) / bridge.dt)):
            t = k * bridge.dt
            s, v = (
                (0.5 * acceleration * t**2, acceleration * t)
                if t < ramp
                else (0.5 * rate * ramp + rate * (t - ramp), rate)
            )
            position, velocity = list(START), [0.0] * len(DRILL_AXES)
            position[FEED] += s
            velocity[FEED] = v
            now = (spin_up + k) * bridge.dt
            bridge.command(list(DRILL_AXES), position, velocity, now=now)
            sample = bridge.step(now)
            assert sample.stop_reason is None, sample.stop_reason
            depths.append(float((bridge.backend.plant.tip - entry) @ axis))
        event = bridge.thrust_monitor.event
        assert event is not None and event.success, event
        past = max(depths) - thickness
        assert 0.0 < past < 0.5e-3, f"stopped {past * 1e3:.3f} mm past the far cortex"
        assert depths[-1] < s - 1e-3  # held while the command went on
