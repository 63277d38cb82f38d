"""Brushless DC servo motor (equivalent DC / q-axis model) and its current loop.

Electrical model (report ch.6 motor table; symbols as there), SI units:

    v = R*i + L*di/dt + K_V*omega        tau = K_T*i

with v the q-axis voltage (V), i the q-axis current (A), omega the shaft speed (rad/s) and tau the
electromagnetic torque (N*m). Over an interval h in which v and omega are held constant (the
inverter's zero-order hold), the first-order ODE has the closed-form solution

    i(t + h) = i_inf + (i(t) - i_inf) * exp(-h*R/L),   i_inf = (v - K_V*omega) / R,

which `electrical_step` applies: the discretization is exact, whatever h is relative to the
electrical time constant L/R (1.7 ms and 0.19 ms here).

`CurrentLoop` is the drive's sampled PI current controller with a stated closed-loop bandwidth
w_c (rad/s). It cancels the electrical pole with the PI zero, so the closed loop is first order.
The continuous-time design is K_p = L*w_c, K_i = R*w_c; this module uses its exact sampled
equivalent for the loop period h (ZOH plant pole a = exp(-h*R/L)):

    K_p = R*(1 - exp(-w_c*h)) / (1 - a),    K_i = R*(1 - exp(-w_c*h)) / h

which tends to L*w_c and R*w_c as h -> 0 and makes the sampled current step response exactly
i_k = i_ref*(1 - exp(-w_c*k*h)) while the voltage is not limited. The loop adds the back-EMF
K_V*omega as feed-forward (as servo drives do), limits the voltage to +-V_max (bus voltage times
the PWM headroom) and stops integrating while the voltage is limited (anti-windup by conditional
integration).

Friction is not modelled here: the report's joint viscous friction (params.joints[i].damping) and
the Coulomb term (.friction) lump the motor, bearing and transmission friction at the joint, and
the transmission efficiency (quirobot_control.models.transmission) covers the load-dependent losses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from quirobot_description.parameters import MotorParameters


class MotorModelError(ValueError):
    """A motor or current-loop input is not a finite number, or a setting is out of range."""


def _finite(name: str, value: float) -> float:
    value = float(value)
    if not math.isfinite(value):
        raise MotorModelError(f"{name} must be a finite number, got {value!r}")
    return value


def _positive(name: str, value: float) -> float:
    value = _finite(name, value)
    if value <= 0.0:
        raise MotorModelError(f"{name} must be > 0, got {value!r}")
    return value


def electrical_step(motor: MotorParameters, current: float, voltage: float, speed: float, dt: float) -> float:
    """Exact q-axis current (A) after `dt` s with `voltage` (V) and motor `speed` (rad/s) held.

    Closed-form solution of L di/dt = v - R*i - K_V*omega from `current` (A). dt >= 0.
    """
    if dt < 0.0:
        raise MotorModelError(f"time step must be >= 0 s, got {dt!r}")
    i_inf = (voltage - motor.back_emf_constant * speed) / motor.resistance
    return i_inf + (current - i_inf) * math.exp(-dt * motor.resistance / motor.inductance)


def torque(motor: MotorParameters, current: float) -> float:
    """Electromagnetic torque K_T*i in N*m for a q-axis current in A."""
    return motor.torque_constant * current


def max_speed_at_torque(motor: MotorParameters, motor_torque: float, voltage_limit: float) -> float:
    """Highest steady motor speed (rad/s) at which `motor_torque` (N*m) is still available.

    From the steady-state voltage equation at the limit: omega_max = (V_max - R*tau/K_T) / K_V,
    with V_max the usable bus voltage (V). Negative if even standstill needs more than V_max.
    """
    return (
        voltage_limit - motor.resistance * abs(motor_torque) / motor.torque_constant
    ) / motor.back_emf_constant


@dataclass(frozen=True)
class CurrentLoopGains:
    """Sampled PI gains: proportional K_p in V/A, integral K_i in V/(A*s)."""

    kp: float
    ki: float


def current_loop_gains(motor: MotorParameters, bandwidth: float, period: float) -> CurrentLoopGains:
    """Exact sampled pole-zero-cancelling PI gains for closed-loop bandwidth `bandwidth` (rad/s).

    `period` is the loop period in s. See the module docstring; tends to (L*w_c, R*w_c) as period -> 0.
    """
    bandwidth = _positive("current-loop bandwidth", bandwidth)
    period = _positive("current-loop period", period)
    plant_pole = math.exp(-period * motor.resistance / motor.inductance)
    closed_loop_step = 1.0 - math.exp(-bandwidth * period)
    kp = motor.resistance * closed_loop_step / (1.0 - plant_pole)
    return CurrentLoopGains(kp=kp, ki=motor.resistance * closed_loop_step / period)


def continuous_current_loop_gains(motor: MotorParameters, bandwidth: float) -> CurrentLoopGains:
    """Continuous-time design K_p = L*w_c, K_i = R*w_c (the limit of `current_loop_gains`)."""
    bandwidth = _positive("current-loop bandwidth", bandwidth)
    return CurrentLoopGains(kp=motor.inductance * bandwidth, ki=motor.resistance * bandwidth)


class CurrentLoop:
    """Sampled PI current controller with back-EMF feed-forward, voltage limit and anti-windup.

    Call `update` once per loop period with the measured current and speed; it returns the
    voltage the inverter holds until the next update.
    """

    # Slots: the simulated drives' compiled step (drive_simulators.drive_array) reads and writes
    # the integrator's state where it is.
    __slots__ = (  # noqa: SIM905 - names a few to a line
        "motor bandwidth period voltage_limit gains integral saturated _resistance _back_emf _kp "
        "_ki_period __dict__"
    ).split()  # __dict__: other attributes as before (a test replacing one method of one object)

    def __init__(self, motor: MotorParameters, bandwidth: float, rate: float, voltage_limit: float) -> None:
        """`bandwidth` rad/s, `rate` loop updates per second (Hz), `voltage_limit` V (> 0)."""
        self.motor = motor
        self.bandwidth = _positive("current-loop bandwidth", bandwidth)
        self.period = 1.0 / _positive("current-loop rate", rate)
        self.voltage_limit = _positive("voltage limit", voltage_limit)
        self.gains = current_loop_gains(motor, self.bandwidth, self.period)
        self.integral = 0.0  # V
        self.saturated = False
        # update() runs at the current-loop rate (20 kHz of simulated time): its constants once.
        self._resistance, self._back_emf = motor.resistance, motor.back_emf_constant
        self._kp, self._ki_period = self.gains.kp, self.gains.ki * self.period

    def reset(self) -> None:
        """Clear the integrator (drive disabled or re-enabled)."""
        self.integral = 0.0
        self.saturated = False

    def update(self, reference: float, current: float, speed: float) -> float:
        """One PI sample: voltage (V) for current `reference` (A), measured `current` (A), `speed` rad/s."""
        if self.saturated:
            # Anti-windup by tracking: the pole-zero-cancelling design responds first-order only
            # while integral == R * current (sampled design included). After a voltage-limited
            # sample, re-align the integrator to the measured current so the loop leaves the
            # limit with no slow tail (a frozen integrator keeps the old R * i for milliseconds).
            self.integral = self._resistance * current
        error = reference - current
        feed_forward = self._back_emf * speed
        unlimited = self._kp * error + self.integral + feed_forward
        limit = self.voltage_limit
        voltage = limit if unlimited > limit else -limit if unlimited < -limit else unlimited
        self.saturated = voltage != unlimited
        if not self.saturated:
            self.integral += self._ki_period * error
        return voltage
