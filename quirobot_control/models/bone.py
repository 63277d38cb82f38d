"""Bone-drilling thrust: the axial force the bone exerts on the drill bit, opposing the feed.

The bone is a stack of layers along the drilling direction, from the entry point on its surface
(e.g. near cortex, medullary canal, far cortex), each with a thrust factor relative to cortical
bone. The thrust of a layer follows a power law of the feed rate (Wiggins & Malkin 1976: thrust
and feed rate are related by a power function; magnitudes of 10-60 N at 0.5-2.5 mm/s in cortical
bone, e.g. the review of Pandey & Panda 2013), scaled by how much of the drill's conical point
is engaged in that layer, so the force rises and falls over the point length as the tip enters
and leaves a layer (the breakthrough of the far cortex included):

    F_target = F_ref * g(v / v_ref) * sum_layers factor_l * overlap(layer_l, [d - L_p, d]) / L_p

with d the tip depth below the entry point along the drilling direction (m), L_p the axial
length of the point (m), v the tip's feed velocity into the bone (m/s) and g(r) = r^n (linear
below r_min so that g is Lipschitz at rest). The force lags F_target with the chip-formation
time constant tau (first order), and is zero when the bit does not move into the bone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: A layer with at least this fraction of cortical bone's thrust is a cortex (breaks through with a
#: sharp drop of thrust); design assumption: the canal's cancellous bone and marrow cut with well
#: under half of it (the shipped task: 0.15).
CORTICAL_FACTOR = 0.5


class BoneModelError(ValueError):
    """Invalid bone parameters (named in the message)."""


@dataclass(frozen=True)
class BoneLayer:
    name: str
    thickness: float  # m along the drilling direction
    thrust_factor: float  # relative to cortical bone (1.0)


@dataclass(frozen=True)
class BoneParameters:
    layers: tuple[BoneLayer, ...]
    reference_thrust: float  # N, cortical bone at the reference feed rate, full engagement
    reference_feed_rate: float  # m/s
    feed_rate_exponent: float  # n of the power law
    point_length: float  # m, axial length of the drill's conical point
    time_constant: float  # s

    def __post_init__(self) -> None:
        for name in ("reference_thrust", "reference_feed_rate", "point_length", "time_constant"):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0.0:
                raise BoneModelError(f"bone {name} must be a finite number > 0, got {value}")
        if not math.isfinite(self.feed_rate_exponent) or not 0.0 < self.feed_rate_exponent <= 2.0:
            raise BoneModelError(f"bone feed_rate_exponent must be in (0, 2], got {self.feed_rate_exponent}")
        if not self.layers:
            raise BoneModelError("the bone needs at least one layer")
        for layer in self.layers:
            if not math.isfinite(layer.thickness) or layer.thickness <= 0.0:
                raise BoneModelError(
                    f"bone layer {layer.name}: thickness must be > 0 m, got {layer.thickness}"
                )
            if not math.isfinite(layer.thrust_factor) or layer.thrust_factor < 0.0:
                raise BoneModelError(
                    f"bone layer {layer.name}: thrust_factor must be >= 0, got {layer.thrust_factor}"
                )

    @property
    def thickness(self) -> float:
        """Total thickness of the bone along the drilling direction, m."""
        return sum(layer.thickness for layer in self.layers)

    @property
    def far_cortex(self) -> tuple[float, float] | None:
        """(start, exit) depths (m) of the last layer if it is cortical (thrust factor at least
        CORTICAL_FACTOR): where the drill breaks through; None if the bone ends in soft bone."""
        last = self.layers[-1]
        if last.thrust_factor < CORTICAL_FACTOR:
            return None
        return self.thickness - last.thickness, self.thickness


#: Below this fraction of the reference feed rate the power law is replaced by a line through 0.
LINEAR_BELOW = 0.05


class BoneThrust:
    """Stateful thrust model (the first-order lag); call `update` once per physics step."""

    def __init__(self, bone: BoneParameters) -> None:
        self.bone = bone
        self.force = 0.0  # N, opposing the feed (>= 0)
        #: Multiplies the thrust (1: the bone as modelled; 3: a bone three times harder, a fault
        #: injected by the simulation).
        self.scale = 1.0
        bounds = []
        start = 0.0
        for layer in bone.layers:
            bounds.append((start, start + layer.thickness, layer.thrust_factor))
            start += layer.thickness
        #: (start m, end m, thrust factor) of each layer, depths along the drilling direction.
        self.bounds = tuple(bounds)
        #: The law's constants for its compiled twins (bone_law.h), floats: the point length,
        #: reference feed rate, feed-rate exponent, reference thrust, time constant, LINEAR_BELOW,
        #: then the layers' bounds.
        self.law = tuple(
            float(value)
            for value in (
                *(bone.point_length, bone.reference_feed_rate, bone.feed_rate_exponent),
                *(bone.reference_thrust, bone.time_constant, LINEAR_BELOW),
                *(value for bound in self.bounds for value in bound),
            )
        )

    def engagement(self, depth: float) -> float:
        """Cortical-equivalent fraction (0..max factor) of the point engaged at tip depth `depth` m."""
        if depth <= 0.0:  # the point short of the bone (most physics steps): every overlap <= 0
            return 0.0
        length = self.bone.point_length
        low, high = depth - length, depth
        total = 0.0
        for start, end, factor in self.bounds:
            overlap = min(high, end) - max(low, start)
            if overlap > 0.0:
                total += factor * overlap / length
        return total

    def target(self, depth: float, feed_velocity: float) -> float:
        """Quasi-static thrust (N) at tip depth (m) and feed velocity into the bone (m/s)."""
        if feed_velocity <= 0.0:
            return 0.0
        engaged = self.engagement(depth)
        if engaged == 0.0:
            return 0.0
        bone = self.bone
        ratio = feed_velocity / bone.reference_feed_rate
        if ratio < LINEAR_BELOW:
            rate_factor = LINEAR_BELOW**bone.feed_rate_exponent * ratio / LINEAR_BELOW
        else:
            rate_factor = ratio**bone.feed_rate_exponent
        return self.scale * bone.reference_thrust * rate_factor * engaged

    def update(self, dt: float, depth: float, feed_velocity: float) -> float:
        """Advance the lag by dt (s) (exact for a held target); return the thrust force (N, >= 0)."""
        target = self.target(depth, feed_velocity)
        decay = math.exp(-dt / self.bone.time_constant)
        self.force = target + (self.force - target) * decay
        return self.force
