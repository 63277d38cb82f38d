"""The whole drilling monitor and the virtual fixtures on the ROS path: DriveBridge with a goal's
hole (safety.hole_context.HoleContext, what drive_node makes of task_node's
/quirobot/drilling_context; bridge.drilling_context prepares it).

Behaviour, on the simulated backend: the hole's no-go zone stops the drives naming it, the spindle
interlock refuses a feed towards the bone before the spindle is at speed, and far-cortex
breakthrough holds the feed; the drive side runs exactly the hole it was sent (the planner's
arming, never re-derived), and a hole belongs to one goal (issue 33 item 1: a stray context
mid-feed dropped the monitor, the zones and the breakthrough hold).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from quirobot_control.axes.virtual_fixtures import NoGoZone, ToolGeometry, tip_positions
from quirobot_control.bridge.diagnostics import drive_diagnostics
from quirobot_control.bridge.drilling_context import hole_setup
from quirobot_control.bridge.drive_bridge import BridgeError
from quirobot_control.hardware import thrust_feedforward
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.planning.drill_hole import DrillGoal, plan_drill_hole
from quirobot_control.planning.tasks import load_task
from quirobot_control.safety.hole_context import HoleContext
from quirobot_control.simulation.bone_contact import BoneContact, Drilling
from quirobot_control.simulation.simulated_backend import simulated_bridge
from quirobot_description.machine_identity import simulated_machine
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


def context(entry, direction, goal_id: str = "goal-1", max_thrust: float = 60.0, **fields) -> HoleContext:
    """A hole without a bone model (breakthrough armed from the entry), or with `fields`."""
    return HoleContext(
        goal_id=goal_id,
        entry=np.asarray(entry),
        direction=np.asarray(direction),
        depth=0.0252,
        feed_rate=0.0015,
        thrust_limit=max_thrust,
        arm_depth=fields.pop("arm_depth", 0.0),
        exit_depth=fields.pop("exit_depth", None),
        **fields,
    )


def bridge_at_start(parameters, control):
    return simulated_bridge(parameters, control, robot_description("drill", "real"), now=0.0, initial=START)


def tip_and_axis(bridge) -> tuple[np.ndarray, np.ndarray]:
    plant = bridge.backend.plant
    axis = plant.tip - plant.tool0
    return plant.tip.copy(), axis / np.linalg.norm(axis)


def test_the_drive_side_runs_the_plans_hole_as_sent(parameters, control):
    """The shipped incision planned as a goal: its hole arms breakthrough detection on the far
    cortex (the bone's layers here, less the arm margin; safety.breakthrough_plan decided it at
    plan time) and the bridge's monitor takes exactly those numbers, the goal's lower thrust limit
    and the task's no-go zones; no hole: the thrust limit alone."""
    task = load_task("incision")
    feed_mass = control.joint(DrillParameters.feed_joint).effective_inertia
    goal = DrillGoal(task.entry, task.direction, task.depth, task.feed_rate, 45.0)
    plan = plan_drill_hole(goal, task.park, parameters, control.dt, task, feed_mass=feed_mass)
    hole = plan.hole_context("goal-1")
    far_cortex = sum(layer.thickness for layer in task.bone.layers[:-1])
    margin = parameters.drilling.safety.breakthrough_arm_margin
    assert hole.arm_depth == pytest.approx(far_cortex - margin, abs=1e-12)
    assert hole.exit_depth == pytest.approx(task.bone.thickness, abs=1e-12)
    setup = hole_setup(hole, parameters, control, DRILL_AXES)
    settings = setup.monitor.settings
    assert (settings.arm_depth, settings.exit_depth) == (hole.arm_depth, hole.exit_depth)
    assert settings.thrust_limit == 45.0
    assert [zone.name for zone in setup.fixtures.zones] == [zone.name for zone in task.no_go_zones]
    without = hole_setup(context(task.entry, task.direction), parameters, control, DRILL_AXES)
    assert without.monitor.settings.arm_depth == 0.0 and without.fixtures is None
    assert without.monitor.settings.thrust_limit == min(60.0, parameters.drilling.safety.thrust_limit)
    idle = hole_setup(None, parameters, control, DRILL_AXES)
    assert idle.monitor.settings.arm_depth is None and not idle.monitor.settings.drilling_context


