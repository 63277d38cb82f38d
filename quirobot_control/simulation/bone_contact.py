"""The bone's drilling thrust at the plant's drill tip, as a `MujocoPlant.step_period` tip-force
callback (simulation only): the bone lies at `Drilling.entry` along `Drilling.direction`.

Used by the simulated drive backend (drive_node's simulated plant, drive_node's `simulated_bone`
parameter names the task whose bone it is); the same thrust as the closed-loop simulation's.
"""

from __future__ import annotations

import numpy as np

from quirobot_control.models.bone import BoneThrust
from quirobot_control.simulation.closed_loop import Drilling
from quirobot_control.simulation.plant import MujocoPlant


class BoneContact:
    """tip_force(h) -> the world force (3,) N the bone exerts on the tip (None outside the bone)."""

    def __init__(self, plant: MujocoPlant, drilling: Drilling) -> None:
        self.plant = plant
        self.drilling = drilling
        self.thrust = BoneThrust(drilling.bone)
        self._depth: float | None = None

    @property
    def force(self) -> float:
        """The current thrust, N (>= 0)."""
        return self.thrust.force

    def __call__(self, h: float) -> np.ndarray | None:
        """Advance the thrust lag by the physics step h (s) at the tip's current depth and rate."""
        drilling = self.drilling
        depth = float(np.dot(self.plant.tip - drilling.entry, drilling.direction))
        rate = 0.0 if self._depth is None else (depth - self._depth) / h
        self._depth = depth
        thrust = self.thrust.update(h, depth, rate)
        return -thrust * drilling.direction if thrust > 0.0 else None
