"""Brushless motor model and current loop against analytical solutions and an ODE solver."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from quirobot_control.models.motor import (
    CurrentLoop,
    MotorModelError,
    continuous_current_loop_gains,
    current_loop_gains,
    electrical_step,
    max_speed_at_torque,
)
from quirobot_description.parameters import load_parameters


@pytest.fixture(scope="module")
def params():
    return load_parameters()


MOTOR_NAMES = ("gantry_motor", "wrist_motor")


@pytest.mark.parametrize("motor_name", MOTOR_NAMES)
def test_locked_rotor_voltage_step_matches_first_order_solution(params, motor_name):
    motor = params.motors[motor_name]
    V = 12.0
    tau = motor.inductance / motor.resistance
    # Uneven steps, some much longer than L/R: an exact discretization does not care.
    steps = np.concatenate([np.full(37, tau / 50.0), np.full(5, 0.7 * tau), [3.0 * tau]])
    t, i = 0.0, 0.0
    for h in steps:
        i = electrical_step(motor, i, V, 0.0, h)
        t += h
        analytic = V / motor.resistance * (1.0 - math.exp(-t * motor.resistance / motor.inductance))
        assert i == pytest.approx(analytic, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("motor_name", MOTOR_NAMES)
def test_moving_rotor_matches_ode_solver(params, motor_name):
    """Voltage and speed varying piecewise (held per step) against scipy's RK45 on the ODE."""
    motor = params.motors[motor_name]
    rng = np.random.default_rng(3)
    h = 2e-4
    voltages = rng.uniform(-40.0, 40.0, 30)
    speeds = rng.uniform(-200.0, 200.0, 30)
    i_model = 1.5
    i_ode = 1.5
    for v, w in zip(voltages, speeds, strict=True):
        i_model = electrical_step(motor, i_model, v, w, h)
        sol = solve_ivp(
            lambda _t, y, v=v, w=w: [
                (v - motor.resistance * y[0] - motor.back_emf_constant * w) / motor.inductance
            ],
            (0.0, h),
            [i_ode],
            rtol=1e-11,
            atol=1e-12,
        )
        i_ode = sol.y[0, -1]
        assert i_model == pytest.approx(i_ode, rel=1e-7, abs=1e-8)


def test_sampled_gains_tend_to_continuous_design(params):
    motor = params.motors["gantry_motor"]
    w_c = params.drive.current_loop_bandwidth
    continuous = continuous_current_loop_gains(motor, w_c)
    assert continuous.kp == pytest.approx(motor.inductance * w_c)
    assert continuous.ki == pytest.approx(motor.resistance * w_c)
    fast = current_loop_gains(motor, w_c, 1e-9)
    assert fast.kp == pytest.approx(continuous.kp, rel=1e-4)
    assert fast.ki == pytest.approx(continuous.ki, rel=1e-4)


def simulate_loop(motor, loop: CurrentLoop, references, speed=0.0):
    """Run the sampled loop with the exact plant: current at each sample (before its update)."""
    i = 0.0
    samples = []
    voltages = []
    for r in references:
        samples.append(i)
        v = loop.update(r, i, speed)
        voltages.append(v)
        i = electrical_step(motor, i, v, speed, loop.period)
    return np.array(samples), np.array(voltages)


@pytest.mark.parametrize("motor_name", MOTOR_NAMES)
@pytest.mark.parametrize("speed", [0.0, 150.0])
def test_closed_loop_step_is_first_order_with_time_constant_one_over_bandwidth(params, motor_name, speed):
    motor = params.motors[motor_name]
    drive = params.drive
    w_c = drive.current_loop_bandwidth
    loop = CurrentLoop(motor, w_c, drive.current_loop_rate, drive.bus_voltage * drive.voltage_headroom)
    reference = 0.1 * motor.max_current  # small enough that the voltage never limits
    n = 80
    samples, voltages = simulate_loop(motor, loop, np.full(n, reference), speed)
    assert np.all(np.abs(voltages) < loop.voltage_limit)
    t = np.arange(n) * loop.period
    np.testing.assert_allclose(samples, reference * (1.0 - np.exp(-w_c * t)), rtol=0, atol=1e-9 * reference)
    # 63 % of the step is reached after one time constant 1/w_c (within one sample).
    k63 = int(np.argmax(samples >= (1.0 - math.exp(-1.0)) * reference))
    assert abs(k63 * loop.period - 1.0 / w_c) <= loop.period