def test_a_bad_context_is_refused_naming_the_problem():
    with pytest.raises(ValueError, match="direction"):
        context([0, 0, 0], [0, 0, 0])
    with pytest.raises(ValueError, match="thrust_limit"):
        context([0, 0, 0], [0, 0, -1], max_thrust=float("nan"))
    with pytest.raises(ValueError, match="goal_id"):
        context([0, 0, 0], [0, 0, -1], goal_id="")
    with pytest.raises(ValueError, match="arm_depth"):
        context([0, 0, 0], [0, 0, -1], arm_depth=float("nan"))


def test_a_hole_belongs_to_one_goal(parameters, control):
    """Issue 33 item 1: mid-feed, a stray context (another goal's, or an end that is not the
    running goal's) changes nothing: refused naming both goals, and the zone still stops the
    drives; the running goal's own end ends it. Disabling is refused while it is active."""
    with bridge_at_start(parameters, control) as bridge:
        for k in range(5):
            bridge.command(list(DRILL_AXES), START, now=k * bridge.dt)
            bridge.step(k * bridge.dt)
        tip, axis = tip_and_axis(bridge)
        far = NoGoZone.box("far_zone", tip + np.array([0.0, 0.5, 0.0]), [0.05, 0.05, 0.05])
        bridge.set_drilling_context("goal-1", context(tip + 0.01 * axis, axis, zones=(far,)))
        bridge.step(5 * bridge.dt)
        assert bridge.hole.context.goal_id == "goal-1" and bridge.hole.fixtures.zones == (far,)
        with pytest.raises(BridgeError, match="goal 'goal-2'.*refused: goal 'goal-1'"):
            bridge.set_drilling_context("goal-2", context(tip, axis, goal_id="goal-2"))
        with pytest.raises(BridgeError, match="end of goal 'goal-2'.*goal 'goal-1'"):
            bridge.set_drilling_context("goal-2", None)
        with pytest.raises(BridgeError, match="names goal 'goal-3', sent for 'goal-1'"):
            bridge.set_drilling_context("goal-1", context(tip, axis, goal_id="goal-3"))
        with pytest.raises(BridgeError, match="disable refused: goal 'goal-1' is drilling"):
            bridge.disable()
        bridge.step(6 * bridge.dt)
        assert bridge.hole.context.goal_id == "goal-1" and bridge.hole.fixtures.zones == (far,)
        assert bridge.hardware.lifecycle.value == "active"
        bridge.set_drilling_context("goal-1", None)
        bridge.step(7 * bridge.dt)
        assert bridge.hole.context is None and bridge.hole.fixtures is None
        assert bridge.disable() == "disabled"


def test_a_hole_is_swapped_in_at_the_next_period(parameters, control):
    """Prepared by the caller, in force only from the next step (the cycle never builds it)."""
    with bridge_at_start(parameters, control) as bridge:
        bridge.command(list(DRILL_AXES), START, now=0.0)
        bridge.step(0.0)
        tip, axis = tip_and_axis(bridge)
        bridge.set_drilling_context("goal-1", context(tip + 0.01 * axis, axis))
        assert bridge.hole.context is None
        bridge.step(bridge.dt)
        assert bridge.hole.context.goal_id == "goal-1"


