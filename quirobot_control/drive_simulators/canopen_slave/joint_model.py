"""The joint a simulated CANopen drive moves: a rigid inertia with viscous damping."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class JointModel:
    """One joint as a rigid inertia with viscous damping: inertia * a = effort - damping * v.

    `inertia` kg (prismatic) or kg*m^2 (revolute), including the reflected rotor inertia;
    `damping` N*s/m or N*m*s/rad; `position` m or rad; `velocity` m/s or rad/s.
    """

    inertia: float
    damping: float
    position: float = 0.0
    velocity: float = 0.0

    def __post_init__(self) -> None:
        for label, value in (("inertia", self.inertia), ("damping", self.damping)):
            if not math.isfinite(value):
                raise ValueError(f"joint {label} must be a finite number, got {value!r}")
        if self.inertia <= 0.0 or self.damping < 0.0:
            raise ValueError(
                f"joint inertia must be > 0 and damping >= 0, got {self.inertia}, {self.damping}"
            )

    def step(self, effort: float, dt: float) -> None:
        """Advance by `dt` s with `effort` (N or N*m) held: the exact solution of the linear ODE."""
        a = self.damping / self.inertia  # 1/s
        x = a * dt
        if x < 1e-4:  # series, free of cancellation: g = (1 - e^-x)/a, h = (dt - g)/a
            g = dt * (1.0 - x / 2.0 + x * x / 6.0)
            h = dt * dt * (0.5 - x / 6.0 + x * x / 24.0)
        else:
            g = -math.expm1(-x) / a
            h = (dt - g) / a
        acceleration = effort / self.inertia
        self.position += self.velocity * g + acceleration * h
        self.velocity += (acceleration - a * self.velocity) * g
