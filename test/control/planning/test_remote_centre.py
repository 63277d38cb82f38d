"""The RCM servo: under a random servo stream the scope axis never leaves the portal by more than
the bound, the joint limits hold, and the dead-man brakes and holds."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from quirobot_control.planning.arthroscopy import load_arthroscopy, servo_for
from quirobot_control.planning.remote_centre import Twist, axis_distance
from quirobot_description.data_files import find_data_file
from quirobot_description.parameters import load_parameters
from quirobot_kinematics import forward_kinematics

PARAMS = load_parameters()
TASK = load_arthroscopy(find_data_file("config/tasks/arthroscopy.yaml"))
DT = 0.001
BOUND = 1e-9  # m: the commanded axis passes through the portal (IK precision)

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
    assert servo.holds.get("dead-man: no command within the timeout", 0) >= 500
    assert axis_distance(servo.q, TASK.portal, servo.model) <= BOUND
