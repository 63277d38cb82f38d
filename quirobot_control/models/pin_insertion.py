"""Insertion torque of a threaded (Schanz) pin driven into layered bone.

The torque a self-tapping pin needs grows with the length of thread engaged in each layer of
bone it has entered (cortex engaged dominates: the maximum insertion torque of tibial half-pins
correlates linearly with the thickness of cortex engaged, Kim et al. 2015, Yonsei Med J 56:154):

    T(d) = sum over layers i of  tau_i * overlap([0, d], layer i)      (N*m)

d: the tip's depth below the bone surface (m), tau_i: torque per metre of thread engaged in layer
i (N*m/m, the task file gives each with its source). The pin advances by its thread pitch per
revolution (feed = pitch x revolutions), so the depth follows the spindle's angle.
Rejected: a torque model in the feed rate (as the drilling thrust): a pin's feed is not free, it is
the pitch times the spindle speed, and the published figures are torque against depth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PinLayer", "insertion_torque"]


@dataclass(frozen=True)
class PinLayer:
    """One bone layer along the pin's axis: its name, thickness (m), torque per engaged length (N*m/m)."""

    name: str
    thickness: float
    torque_per_length: float


def insertion_torque(
    depth: float | np.ndarray, layers: tuple[PinLayer, ...], factor: float = 1.0
) -> np.ndarray:
    """T(d) (module docstring), N*m, for tip depth(s) `depth` (m); `factor` scales the bone (a
    harder bone than planned: > 1)."""
    d = np.asarray(depth, dtype=float)
    torque = np.zeros_like(d)
    top = 0.0
    for layer in layers:
        engaged = np.clip(d - top, 0.0, layer.thickness)
        torque = torque + layer.torque_per_length * engaged
        top += layer.thickness
    return factor * torque
