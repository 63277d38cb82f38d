"""PID: the report's step tests (no overshoot, settling), the designed poles, anti-windup, saturation.

References: the analytic disturbance response of the designed closed loop (triple pole at -w:
peak deflection 2*d*exp(-2)/(M*w^2)), the physical minimum time of a move, the PID's definition.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from quirobot_control.analysis.step_response import simulate_step
from quirobot_control.axes.limits import JointLimits
from quirobot_control.drives.pid import PID, GainError, PIDGains
from quirobot_control.hardware.control_config import control_configuration
from quirobot_description.parameters import axes_for

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

#: The report's step tests (ch.7): 0.1 m / 0.08 rad and 0.5 m / 1 rad, settling 0.014-0.036 s and
#: 0.022-0.05 s there (a continuous model without current limit).
REPORT_STEPS = [
    ("gantry_x", 0.1),
    ("gantry_y", 0.1),
    ("gantry_z", 0.1),
    ("wrist_yaw", 0.08),
    ("wrist_pitch", 0.08),
    ("gantry_x", 0.5),
    ("gantry_z", 0.5),
    ("wrist_pitch", 1.0),
]


@pytest.fixture(scope="module")
def control(parameters):
    return control_configuration(parameters)


def minimum_time(distance, v, a, j):
    """Time-optimal jerk-limited rest-to-rest duration (closed form; moves that reach a)."""
    if distance >= v * (v / a + a / j):  # cruise at v
        return distance / v + v / a + a / j
    # Peak velocity vp below v: distance = vp * (vp / a + a / j).
    peak = 0.5 * a * (-a / j + math.sqrt((a / j) ** 2 + 4.0 * distance / a))
    assert peak >= a * a / j  # the acceleration limit is reached
    return 2.0 * (peak / a + a / j)


@pytest.mark.parametrize(("joint", "step"), REPORT_STEPS)
def test_report_step_has_no_overshoot_and_settles_with_the_profile(parameters, control, joint, step):
    limits = JointLimits.from_parameters(parameters)
    j = DRILL_AXES.index(joint)
    expected_profile = minimum_time(step, limits.velocity[j], limits.acceleration[j], limits.jerk[j])
    response = simulate_step(parameters, control, joint, step, duration=expected_profile + 0.3)
    assert response.profile_duration == pytest.approx(expected_profile, abs=2e-3)
    # No overshoot: past the target by less than 10 ppm of the step (0.35 um on 0.1 m).
    assert response.overshoot <= 1e-5 * step
    # Settled (2 %) no later than the profile ends: the loop follows the profile, it does not lag it.
    assert response.settling_time <= response.profile_duration + 1e-9
    # ... and far tighter than 2 %: at the profile's end within 10 ppm of the target, the same
    # bound as the overshoot (0.35 um on 0.1 m; a loop without its feed-forward lags by far more).
    end = int(round(response.profile_duration / (response.time[1] - response.time[0])))
    assert abs(response.position[end] - step) <= 1e-5 * step
    # Within the drive's current limit (the report's 0.014-0.05 s settling would need more).
    assert np.max(np.abs(response.current)) <= control.joint(joint).gains.output_limit


@pytest.mark.parametrize("joint", DRILL_AXES)
def test_closed_loop_has_the_designed_poles(parameters, control, joint):
    """A load step d on the loop with poles at -w (x3) deflects by 2*d*exp(-2)/(M*w^2) at most."""
    settings = control.joint(joint)
    # A load well inside the current limit: 20 % of the peak effort.
    load = 0.2 * settings.gains.output_limit * _current_gain(parameters, joint)
    response = simulate_step(
        parameters, control, joint, 0.0, duration=0.15, profile=False, disturbance=load, disturbance_time=0.02
    )
    w = control.bandwidth
    analytic = 2.0 * load * math.exp(-2.0) / (settings.effective_inertia * w * w)
    assert -response.position.min() == pytest.approx(analytic, rel=0.05)
    # ... and the integral action returns it to the target (zero steady-state error).
    assert abs(response.position[-1]) < 0.02 * analytic


def _current_gain(parameters, joint):
    source = parameters.axis(joint)
    return source.motor.torque_constant * source.transmission.ratio * source.transmission.efficiency


def gains(**overrides):
    values = dict(kp=100.0, ki=1000.0, kd=1.0, derivative_filter=0.0005, output_limit=5.0)
    values.update(overrides)
    return PIDGains(**values)


def test_output_saturates_and_anti_windup_holds_the_integrator():
    dt = 1e-3
    pid = PID(gains(kp=2.0, ki=100.0), dt)
    pid.reset(0.0)
    # A blocked joint: a constant error of 1 for 2 s; kp*e = 2 A, the integrator saturates the output.
    outputs = [pid.update(1.0, 0.0) for _ in range(2000)]
    assert max(abs(u) for u in outputs) == 5.0
    assert pid.saturated
    # The integrator stopped once the output saturated: it holds limit - kp*e (3 A, within one
    # step of ki*e*dt), not ki*e*t = 200 A, nor the 5 A clamp.
    assert 3.0 <= pid.integral <= 3.0 + 100.0 * dt + 1e-12
    # Released at the target: out of saturation at once, with the held integral only.
    assert pid.update(0.0, 0.0) == pytest.approx(pid.integral)
    assert not pid.saturated


def test_no_kick_to_the_other_side_when_the_proportional_term_alone_saturates():
    pid = PID(gains(kp=100.0), 1e-3)  # kp*e = 100 A >> 5 A
    pid.reset(0.0)
    for _ in range(500):
        pid.update(1.0, 0.0)
    assert pid.integral >= 0.0
    assert pid.update(0.0, 0.0) >= 0.0


def test_derivative_acts_on_the_measurement_no_kick_on_setpoint_steps():
    dt = 1e-3
    pid = PID(gains(kd=50.0), dt)
    pid.reset(0.0)
    first = pid.update(0.01, 0.0)
    assert first == pytest.approx(100.0 * 0.01, rel=1e-12)  # kp*e (integral still 0), no kd term
    # A measured motion does produce a (filtered) derivative term opposing it.
    pid.reset(0.0)
    u = pid.update(0.0, 1e-4)
    alpha = math.exp(-dt / 0.0005)
    assert u == pytest.approx(-100.0 * 1e-4 - 50.0 * (1 - alpha) * 1e-4 / dt, rel=1e-9)


def test_feedforward_is_added_and_saturated():
    pid = PID(gains(), 1e-3)
    pid.reset(0.0)
    assert pid.update(0.0, 0.0, 0.0, 2.5) == pytest.approx(2.5)
    assert pid.update(0.0, 0.0, 0.0, 50.0) == 5.0
    assert pid.update(0.0, 0.0, 0.0, -50.0) == -5.0


@pytest.mark.parametrize(
    ("field", "value"),
    [("kp", -1.0), ("ki", math.nan), ("kd", math.inf), ("output_limit", 0.0), ("derivative_filter", -1e-3)],
)
def test_invalid_gains_are_refused_by_name(field, value):
    with pytest.raises(GainError, match=field):
        gains(**{field: value})
