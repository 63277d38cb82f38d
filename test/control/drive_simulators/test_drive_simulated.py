"""The simulated servo drive: state machine, current loop, effort, encoder, against physics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quirobot_control.drive_simulators.simulated_drive import SimulatedDrive, drive_for_joint
from quirobot_control.drives.interface import (
    Drive,
    DriveError,
    DriveFeedback,
    DriveState,
    StopCategory,
)
from quirobot_control.models.encoder import Encoder
from quirobot_description.parameters import JOINT_NAMES, DrillParameters, load_parameters


@pytest.fixture(scope="module")
def params():
    return load_parameters()


@pytest.mark.parametrize("name", (*JOINT_NAMES, DrillParameters.feed_joint))
def test_factory_builds_a_drive_for_every_joint(params, name):
    drive = drive_for_joint(params, name)
    assert isinstance(drive, Drive)
    assert drive.name == name
    fb = drive.feedback()
    assert isinstance(fb, DriveFeedback)
    assert fb.state is DriveState.DISABLED and fb.fault is None and fb.current == 0.0
    transmission, motor = params.axis(name).transmission, params.axis(name).motor
    assert drive.reflected_inertia == pytest.approx(motor.rotor_inertia * transmission.ratio**2)


def test_unknown_joint_is_refused(params):
    with pytest.raises(ValueError, match="no drive for joint 'elbow'"):
        drive_for_joint(params, "elbow")


def test_state_machine(params):
    drive = drive_for_joint(params, "gantry_x")
    drive.command_current(5.0)  # ignored while disabled
    drive.advance(1e-3, 0.0, 0.0)
    assert drive.feedback().current == 0.0
    drive.enable()
    assert drive.feedback().state is DriveState.ENABLED
    drive.command_current(5.0)
    drive.advance(2e-3, 0.0, 0.0)
    assert drive.feedback().current == pytest.approx(5.0, rel=1e-3)
    drive.disable()
    fb = drive.feedback()
    assert fb.state is DriveState.DISABLED and fb.current == 0.0 and fb.effort == 0.0
    drive.enable()
    drive.quick_stop()
    assert drive.feedback().state is DriveState.QUICK_STOP
    with pytest.raises(DriveError, match="reset_fault"):
        drive.enable()
    drive.disable()  # latched: disable() does not leave QUICK_STOP
    assert drive.feedback().state is DriveState.QUICK_STOP
    drive.reset_fault()
    assert drive.feedback().state is DriveState.DISABLED
    drive.enable()
    drive.command_current(3.0)
    drive.advance(1e-3, 0.0, 0.0)
    assert drive.feedback().current > 2.9
    drive.inject_fault("encoder lost")
    fb = drive.feedback()
    assert fb.state is DriveState.FAULT and fb.fault == "encoder lost" and fb.current == 0.0
    with pytest.raises(DriveError, match="encoder lost"):
        drive.command_current(1.0)
    with pytest.raises(DriveError, match="FAULT"):
        drive.enable()
    drive.quick_stop()  # does not hide a fault
    assert drive.feedback().state is DriveState.FAULT
    drive.reset_fault()
    fb = drive.feedback()
    assert fb.state is DriveState.DISABLED and fb.fault is None


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), "abc"])
def test_non_finite_command_quick_stops(params, bad):
    drive = drive_for_joint(params, "wrist_yaw")
    drive.enable()
    drive.command_current(1.0)
    drive.advance(1e-3, 0.0, 0.0)
    with pytest.raises(DriveError):
        drive.command_current(bad)
    assert drive.feedback().state is DriveState.QUICK_STOP
    assert drive.current_reference == 0.0


def test_current_reference_step_to_zero_decays_through_the_loop(params):
    drive = drive_for_joint(params, "gantry_z")
    w_c = params.drive.current_loop_bandwidth
    period = 1.0 / params.drive.current_loop_rate
    drive.enable()
    drive.command_current(4.0)
    drive.advance(5e-3, 0.0, 0.0)
    start = drive.feedback().current
    drive.command_current(0.0)
    for k in range(1, 20):
        drive.advance(period, 0.0, 0.0)
        assert drive.feedback().current == pytest.approx(
            start * math.exp(-w_c * k * period), rel=1e-6, abs=1e-9
        )
    drive.advance(5e-3, 0.0, 0.1)  # moving: back-EMF is fed forward, the current stays zero
    assert abs(drive.feedback().current) < 1e-6


@pytest.mark.parametrize("category", [StopCategory.TORQUE_OFF, StopCategory.RAMP_THEN_OFF])
def test_category_0_switches_off_at_once(params, category):
    """Category 0, asked for or the only one a drive without its position loop can do: zero current
    at once, the brake commanded (it holds brake_engage_time later), commands ignored."""
    drive = drive_for_joint(params, "gantry_z")  # position loop never configured
    drive.enable()
    drive.command_current(4.0)
    drive.advance(5e-3, 0.0, 0.0)
    drive.quick_stop(category)
    fb = drive.feedback()
    assert fb.state is DriveState.QUICK_STOP and fb.current == 0.0 and drive.current_reference == 0.0
    drive.command_current(4.0)  # ignored
    drive.advance(5e-3, 0.0, 0.1)
    assert drive.feedback().current == 0.0 and not drive.brake_engaged
    drive.advance(params.drive.brake_engage_time, 0.0, 0.0)
    assert drive.brake_engaged


@pytest.mark.parametrize("name", ["gantry_x", "gantry_z"])
def test_voltage_limited_step_to_zero_leaves_no_integrator_tail(params, name):
    """From a large current at speed the first samples hit the bus-voltage limit; once off it,
    the current must fall at the loop's own rate 1/w_c (a frozen integrator would hold back
    R * i_old and leave several percent of the current flowing after a millisecond)."""
    drive = drive_for_joint(params, name)
    w_c = params.drive.current_loop_bandwidth
    drive.enable()
    drive.command_current(0.5 * drive.motor.max_current)
    for _ in range(20):
        drive.advance(1e-3, 0.0, 0.5)
    start = drive.feedback().current
    drive.command_current(0.0)
    currents = []
    for _ in range(6):
        drive.advance(2e-4, 0.0, 0.5)
        currents.append(drive.feedback().current)
    assert drive.loop.saturated is False
    # After the limited start, each 0.2 ms divides the current by exp(w_c * 0.2 ms).
    for before, after in zip(currents[2:], currents[3:], strict=False):
        assert after == pytest.approx(before * math.exp(-w_c * 2e-4), rel=1e-3)
    assert abs(currents[-1]) < 2e-3 * start


def test_command_is_clipped_and_effort_follows_the_drive_train(params):
    for efficiency in (True, False):
        drive = drive_for_joint(params, "wrist_pitch", efficiency=efficiency)
        joint = params.joint("wrist_pitch")
        drive.enable()
        drive.command_current(100.0)
        assert drive.current_reference == joint.motor.max_current
        effort = drive.advance(0.01, 0.0, 0.0)
        fb = drive.feedback()
        eta = joint.transmission.efficiency if efficiency else 1.0
        assert abs(fb.current) <= joint.motor.max_current
        expected = joint.motor.torque_constant * fb.current * joint.transmission.ratio * eta
        assert effort == pytest.approx(expected) and fb.effort == pytest.approx(expected)
        assert fb.current == pytest.approx(joint.motor.max_current, rel=1e-4)
        drive.command_current(-100.0)
        assert drive.current_reference == -joint.motor.max_current


def test_uneven_time_steps_give_the_same_current(params):
    """The loop's sampling phase is carried across calls: any split of 1 ms gives one answer."""
    splits = ([1e-3], [1.3e-4, 2.2e-4, 5e-5, 6e-4], [1e-5] * 100)
    results = []
    for split in splits:
        drive = drive_for_joint(params, "gantry_y")
        drive.enable()
        drive.command_current(7.0)
        for dt in split:
            drive.advance(dt, 0.0, 0.2)
        results.append(drive.feedback().current)
    np.testing.assert_allclose(results, results[0], rtol=1e-9)