@pytest.mark.parametrize("motor_name", MOTOR_NAMES)
def test_closed_loop_gain_is_minus_3_db_at_the_bandwidth(params, motor_name):
    motor = params.motors[motor_name]
    drive = params.drive
    w_c = drive.current_loop_bandwidth
    loop = CurrentLoop(motor, w_c, drive.current_loop_rate, drive.bus_voltage * drive.voltage_headroom)
    amplitude = 0.05 * motor.max_current

    def gain(omega):
        n = int(round(12 * 2 * math.pi / omega / loop.period))
        t = np.arange(n) * loop.period
        samples, _ = simulate_loop(motor, loop, amplitude * np.sin(omega * t))
        tail = samples[n // 2 :]
        return (tail.max() - tail.min()) / (2 * amplitude)

    loop.reset()
    assert gain(w_c) == pytest.approx(1.0 / math.sqrt(2.0), rel=0.02)
    loop.reset()
    assert gain(w_c / 10.0) == pytest.approx(1.0, abs=0.01)


def test_voltage_limited_step_rises_like_the_open_circuit_and_does_not_wind_up(params):
    motor = params.motors["gantry_motor"]
    drive = params.drive
    v_max = drive.bus_voltage * drive.voltage_headroom
    loop = CurrentLoop(motor, drive.current_loop_bandwidth, drive.current_loop_rate, v_max)
    reference = motor.max_current
    n = 400
    samples, voltages = simulate_loop(motor, loop, np.full(n, reference))
    assert np.all(np.abs(voltages) <= v_max + 1e-12)
    saturated = voltages >= v_max
    assert saturated[0] and saturated.sum() > 3
    # While saturated the current is the locked-rotor response to V_max.
    k = int(np.argmin(saturated))  # first unsaturated sample
    t = np.arange(k + 1) * loop.period
    np.testing.assert_allclose(
        samples[: k + 1],
        v_max / motor.resistance * (1.0 - np.exp(-t * motor.resistance / motor.inductance)),
        rtol=1e-12,
    )
    # Anti-windup: no overshoot beyond 1 %, settles on the reference.
    assert samples.max() <= 1.01 * reference
    assert samples[-1] == pytest.approx(reference, rel=1e-4)


def test_back_emf_limits_the_current_at_speed(params):
    """Near the voltage limit the loop saturates; the current settles at (V_max - K_V*omega)/R."""
    motor = params.motors["gantry_motor"]
    drive = params.drive
    v_max = drive.bus_voltage * drive.voltage_headroom
    loop = CurrentLoop(motor, drive.current_loop_bandwidth, drive.current_loop_rate, v_max)
    speed = 0.9 * v_max / motor.back_emf_constant
    samples, voltages = simulate_loop(motor, loop, np.full(2000, motor.max_current), speed)
    available = (v_max - motor.back_emf_constant * speed) / motor.resistance
    assert available < motor.max_current
    assert samples[-1] == pytest.approx(available, rel=1e-6)
    assert max_speed_at_torque(motor, motor.torque_constant * available, v_max) == pytest.approx(speed)


def test_bad_inputs_are_refused(params):
    motor = params.motors["gantry_motor"]
    with pytest.raises(MotorModelError, match="time step"):
        electrical_step(motor, 0.0, 1.0, 0.0, -1e-3)
    with pytest.raises(MotorModelError, match="bandwidth"):
        CurrentLoop(motor, float("nan"), 20000.0, 45.0)
    with pytest.raises(MotorModelError, match="voltage limit"):
        CurrentLoop(motor, 1000.0, 20000.0, -1.0)