def test_the_holes_no_go_zone_stops_the_drives_naming_it(parameters, control):
    """A hole whose zone holds the tool where it stands: its context stops every drive at the
    next period, naming the zone; without the context the same pose runs on."""
    with bridge_at_start(parameters, control) as bridge:
        tip = tip_positions(np.array([START]), ToolGeometry.from_parameters(parameters))[0]
        zone = NoGoZone.box("test_zone_around_the_tip", tip, [0.05, 0.05, 0.05])
        for k in range(20):
            bridge.command(list(DRILL_AXES), START, now=k * bridge.dt)
            assert bridge.step(k * bridge.dt).stop_reason is None
        _, axis = tip_and_axis(bridge)
        bridge.set_drilling_context("goal-1", context(tip + 0.01 * axis, axis, zones=(zone,)))
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
        bridge.set_drilling_context("goal-1", context(tip + 0.0003 * axis, axis))  # the bone 0.3 mm ahead
        bridge.step(0.0)  # in force from this period
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
def test_far_cortex_breakthrough_holds_the_feed(parameters, control):
    """The shipped bone laid along the feed axis, drilled at 2.5 mm/s past its far cortex: the
    bridge's monitor (armed where the hole says: the far cortex less the margin) ends the feed
    within 0.5 mm past the far surface (issue 8's aim) and holds it there while the command goes
    on; no stop latched."""
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
        far_cortex = sum(layer.thickness for layer in bone.layers[:-1])
        arm = far_cortex - parameters.drilling.safety.breakthrough_arm_margin
        hole = dataclasses.replace(
            context(entry, axis, arm_depth=arm, exit_depth=thickness, bone=bone), feed_rate=0.0025
        )
        assert f"breakthrough armed at {arm * 1e3:.2f} mm" in bridge.set_drilling_context("goal-1", hole)
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


def test_the_drive_side_measures_the_tip_with_the_plans_calibration(parameters, control):
    """Issue 33 item 6: drive_node measured the tip with the nominal model while task_node planned
    with the machine's calibration (1.30 mm apart along the axis for in-tolerance errors). The
    hole carries the plan's calibration: the bridge's depth along the hole is the calibrated FK's,
    to the last digit; the nominal model's is the reading it replaces."""
    from quirobot_control.planning.tasks import Kinematics
    from quirobot_kinematics import KinematicModel

    band = parameters.geometric.tolerance  # every error at its tolerance band's edge: a plausible machine
    calibration = dataclasses.replace(
        band, xy_squareness=-band.xy_squareness, tcp_offset_y=-band.tcp_offset_y
    )
    task = load_task("incision")
    feed_mass = control.joint(DrillParameters.feed_joint).effective_inertia
    goal = DrillGoal(task.entry, task.direction, task.depth, task.feed_rate, 60.0)
    plan = plan_drill_hole(
        goal, task.park, parameters, control.dt, task, feed_mass=feed_mass, calibration=calibration
    )
    hole = plan.hole_context("goal-1", simulated_machine(None))  # the bridge's: the nominal machine
    assert hole.calibration == calibration
    with bridge_at_start(parameters, control) as bridge:
        bridge.set_drilling_context("goal-1", hole)
        bridge.command(list(DRILL_AXES), START, now=0.0)
        bridge.step(0.0)
        q = np.array([bridge.hardware.state(name, "position") for name in DRILL_AXES])  # what it measured
        calibrated = Kinematics(KinematicModel.from_parameters(parameters).calibrated(calibration)).tip(q)
        nominal = Kinematics(KinematicModel.from_parameters(parameters)).tip(q)
        depth = bridge._feed_depth()
        assert bridge.hole.tip_depth is None  # numpy's: the compiled depth is the nominal chain's
        expected = float((calibrated - task.entry) @ task.direction)
        assert depth == pytest.approx(expected, abs=1e-12)
        assert abs(depth - float((nominal - task.entry) @ task.direction)) > 1e-4  # the old reading
    # What drive_node publishes of it (/diagnostics "quirobot/drilling", read over DDS by
    # test/ros/test_launch_calibration.py): the monitor's depth of a period, on the calibrated FK of
    # the joints it measured, and named calibrated. The hole without its zones: START is inside the
    # operating table's, whose fixture would stop the drives before the monitor runs.
    with bridge_at_start(parameters, control) as bridge:
        bridge.set_drilling_context("goal-1", dataclasses.replace(hole, zones=()))
        bridge.command(list(DRILL_AXES), START, now=0.0)
        for k in range(3):
            bridge.step(k * control.dt)
        assert bridge.hardware.stop_reason is None
        q = np.array([bridge.hardware.state(name, "position") for name in DRILL_AXES])
        tip = Kinematics(KinematicModel.from_parameters(parameters).calibrated(calibration)).tip(q)
        depth = float((tip - task.entry) @ task.direction)
        hole_status = bridge.status().hole
        assert (hole_status.goal_id, hole_status.kinematics) == ("goal-1", "calibrated")
        assert hole_status.tip_depth == pytest.approx(depth, abs=1e-12)
        entry = next(e for e in drive_diagnostics(bridge.status()) if e.name == "quirobot/drilling")
        assert dict(entry.values)["kinematics"] == "calibrated"
        assert float(dict(entry.values)["tip_depth"]) == pytest.approx(depth, abs=1e-12)


