"""Braking ahead of no-go zones (issue 19 item 4).

A jog towards a no-go zone at an allowed speed must stop before the tool touches it: the
per-cycle check looks at where each axis would come to rest if quick-stopped now (v^2 / (2 a) at
the parameter file's quick-stop deceleration, as the drives ramp), not only at the tool's pose.
Before, the check fired when the commanded tool touched the zone and the drives' own ramp carried
the tool in by its stopping distance (measured here: 9.0 mm at 0.5 m/s, 35.0 mm at 1 m/s).

The plan check uses the same stopping poses, so a plan the cycle check would stop is refused
when planned.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_hardware_stops import Q0, Robot, Z

from quirobot_control.axes.fixture_monitor import FixtureMonitor
from quirobot_control.axes.limits import PlanningError, stopping_position
from quirobot_control.axes.virtual_fixtures import (
    NoGoZone,
    ToolGeometry,
    VirtualFixtures,
    tool_segments,
)
from quirobot_control.hardware.lifecycle import ReturnType
from quirobot_control.planning.fixture_check import check_plan
from quirobot_control.planning.trajectory import JointTrajectory, Phase
from quirobot_description.parameters import axes_for

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")


@pytest.fixture(scope="module")
def urdf(exported_urdf_factory):
    return exported_urdf_factory("drill")


def _jog_into_zone(parameters, urdf, speed: float) -> tuple[float, str | None]:
    """gantry_z jogged down at `speed` m/s towards a box 200 mm below the tool (the tool pointing
    down); returns how far the true tool went into the zone (m, < 0: it stayed clear by that
    much) and the stop reason."""
    tool = ToolGeometry.from_parameters(parameters)
    tip = tool_segments(Q0[None], tool)["drill tip"][1][0]
    patient = NoGoZone.box("patient", tip - [0.0, 0.0, 0.2 + 0.1], [0.4, 0.4, 0.2])
    robot = Robot(parameters, urdf, VirtualFixtures((patient,), tool))
    jog = np.zeros(6)
    jog[Z] = speed
    lowest_tip = tip[2]
    status = ReturnType.OK
    for _ in range(2000):
        status = robot.cycle(jog if status is ReturnType.OK else None)
        robot.plant.forward_kinematics()
        lowest_tip = min(lowest_tip, float(robot.plant.tip[2]))
        if status is ReturnType.ERROR and abs(robot.plant.velocity[Z]) < 1e-6:
            break
    for _ in range(100):  # at rest, braked
        robot.cycle()
        robot.plant.forward_kinematics()
        lowest_tip = min(lowest_tip, float(robot.plant.tip[2]))
    top = patient.center[2] + patient.size[2] / 2
    # The tool body (radius body_radius around tool0, the tip Q0[5] below tool0) touches the
    # box's top when the tip is this far above it.
    touching = top + tool.body_radius - Q0[5]
    return touching - lowest_tip, robot.hw.stop_reason


@pytest.mark.parametrize("speed", [0.5, 1.0])
def test_a_fast_jog_towards_a_zone_stops_before_the_tool_touches_it(parameters, urdf, speed):
    depth, reason = _jog_into_zone(parameters, urdf, speed)
    assert reason is not None and "no-go zone 'patient'" in reason, reason
    assert "stopping" in reason
    # Clear of the zone, and not stopped absurdly early: within the stopping distance plus a
    # period's travel and the tracking lag of where it could have stopped.
    stopping = speed**2 / (2.0 * parameters.drive.quick_stop_deceleration["gantry_z"])
    assert -(stopping + 3 * speed * 1e-3 + 2e-3) < depth <= 0.0, (depth, stopping)


def test_stopping_position_follow_v2_over_2a():
    position = np.array([1.0, -1.0, 0.0])
    velocity = np.array([2.0, -3.0, 0.0])
    deceleration = np.array([4.0, 9.0, 1.0])
    lead = 0.01
    # Independent: integrate each ramp in small steps.
    expected = []
    for q, v, a in zip(position, velocity, deceleration, strict=True):
        q += v * lead
        dt = 1e-6
        while abs(v) > 0.0:
            step = min(abs(v), a * dt)
            new = v - np.sign(v) * step
            q += 0.5 * (v + new) * dt
            v = new
        expected.append(q)
    np.testing.assert_allclose(stopping_position(position, velocity, deceleration, lead), expected, atol=1e-8)


def test_the_cycle_check_names_the_stopping_distance(parameters):
    tool = ToolGeometry.from_parameters(parameters)
    tip = tool_segments(Q0[None], tool)["drill tip"][1][0]
    # The box's top 20 mm below the tool body's bottom (tool0, Q0[5] above the tip, less its radius).
    top = tip[2] + Q0[5] - tool.body_radius - 0.02
    zone = NoGoZone.box("patient", [tip[0], tip[1], top - 0.1], [0.4, 0.4, 0.2])
    monitor = FixtureMonitor(VirtualFixtures((zone,), tool))
    q = Q0.tolist()
    still = [0.0] * len(DRILL_AXES)
    assert monitor.check(q, q, 0.001, still) is None
    moving = list(still)
    moving[Z] = 1.0  # down: 34 mm to stop at 14.7 m/s^2, more than the 20 mm left
    reason = monitor.check(q, q, 0.001, moving)
    assert reason is not None and reason.startswith("virtual fixture: the commanded tool body, stopping from")
    assert "no-go zone 'patient'" in reason


def test_a_plan_passing_a_zone_closer_than_its_stopping_distance_is_refused(parameters):
    """A straight gantry_z plan at 1 m/s that ends 20 mm above a zone at a planned 10 m/s^2 stays
    out of it, but stopped at full speed the tool would enter: refused naming the zone."""
    tool = ToolGeometry.from_parameters(parameters)
    dt = 0.001
    count = 200
    positions = np.tile(Q0, (count, 1))
    velocities = np.zeros((count, 6))
    velocities[:, Z] = 1.0
    positions[:, Z] = Q0[Z] + np.arange(count) * dt
    trajectory = JointTrajectory(
        dt=dt,
        positions=positions,
        velocities=velocities,
        accelerations=np.zeros((count, 6)),
        phases=(Phase("jog", 0.0, (count - 1) * dt),),
    )
    end_tip = tool_segments(positions[-1:], tool)["drill tip"][1][0]
    top = end_tip[2] - (tool.body_radius - Q0[5]) - 0.02  # 20 mm below the last body pose
    zone = NoGoZone.box("patient", [end_tip[0], end_tip[1], top - 0.1], [0.4, 0.4, 0.2])
    with pytest.raises(PlanningError, match=r"stopping .*no-go zone 'patient' in phase jog"):
        check_plan(trajectory, VirtualFixtures((zone,), tool))
