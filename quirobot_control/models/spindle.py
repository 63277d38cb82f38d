"""The drill spindle: on/off, speed, the cutting torque of the bone, stall detection.

The spindle's drive closes a speed loop (time constant tau) within its torque limit T_max; the
load is the cutting torque, proportional to the bone's thrust (T_cut = k * F, the torque and the
thrust of a drill both follow the chip load: Wiggins & Malkin 1976; k from the parameter file)
plus any external torque (a jammed bit in a test):

    J dw/dt = T_m - T_load,   T_m = clip(J (w_c - w) / tau + T_load, -T_max, T_max)

so the speed holds while T_load < T_max and falls at (T_max - T_load) / J beyond it. The load
never drives the spindle backwards (a cutting torque only brakes). Off: the drive brakes the
spindle to rest at its torque limit.

At speed: switched on, not stalled and w >= at_speed_fraction * w_c. Stalled (latched, the drive
switched off): after reaching speed, w below stall_fraction * w_c for stall_time s. Only
`reset()` (switched off) clears a stall. The feed is interlocked with both (safety.drilling_monitor).
"""

from __future__ import annotations

import math

from quirobot_description.drilling_parameters import SpindleParameters


class SpindleError(RuntimeError):
    """A spindle request refused (switching on a stalled spindle)."""


class Spindle:
    """Stateful spindle model; call `update(dt, thrust)` once per control period."""

    def __init__(self, parameters: SpindleParameters) -> None:
        self.parameters = parameters
        self.speed = 0.0  # rad/s
        self.command = 0.0  # rad/s, 0 when off
        self.load_torque = 0.0  # N*m, the last cutting + external load
        self.motor_torque = 0.0  # N*m, the last drive torque
        self.external_torque = 0.0  # N*m, an extra load (e.g. a jammed bit in a test)
        self.stalled = False
        self.stall_reason: str | None = None
        self._reached_speed = False
        self._slow_time = 0.0  # s below the stall fraction since reaching speed

    @property
    def running(self) -> bool:
        return self.command > 0.0 and not self.stalled

    @property
    def at_speed(self) -> bool:
        """Switched on, not stalled and within at_speed_fraction of the commanded speed."""
        return self.running and self.speed >= self.parameters.at_speed_fraction * self.command

    def switch_on(self, speed: float | None = None) -> None:
        """Run at `speed` rad/s (default: the parameter file's). Refused while stalled."""
        if self.stalled:
            raise SpindleError(f"spindle stalled ({self.stall_reason}): switch off and reset() first")
        value = self.parameters.speed if speed is None else float(speed)
        if not math.isfinite(value) or value <= 0.0:
            raise SpindleError(f"spindle speed must be a finite number > 0 rad/s, got {speed!r}")
        if self.command == 0.0:
            self._reached_speed = False
            self._slow_time = 0.0
        self.command = value

    def switch_off(self) -> None:
        self.command = 0.0

    def reset(self) -> None:
        """Clear a latched stall (the spindle must be off)."""
        if self.command > 0.0:
            raise SpindleError("reset() needs the spindle switched off")
        self.stalled = False
        self.stall_reason = None

    def update(self, dt: float, thrust: float) -> float:
        """Advance dt s with the bone's thrust `thrust` N on the bit; return the speed, rad/s."""
        if not (math.isfinite(dt) and dt > 0.0 and math.isfinite(thrust)):
            raise ValueError(f"spindle update needs dt > 0 and a finite thrust, got {dt!r}, {thrust!r}")
        p = self.parameters
        steps = max(1, math.ceil(dt / (0.1 * p.speed_time_constant)))
        h = dt / steps
        load = p.torque_per_thrust * max(thrust, 0.0) + max(self.external_torque, 0.0)
        self.load_torque = load
        target = self.command if self.running else 0.0
        for _ in range(steps):
            motor = p.inertia * (target - self.speed) / p.speed_time_constant
            motor += load if self.speed > 0.0 else 0.0
            motor = min(max(motor, -p.max_torque), p.max_torque)
            # The load brakes a turning spindle; at rest it only holds (never turns it backwards).
            net = motor - load if self.speed > 0.0 else max(motor - load, 0.0)
            speed = self.speed + h * net / p.inertia
            self.speed = 0.0 if self.speed > 0.0 and speed < 0.0 else max(speed, 0.0)
            self.motor_torque = motor
        self._watch_stall(dt)
        return self.speed

    def _watch_stall(self, dt: float) -> None:
        p = self.parameters
        if not self.running:
            return
        if self.speed >= p.at_speed_fraction * self.command:
            self._reached_speed = True
        if not self._reached_speed:
            return
        if self.speed < p.stall_fraction * self.command:
            self._slow_time += dt
            if self._slow_time >= p.stall_time - 1e-12:
                self.stalled = True
                self.stall_reason = (
                    f"{self.speed:.1f} rad/s of {self.command:.1f} rad/s for "
                    f"{self._slow_time * 1e3:.0f} ms under {self.load_torque:.3f} N*m "
                    f"(limit {p.max_torque:.3f} N*m)"
                )
        else:
            self._slow_time = 0.0
