"""The RCM servo: under a random servo stream the scope axis never leaves the portal by more than
the bound, nor its cone, the joint limits hold, and the dead-man brakes and holds; a held pivot or
insertion brakes to a stop on the cone's or the depth range's boundary; the dead-man holds
whatever the clock does and however long a step is; the tool body is kept out of no-go zones.
Angles, depths and distances are recomputed here from the joints' FK."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quirobot_control.axes.virtual_fixtures import NoGoZone
from quirobot_control.planning.arthroscopy import load_arthroscopy, servo_for
from quirobot_control.planning.remote_centre import Twist, axis_distance
from quirobot_description.data_files import find_data_file
from quirobot_description.parameters import load_parameters
from quirobot_kinematics import forward_kinematics

PARAMS = load_parameters()
TASK = load_arthroscopy(find_data_file("config/tasks/arthroscopy.yaml"))
DT = 0.001
PERIOD = 0.01  # s: scope_servo_node's command period
BOUND = 1e-9  # m: the commanded axis passes through the portal (IK precision)


def _angle(a: np.ndarray) -> float:
    """rad between a scope axis (3,) and the task's entry direction."""
    return math.acos(min(1.0, float(a @ TASK.direction)))


def _tip(q: np.ndarray, model) -> np.ndarray:
    """(3,) the scope tip at joints q (5,): tool0 + scope_length along its z."""
    T = forward_kinematics(q, model)
    return T[:3, 3] + PARAMS.arthroscope.scope_length * T[:3, 2]


vector = st.lists(st.floats(-0.05, 0.05), min_size=3, max_size=3)
spin = st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3)
segment = st.tuples(vector, spin, st.integers(1, 80), st.booleans())


@settings(max_examples=25, deadline=None)
@given(st.lists(segment, min_size=1, max_size=6))
def test_random_servo_stream_keeps_the_portal(segments):
    servo = servo_for(TASK, PARAMS)
    limits = servo.limits
    lower, upper = PARAMS.lower_limits[:5], PARAMS.upper_limits[:5]
    braking = limits.timeout + 1.0 / limits.pivot_acceleration + 0.05 / limits.insertion_acceleration
    t, last_command, q = 0.0, None, servo.q.copy()
    for linear, angular, cycles, send in segments:
        for _ in range(cycles):
            if send:
                servo.receive(Twist(np.array(linear), np.array(angular), t))
                last_command = t
            step = servo.step(t, DT)
            # Independent checks: the axis from FK, the speed from the position difference.
            T = forward_kinematics(step.q, servo.model)
            offset = TASK.portal - T[:3, 3]
            assert np.linalg.norm(offset - (offset @ T[:3, 2]) * T[:3, 2]) <= BOUND
            assert np.all(np.abs(step.q - q) / DT <= limits.joint_velocity * (1 + 1e-9))
            assert np.all(step.q >= lower - 1e-9) and np.all(step.q <= upper + 1e-9)
            assert limits.min_depth - 1e-12 <= step.depth <= limits.max_depth + 1e-12
            assert _angle(T[:3, 2]) <= limits.cone_half_angle + 1e-9
            if last_command is None or t - last_command > braking + 2 * DT:
                assert np.array_equal(step.q, q)  # the dead-man: braked, then held
            q = step.q
            t += DT


def test_dead_man_holds_after_the_timeout():
    servo = servo_for(TASK, PARAMS)
    servo.receive(Twist(np.zeros(3), np.array([0.2, 0.0, 0.0]), 0.0))
    t, moved = 0.0, []
    while t < 2.0:
        before = servo.q.copy()
        servo.step(t, DT)
        moved.append(not np.array_equal(before, servo.q))
        t += DT
    assert any(moved[:100]) and not any(moved[-500:])
    assert servo.holds.get("dead-man", 0) >= 500
    assert servo.why == "dead-man: no command within the timeout"
    assert axis_distance(servo.q, TASK.portal, servo.model) <= BOUND


# The held pivots (about x both ways, about y) and one about the vertical.
PIVOTS = ([0.3, 0.0, 0.0], [-0.3, 0.0, 0.0], [0.0, 0.3, 0.0], [0.0, 0.0, 0.3])


@pytest.mark.parametrize("angular", PIVOTS)
def test_a_held_pivot_brakes_to_a_stop_on_the_cone_and_can_turn_back(angular):
    # Before: held 20 s, these pivots turned the scope 104, 166, 111 and 41 deg from its entry
    # direction, the first three with its back end (tool0) past the portal, inside the knee.
    servo = servo_for(TASK, PARAMS)
    limits, t, rates = servo.limits, 0.0, []
    for _ in range(1000):  # 10 s at the node's 100 Hz
        servo.receive(Twist(np.zeros(3), np.array(angular), t))
        step = servo.step(t, PERIOD)
        T = forward_kinematics(step.q, servo.model)
        assert (T[:3, 3] - TASK.portal) @ TASK.direction < 0.0  # the back end stays out
        assert _angle(T[:3, 2]) <= limits.cone_half_angle + 1e-9
        rates.append(servo.pivot_rate.copy())
        t += PERIOD
    assert _angle(servo.direction) == pytest.approx(limits.cone_half_angle, abs=1e-6)  # on it
    assert step.limited.startswith("pivot cone") and servo.holds["pivot cone"] > 300
    # It brakes at the smoothing's acceleration: no step changes the pivot rate by more (the
    # last step onto the boundary by up to 20 % more: the braking law's discrete grid).
    changes = np.linalg.norm(np.diff(rates, axis=0), axis=1)
    assert changes.max() <= limits.pivot_acceleration * PERIOD * 1.2
    for _ in range(100):  # turning towards the entry direction: back inside the cone
        towards = np.cross(servo.direction, TASK.direction)
        servo.receive(Twist(np.zeros(3), 0.3 * towards / np.linalg.norm(towards), t))
        servo.step(t, PERIOD)
        t += PERIOD
    assert _angle(servo.direction) < limits.cone_half_angle - 0.1


