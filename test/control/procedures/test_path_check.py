"""The executor's path check (procedures.path_check): a measured joint against the plan's sample at
the state's stamp, within the controllers' path tolerances."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from quirobot_control.planning.trajectory import JointTrajectory, Phase
from quirobot_control.procedures.path_check import PathCheck

ROOT = Path(__file__).resolve().parents[3]
NAMES = ("a", "b")
TOLERANCE = np.array([1e-3, 2e-3])


def still_plan() -> JointTrajectory:
    """Two joints at rest at (0.1, 0.2) for 1 s."""
    count = 11
    return JointTrajectory(
        dt=0.1,
        positions=np.tile([0.1, 0.2], (count, 1)),
        velocities=np.zeros((count, 2)),
        accelerations=np.zeros((count, 2)),
        phases=(Phase("hold", 0.0, 1.0),),
        names=NAMES,
    )


def test_within_and_beyond_tolerance():
    check = PathCheck(TOLERANCE, NAMES)
    assert check.check(still_plan(), 0.5, np.array([0.1005, 0.2015])) is None
    reason = check.check(still_plan(), 0.5, np.array([0.1, 0.203]))
    assert reason is not None and "joint b is 0.003" in reason and "limit 0.002" in reason


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_measurement_is_beyond_every_tolerance(bad):
    """Issue 33 item 5: NaN compared as within tolerance (`not nan > 1` is true)."""
    reason = PathCheck(TOLERANCE, NAMES).check(still_plan(), 0.5, np.array([0.1, bad]))
    assert reason is not None and "joint b measured" in reason


def test_an_exempt_joint_is_not_held_to_the_plan():
    check = PathCheck(TOLERANCE, NAMES)
    assert check.check(still_plan(), 0.5, np.array([0.1, 0.25]), exempt=frozenset({"b"})) is None
    assert check.check(still_plan(), 0.5, np.array([0.2, 0.25]), exempt=frozenset({"b"})) is not None


def test_a_time_out_lets_a_passing_exceedance_through_and_counts_it():
    """CiA 402's following error time out: beyond the tolerance for less than it is no abort."""
    check = PathCheck(TOLERANCE, NAMES, time_out=0.01)
    plan = still_plan()
    assert check.check(plan, 0.5, np.array([0.103, 0.2])) is None  # beyond, for 0 ms
    assert check.check(plan, 0.509, np.array([0.103, 0.2])) is None  # for 9 ms
    assert check.check(plan, 0.510, np.array([0.1, 0.2])) is None  # back within
    assert check.passed == 1
    assert check.worst[0] == pytest.approx(0.003)
    assert "largest path deviation a 0.003 (300% of its tolerance); 1 beyond it for less than the 10 ms" in (
        check.summary()
    )


def test_a_deviation_that_outlasts_the_time_out_ends_the_goal():
    check = PathCheck(TOLERANCE, NAMES, time_out=0.01)
    plan = still_plan()
    for k in range(10):
        assert check.check(plan, 0.5 + 1e-3 * k, np.array([0.103, 0.2])) is None
    reason = check.check(plan, 0.510, np.array([0.103, 0.2]))
    assert reason is not None and "joint a is 0.003" in reason
    assert "beyond it for 10 ms (time-out 10 ms)" in reason
    assert check.passed == 0


def test_a_frozen_stamp_does_not_age_an_exceedance():
    """The states' stamps measure it: states repeating one stamp are one instant."""
    check = PathCheck(TOLERANCE, NAMES, time_out=0.01)
    for _ in range(100):
        assert check.check(still_plan(), 0.5, np.array([0.103, 0.2])) is None


@pytest.mark.parametrize("bad", [-1e-3, math.nan, math.inf])
def test_a_time_out_must_be_a_finite_number_of_seconds(bad):
    with pytest.raises(ValueError, match="time-out"):
        PathCheck(TOLERANCE, NAMES, time_out=bad)


def _gazebo_run(time_out: float, stall_at: float | None = None) -> str | None:
    """A 10 mm/s move of joint a through gz_ros2_control's position loop (gain and rate from
    config/controllers_gazebo.yaml: x += gain * (reference - x) per physics step), its controllers'
    clock frozen from 0.5 s to 0.8 s of physics time and then caught up at once (a 0.3 s jump, 3 mm
    of reference in one step); `stall_at`: the joint stops there (a real deviation). Each step's
    state is checked at the controllers' stamp, as task_node does: the first reason, or None."""
    config = yaml.safe_load((ROOT / "config" / "controllers_gazebo.yaml").read_text())
    gain = config["gz_ros_control"]["ros__parameters"]["position_proportional_gain"]
    rate = config["controller_manager"]["ros__parameters"]["update_rate"]
    speed, duration = 0.01, 2.0  # m/s, s
    count = int(round(duration * rate)) + 1
    times = np.arange(count) / rate
    plan = JointTrajectory(
        dt=1.0 / rate,
        positions=np.column_stack([speed * times, np.full(count, 0.2)]),
        velocities=np.column_stack([np.full(count, speed), np.zeros(count)]),
        accelerations=np.zeros((count, 2)),
        phases=(Phase("move", 0.0, duration),),
        names=NAMES,
    )
    check = PathCheck(TOLERANCE, NAMES, time_out=time_out)
    x = 0.0
    for step in range(count - 1):
        s = step / rate  # physics time
        stamp = 0.5 if 0.5 <= s < 0.8 else s  # the controllers' clock
        if (reason := check.check(plan, stamp, np.array([x, 0.2]))) is not None:
            return reason
        if stall_at is None or s < stall_at:
            x += gain * (plan.sample(stamp)[0][0] - x)
    return None


def test_gazebo_path_time_out_clears_a_jump_of_the_controllers_clock():
    """simulation.gazebo_drives.PATH_TIME_OUT, derived there: a 0.3 s jump of the controllers'
    clock at 10 mm/s (3 mm, three tolerances) aborts a goal checked at once and passes with the
    time-out; a joint that stalls is still caught, within the time-out and a step."""
    from quirobot_control.simulation.gazebo_drives import PATH_TIME_OUT

    at_once = _gazebo_run(0.0)
    assert at_once is not None and "joint a is 0.003" in at_once
    assert _gazebo_run(PATH_TIME_OUT) is None
    stalled = _gazebo_run(PATH_TIME_OUT, stall_at=1.2)
    assert stalled is not None and "joint a" in stalled
    held = round(PATH_TIME_OUT * 1e3)
    assert f"beyond it for {held} ms" in stalled or f"beyond it for {held + 1} ms" in stalled, stalled