def test_encoder_quantizes_position_and_velocity_is_estimated(params):
    joint = params.joint("gantry_x")
    encoder = Encoder(params.drive.encoder_counts_per_rev, joint.transmission.ratio)
    assert encoder.resolution == pytest.approx(2 * math.pi / (params.drive.encoder_counts_per_rev * 60.0))
    drive = drive_for_joint(params, "gantry_x")
    velocity = 0.37  # m/s
    dt = 2.5e-4
    rng = np.random.default_rng(0)
    q0 = rng.uniform(0.1, 1.9)
    for k in range(200):
        q = q0 + velocity * k * dt
        drive.advance(dt, q, velocity)
        fb = drive.feedback()
        assert abs(fb.position - q) <= encoder.resolution / 2 + 1e-15
        assert fb.position / encoder.resolution == pytest.approx(
            round(fb.position / encoder.resolution), abs=1e-6
        )
    # Difference of quantized positions over 1/control_rate: error below one count per period.
    assert abs(fb.velocity - velocity) <= encoder.resolution * params.drive.control_rate + 1e-12


def test_constant_current_accelerates_a_free_load_as_newton_says(params):
    """Drive on a frictionless carriage of mass m: a = K_T*i*ratio*eta / (m + J*ratio^2)."""
    joint = params.joint("gantry_y")
    drive = drive_for_joint(params, "gantry_y")
    mass = 15.0
    inertia = mass + drive.reflected_inertia
    drive.enable()
    drive.command_current(2.0)
    dt = 1e-4
    q, v = 0.5, 0.0
    for _ in range(1000):  # 0.1 s
        force = drive.advance(dt, q, v)
        v += force / inertia * dt
        q += v * dt
    expected = (
        joint.motor.torque_constant
        * 2.0
        * joint.transmission.ratio
        * joint.transmission.efficiency
        / inertia
        * 0.1
    )
    # Current rise (~0.16 ms) costs < 0.3 % of the velocity after 0.1 s.
    assert v == pytest.approx(expected, rel=3e-3)


