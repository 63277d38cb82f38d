"""Dual-loop position feedback: the load-side encoder for accuracy, the motor encoder for stability.

A joint with a compliant transmission (gearbox stiffness and backlash) read by a load-side
encoder cannot close a stiff position loop on that encoder alone: the gearbox's resonance and its
dead zone sit inside the loop. Servo drives with two encoder inputs blend them instead: the
position the loop sees is the motor encoder's (in joint units) plus the low-passed difference
load - motor, so above the crossover the loop sees the motor (stable, as designed for a rigid
joint) and below it the load (the windup under a steady torque and the backlash's offset are
corrected):

    y[k] = m[k] + d[k],  d[k] = d[k-1] + a * ((l[k] - m[k]) - d[k-1]),  a = 1 - exp(-w_c * dt)
"""

from __future__ import annotations

import math


class DualLoopFeedback:
    """First-order crossover from the motor to the load encoder at `crossover` rad/s, sampled every dt s."""

    def __init__(self, crossover: float, dt: float) -> None:
        if not math.isfinite(crossover) or crossover <= 0.0:
            raise ValueError(f"dual-loop crossover must be a finite number > 0 rad/s, got {crossover!r}")
        if not math.isfinite(dt) or dt <= 0.0:
            raise ValueError(f"dual-loop sample period must be a finite number > 0 s, got {dt!r}")
        self.gain = 1.0 - math.exp(-crossover * dt)
        self.difference: float | None = None  # low-passed load - motor, m or rad

    def update(self, motor: float, load: float) -> float:
        """The blended position (m or rad) from this sample's motor and load readings."""
        if self.difference is None:
            self.difference = load - motor
        else:
            self.difference += self.gain * ((load - motor) - self.difference)
        return motor + self.difference