@pytest.mark.parametrize("inwards", [True, False])
def test_a_held_insertion_brakes_to_a_stop_at_the_end_of_the_depth_range(inwards):
    # Before: the depth was clipped, the insertion rate dropping from 20 mm/s to 0 in one step.
    servo = servo_for(TASK, PARAMS)
    limits, t, rates = servo.limits, 0.0, []
    speed = limits.tip_speed if inwards else -limits.tip_speed
    for _ in range(600):
        servo.receive(Twist(speed * TASK.direction, np.zeros(3), t))
        servo.step(t, PERIOD)
        tip = _tip(servo.q, servo.model)
        depth = float((tip - TASK.portal) @ servo.direction)
        assert limits.min_depth - 1e-9 <= depth <= limits.max_depth + 1e-9
        rates.append(servo.insertion_rate)
        t += PERIOD
    end = limits.max_depth if inwards else limits.min_depth
    assert servo.depth == pytest.approx(end, abs=1e-9) and servo.insertion_rate == 0.0
    assert np.abs(np.diff(rates)).max() <= limits.insertion_acceleration * PERIOD * 1.2  # as the pivot's
    assert servo.holds["insertion depth"] > 100


def _after_letting_go(clock_back: float) -> np.ndarray:
    """The scope tip (3,) 2 s after the operator lets go of a 20 mm/s, 0.3 rad/s command, the
    clock stepping back by `clock_back` s right after the command."""
    servo = servo_for(TASK, PARAMS)
    t = 100.0
    for _ in range(300):  # moving at the limits
        servo.receive(Twist(np.array([0.0, 0.02, 0.0]), np.array([0.3, 0.0, 0.0]), t))
        servo.step(t, DT)
        t += DT
    t -= clock_back
    for _ in range(2000):
        servo.step(t, DT)
        t += DT
    return _tip(servo.q, servo.model)


def test_the_dead_man_holds_when_the_clock_steps_back():
    # Before: after the clock stepped back an hour, the last command stayed young for an hour:
    # the tip went on moving (29 mm in these 2 s) after the operator let go.
    reference = _after_letting_go(0.0)
    for back in (0.05, 3600.0):
        assert np.linalg.norm(_after_letting_go(back) - reference) < 1e-9


def test_one_command_moves_the_tip_at_most_the_dead_man_timeout_at_the_tip_speed():
    # Before: a 1 s step (scope_servo_node at 1 Hz) applied a 0.1 s-timeout command for the whole
    # second: 21 mm of tip motion on one command.
    limits = servo_for(TASK, PARAMS).limits
    for period in (1.0, 0.25, 0.1):
        servo = servo_for(TASK, PARAMS)
        start = _tip(servo.q, servo.model)
        servo.receive(Twist(np.array([0.0, 0.0, -limits.tip_speed]), np.zeros(3), 0.0))
        t, tips = 0.0, []
        for _ in range(int(round(3.0 / period))):
            servo.step(t, period)
            tips.append(_tip(servo.q, servo.model))
            t += period
        moved = np.linalg.norm(np.array(tips) - start, axis=1)
        # The timeout's worth at the tip speed (2 mm), plus the curvature of a step this long.
        assert moved.max() <= limits.tip_speed * limits.timeout * 1.01
        assert np.array_equal(tips[-1], tips[-2])  # then it holds


def _segment_points(start: np.ndarray, end: np.ndarray, n: int = 100) -> np.ndarray:
    return start + np.linspace(0.0, 1.0, n)[:, None] * (end - start)


def test_the_tool_body_is_kept_out_of_no_go_zones_not_only_the_scope():
    # A capsule beside the tool body (the wrist_pitch axis to tool0, link 5's 40 mm radius), 50
    # mm from its axis, on the side the body swings to when the tip moves sideways: the scope's
    # rod stays far from it. Before: only the rod was checked, the body went 45 mm into it.
    servo = servo_for(TASK, PARAMS)
    T = forward_kinematics(servo.q, servo.model)
    tool0, a = T[:3, 3], T[:3, 2]
    wrist = tool0 - servo.model.l5 * a
    side = np.array([-1.0, 0.0, 0.0])  # the tip moves +x, the body -x about the portal
    zone = NoGoZone.capsule("retractor", wrist + 0.05 * side, tool0 - 0.03 * a + 0.05 * side, 0.005)
    servo.zones = (zone,)
    body_radius = PARAMS.link("wrist_pitch_link").radius
    rod_to_zone = []
    zone_points = _segment_points(zone.start, zone.end)
    t = 0.0
    for _ in range(300):  # 3 s sideways at 10 mm/s
        servo.receive(Twist(np.array([0.01, 0.0, 0.0]), np.zeros(3), t))
        step = servo.step(t, PERIOD)
        T = forward_kinematics(step.q, servo.model)
        tool0, a = T[:3, 3], T[:3, 2]
        body = _segment_points(tool0 - servo.model.l5 * a, tool0)
        rod = _segment_points(tool0, tool0 + PARAMS.arthroscope.scope_length * a)
        gap = np.linalg.norm(body[:, None] - zone_points[None], axis=2).min() - body_radius - zone.radius
        assert gap > -1e-4, f"the tool body is {-gap * 1e3:.1f} mm inside the zone at {t:.3f} s"
        rod_to_zone.append(np.linalg.norm(rod[:, None] - zone_points[None], axis=2).min())
        t += PERIOD
    assert step.held == "no-go zone retractor: the tool body would enter it"
    assert min(rod_to_zone) > 0.02  # the rod alone never came near it
