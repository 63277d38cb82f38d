"""Property tests (hypothesis): the exact discretization composes; the drive respects its limits."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quirobot_control.drive_simulators.simulated_drive import drive_for_joint
from quirobot_control.models.motor import CurrentLoop, electrical_step
from quirobot_description.parameters import JOINT_NAMES, load_parameters

PARAMS = load_parameters()
finite = dict(allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(
    motor_name=st.sampled_from(["gantry_motor", "wrist_motor"]),
    current=st.floats(-50, 50, **finite),
    voltage=st.floats(-60, 60, **finite),
    speed=st.floats(-900, 900, **finite),
    h=st.floats(1e-7, 1e-2, **finite),
    split=st.floats(0.01, 0.99, **finite),
)
def test_one_step_equals_two_steps(motor_name, current, voltage, speed, h, split):
    motor = PARAMS.motors[motor_name]
    once = electrical_step(motor, current, voltage, speed, h)
    twice = electrical_step(
        motor, electrical_step(motor, current, voltage, speed, split * h), voltage, speed, (1 - split) * h
    )
    assert once == pytest.approx(twice, rel=1e-9, abs=1e-9)
    steady = (voltage - motor.back_emf_constant * speed) / motor.resistance
    assert min(current, steady) - 1e-9 <= once <= max(current, steady) + 1e-9  # monotone approach


@settings(max_examples=100, deadline=None)
@given(
    reference=st.floats(-100, 100, **finite),
    current=st.floats(-40, 40, **finite),
    speed=st.floats(-300, 300, **finite),
)
def test_current_loop_never_exceeds_the_voltage_limit(reference, current, speed):
    motor = PARAMS.motors["gantry_motor"]
    drive = PARAMS.drive
    loop = CurrentLoop(motor, drive.current_loop_bandwidth, drive.current_loop_rate, 45.0)
    for _ in range(5):
        voltage = loop.update(reference, current, speed)
        assert abs(voltage) <= 45.0
        current = electrical_step(motor, current, voltage, speed, loop.period)


@settings(max_examples=40, deadline=None)
@given(
    joint=st.sampled_from(JOINT_NAMES),
    commands=st.lists(st.floats(-200, 200, **finite), min_size=1, max_size=6),
    velocity_fraction=st.floats(-1, 1, **finite),
    dt=st.floats(1e-5, 3e-3, **finite),
)
def test_drive_current_stays_within_its_rating(joint, commands, velocity_fraction, dt):
    drive = drive_for_joint(PARAMS, joint)
    params = PARAMS.joint(joint)
    velocity = velocity_fraction * params.velocity
    drive.enable()
    q = 0.5 * (params.lower + params.upper)
    for command in commands:
        drive.command_current(command)
        effort = drive.advance(dt, q, velocity)
        q += velocity * dt
        fb = drive.feedback()
        assert abs(fb.current) <= params.motor.max_current
        assert math.isfinite(effort) and effort == pytest.approx(fb.effort)
        assert abs(drive.current_reference) <= params.motor.max_current