def test_overspeed_faults_the_drive(params):
    drive = drive_for_joint(params, "wrist_yaw")
    joint = params.joint("wrist_yaw")
    drive.enable()
    drive.advance(1e-3, 0.0, 1.01 * joint.motor.max_speed / joint.transmission.ratio)
    fb = drive.feedback()
    assert fb.state is DriveState.FAULT and "overspeed" in fb.fault and fb.current == 0.0


def test_bad_advance_inputs_are_refused(params):
    drive = drive_for_joint(params, "gantry_x")
    with pytest.raises(ValueError, match="joint velocity"):
        drive.advance(1e-3, 0.0, float("nan"))
    with pytest.raises(ValueError, match="time step"):
        drive.advance(-1e-3, 0.0, 0.0)


def test_simulated_drive_accepts_the_drill(params):
    drive = SimulatedDrive(params.drill.feed, params.drive)
    assert drive.name == DrillParameters.feed_joint
    drive.enable()
    drive.command_current(1.0)
    effort = drive.advance(2e-3, 0.0, 0.0)
    feed = params.drill.feed
    assert effort == pytest.approx(
        feed.motor.torque_constant * 1.0 * feed.transmission.ratio * feed.transmission.efficiency, rel=1e-4
    )


def test_transmission_losses_follow_the_power_flow(params):
    from quirobot_control.models.transmission import motor_speed, motor_torque

    tr = params.joint("wrist_pitch").transmission
    eta = tr.efficiency
    efforts = np.array([30.0, -30.0, 30.0, -30.0])
    velocities = np.array([0.5, -0.5, -0.5, 0.5])  # driving, driving, back-driven, back-driven
    p_joint = efforts * velocities
    p_motor = motor_torque(tr, efforts, velocities) * motor_speed(tr, velocities)
    np.testing.assert_allclose(p_joint[:2], eta * p_motor[:2])  # motor supplies the losses
    np.testing.assert_allclose(p_motor[2:], eta * p_joint[2:])  # load supplies them
    assert motor_torque(tr, 30.0, efficiency=False) == pytest.approx(30.0 / tr.ratio)


def test_encoder_refuses_bad_settings():
    with pytest.raises(ValueError, match="whole number"):
        Encoder(0, 10.0)
    with pytest.raises(ValueError, match="ratio"):
        Encoder(1024, float("nan"))
    with pytest.raises(ValueError, match="finite"):
        Encoder(1024, 10.0).quantize(float("inf"))


def test_holding_brake_engages_after_the_drive_stops_driving(params):
    """Engaged at power-up, released by enable(), engaged again brake_engage_time s after the
    drive stops driving (quick stop, disable or fault), holding K_T * I_max * ratio * holding ratio."""
    engage = params.drive.brake_engage_time
    joint = params.joint("gantry_z")
    drive = drive_for_joint(params, "gantry_z")
    assert drive.brake_holding_effort == pytest.approx(
        params.drive.brake_holding_ratio
        * joint.motor.torque_constant
        * joint.motor.max_current
        * joint.transmission.ratio
    )
    assert drive.brake_engaged  # power-up: the axis is held
    for stop in (DriveState.QUICK_STOP, DriveState.DISABLED, DriveState.FAULT):
        drive.reset_fault()
        drive.enable()
        assert not drive.brake_engaged
        drive.advance(1.0, 0.5, 0.0)  # driving for a long time: still released
        assert not drive.brake_engaged
        {
            DriveState.QUICK_STOP: drive.quick_stop,
            DriveState.DISABLED: drive.disable,
            DriveState.FAULT: lambda: drive.inject_fault("test"),
        }[stop]()
        assert drive.feedback().state is stop
        steps = 10
        for _ in range(steps - 1):
            drive.advance(engage / steps, 0.5, 0.0)
            assert not drive.brake_engaged, stop
        drive.advance(engage / steps * 1.001, 0.5, 0.0)
        assert drive.brake_engaged, stop