def test_the_nominal_holes_depth_is_numpys_to_the_last_bit(parameters, control):
    """The nominal hole's depth by the compiled kernel where it runs (hardware.thrust_feedforward.
    compiled_tip_depth, every period), the same float as numpy's (test_feedforward_kernel.py)."""
    task = load_task("incision")
    with bridge_at_start(parameters, control) as bridge:
        bridge.set_drilling_context("goal-1", context(task.entry, task.direction))
        bridge.command(list(DRILL_AXES), START, now=0.0)
        for k in range(3):
            bridge.step(k * control.dt)
        assert (bridge.hole.tip_depth is not None) == thrust_feedforward.KERNEL_RUNS
        depth = bridge._feed_depth()
        bridge.hole = dataclasses.replace(bridge.hole, tip_depth=None)
        assert depth.hex() == bridge._feed_depth().hex()
        assert bridge.thrust_monitor.depth == depth


def test_a_calibrated_hole_is_taken_only_on_its_calibrations_machine(parameters, control):
    """Issue 33: an in-band calibration of another machine is invisible to what the robot measures
    (test_success_is_honest.py: success with the true tip 0.66 mm off the axis). The bridge takes a
    calibrated hole only when every drive on its bus has the serial number the calibration names:
    another machine's is refused, naming the drive and both numbers, nothing changes, and the
    refusal is in the status its goal reads; the same hole on its own machine is taken."""
    from quirobot_control.bridge.bridge_error import BridgeError

    calibration = parameters.geometric.sample(np.random.default_rng(4))
    task = load_task("incision")
    feed_mass = control.joint(DrillParameters.feed_joint).effective_inertia
    goal = DrillGoal(task.entry, task.direction, task.depth, task.feed_rate, 60.0)
    plan = plan_drill_hole(
        goal, task.park, parameters, control.dt, task, feed_mass=feed_mass, calibration=calibration
    )
    with bridge_at_start(parameters, control) as bridge:  # the nominal simulated machine
        assert bridge.backend.machine == simulated_machine(None, bridge.names)
        with pytest.raises(
            BridgeError,
            match=r"another machine: drive gantry_x has serial number 0x00000001, "
            r"the calibrated machine's 0x00000501",
        ):
            bridge.set_drilling_context("goal-1", plan.hole_context("goal-1", simulated_machine(4)))
        bridge.step(0.0)
        assert bridge.hole.context is None and bridge.hole.kinematics == "nominal"
        status = bridge.status()
        assert status.hole_refused[0] == "goal-1" and "another machine" in status.hole_refused[1]
        assert status.hole.goal_id is None
        bridge.set_drilling_context("goal-2", plan.hole_context("goal-2", simulated_machine(None)))
        bridge.step(0.0)
        assert bridge.status().hole.goal_id == "goal-2" and bridge.hole.kinematics == "calibrated"
