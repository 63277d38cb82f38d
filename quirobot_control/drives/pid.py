"""One joint's position controller: PID producing a motor current command (A).

    u = kp*e + ki*integral(e) + kd*(v_ref - v_hat) + u_ff,   e = x_ref - x

- Derivative on the measurement: v_hat is the measured position differentiated and low-pass
  filtered (first order, time constant `derivative_filter`), so a setpoint step gives no kick;
  the velocity reference v_ref (velocity feed-forward) enters the same term, through the same
  half-period delay and filter as v_hat.
- Feed-forward u_ff (A): the model-based current (gravity and inverse dynamics) given by the caller.
- Output saturation at +-output_limit (the drive's current limit).
- Anti-windup by clamping (conditional integration): while the output is saturated, the
  integrator does not integrate an error that pushes further into the saturation; it is also
  clamped to +-output_limit. (Back-calculation was rejected: with a proportional term alone
  above the limit, it drives the integrator to the opposite sign, kicking the joint the other way
  when the error vanishes.)
Discrete at the control period dt (s); positions in m or rad, currents in A.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


class GainError(ValueError):
    """Invalid PID gains (named in the message)."""


@dataclass(frozen=True)
class PIDGains:
    """Gains of one joint. Units: kp A/m (A/rad), ki A/(m*s), kd A*s/m, times s, limit A."""

    kp: float
    ki: float
    kd: float
    derivative_filter: float  # s, time constant of the derivative's low-pass filter
    output_limit: float  # A

    def __post_init__(self) -> None:
        for name in ("kp", "ki", "kd"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0.0:
                raise GainError(f"PID gain {name} must be a finite number >= 0, got {value}")
        for name in ("derivative_filter", "output_limit"):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0.0:
                raise GainError(f"PID {name} must be a finite number > 0, got {value}")


class PID:
    """Discrete PID of one joint (see the module docstring). Call `reset` before the first update."""

    # Slots: the simulated drives' compiled step (drive_simulators.drive_array) runs a CSP drive's
    # position-loop sample, this update, on the state where it is.
    __slots__ = (  # noqa: SIM905 - names a few to a line
        "gains dt _alpha integral velocity reference_velocity _last_position _last_setpoint_velocity "
        "output saturated __dict__"
    ).split()  # __dict__: other attributes as before (a test replacing one method of one object)

    def __init__(self, gains: PIDGains, dt: float) -> None:
        if not math.isfinite(dt) or dt <= 0.0:
            raise GainError(f"control period must be > 0 s, got {dt}")
        self.gains = gains
        self.dt = dt
        # Exact discretization of the first-order derivative filter.
        self._alpha = math.exp(-dt / gains.derivative_filter)
        self.integral = 0.0  # A, the integrator's contribution
        self.velocity = 0.0  # filtered measured velocity, m/s or rad/s
        self.reference_velocity = 0.0  # setpoint velocity through the same filter, m/s or rad/s
        self._last_position: float | None = None
        self._last_setpoint_velocity = 0.0
        self.output = 0.0  # last saturated output, A
        self.saturated = False

    def reset(self, position: float, integral: float = 0.0) -> None:
        """Start from rest at `position` with the integrator at `integral` (A, e.g. the hold current)."""
        self._last_position = float(position)
        self.velocity = 0.0
        self.reference_velocity = 0.0
        self._last_setpoint_velocity = 0.0
        limit = self.gains.output_limit
        self.integral = min(max(float(integral), -limit), limit)
        self.output = 0.0
        self.saturated = False

    def update(
        self,
        setpoint: float,
        measurement: float,
        setpoint_velocity: float = 0.0,
        feedforward: float = 0.0,
    ) -> float:
        """One control period: the saturated current command (A)."""
        g = self.gains
        if self._last_position is None:
            self.reset(measurement)
        raw_velocity = (measurement - self._last_position) / self.dt
        self._last_position = measurement
        self.velocity = self._alpha * self.velocity + (1.0 - self._alpha) * raw_velocity
        # The backward difference of the measurement is the mean velocity over the last period:
        # give the reference velocity the same half-period delay and filter, so that exact
        # tracking gives a zero derivative term (no lag-induced braking during accelerations).
        mean_reference = 0.5 * (setpoint_velocity + self._last_setpoint_velocity)
        self._last_setpoint_velocity = setpoint_velocity
        self.reference_velocity = self._alpha * self.reference_velocity + (1.0 - self._alpha) * mean_reference
        error = setpoint - measurement
        unsaturated = (
            g.kp * error + self.integral + g.kd * (self.reference_velocity - self.velocity) + feedforward
        )
        output = min(max(unsaturated, -g.output_limit), g.output_limit)
        self.saturated = output != unsaturated
        if not (self.saturated and (error > 0.0) == (unsaturated > output)):
            self.integral += self.dt * g.ki * error
            self.integral = min(max(self.integral, -g.output_limit), g.output_limit)
        self.output = output
        return output
