"""The bone's drilling thrust at the plant's drill tip, as a `MujocoPlant.step_period` tip-force
callback (simulation only): the bone lies at `Drilling.entry` along `Drilling.direction`.

Used by the closed-loop simulation and by the simulated drive backend (drive_node's simulated
plant, drive_node's `simulated_bone` parameter names the task whose bone it is).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from quirobot_control.models.bone import BoneParameters, BoneThrust
from quirobot_control.simulation.plant import MujocoPlant


@dataclass(frozen=True)
class Drilling:
    """Where the bone is: entry point (3,) m on its surface, unit drilling direction (3,)."""

    entry: np.ndarray
    direction: np.ndarray
    bone: BoneParameters


class BoneContact:
    """tip_force(h) -> the world force (3,) N the bone exerts on the tip (None outside the bone)."""

    #: The plants' compiled periods (physics_kernel.c: contact_force) run this class's __call__
    #: themselves, on its attributes (plant.kernel_contact); a subclass gets its own called.
    KERNEL_CONTACT = True

    def __init__(self, plant: MujocoPlant, drilling: Drilling) -> None:
        self.plant = plant
        self.drilling = drilling
        self.thrust = BoneThrust(drilling.bone)
        self._depth: float | None = None
        # m: the bone reaches this far from the drilling axis, a shaft as wide as its layers are
        # thick along the axis (design assumption: the tibial shaft's 25 mm, the task's layers).
        # Without it the layers were slabs of infinite width and a tip moving away beside the
        # hole (the return to park) was pushed as if it cut bone.
        self.radius = 0.5 * sum(layer.thickness for layer in drilling.bone.layers)
        self._entry = np.asarray(drilling.entry, dtype=float).tolist()
        self._direction = np.asarray(drilling.direction, dtype=float).tolist()

    @property
    def force(self) -> float:
        """The current thrust, N (>= 0)."""
        return self.thrust.force

    def __call__(self, h: float) -> np.ndarray | None:
        """Advance the thrust lag by the physics step h (s) at the tip's current depth and rate."""
        # Plain floats: this runs at every physics step, where numpy's per-call cost on (3,)
        # vectors was most of its time; the same operations in the same order as the vector form
        # (offset = tip - entry, depth = offset . direction, distance = |offset - depth direction|).
        tx, ty, tz = self.plant.tip.tolist()
        (ex, ey, ez), (dx, dy, dz) = self._entry, self._direction
        ox, oy, oz = tx - ex, ty - ey, tz - ez
        depth = ox * dx + oy * dy + oz * dz
        rx, ry, rz = ox - depth * dx, oy - depth * dy, oz - depth * dz
        if math.sqrt(rx * rx + ry * ry + rz * rz) > self.radius:
            self._depth = None  # beside the bone: nothing to cut, the thrust fades
            thrust = self.thrust.update(h, depth, 0.0)
        else:
            rate = 0.0 if self._depth is None else (depth - self._depth) / h
            self._depth = depth
            thrust = self.thrust.update(h, depth, rate)
        return np.array([-thrust * dx, -thrust * dy, -thrust * dz]) if thrust > 0.0 else None
