"""Motor-shaft encoder: quantizes the measured joint position.

An absolute multi-turn encoder with `counts_per_rev` counts per motor revolution on a shaft
turning `ratio` motor radians per joint unit (rad/m for a screw, 1 for direct drive) resolves
2*pi / (counts_per_rev * ratio) m or rad of joint motion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class Encoder:
    """Encoder on the motor shaft of one joint: `counts_per_rev` (> 0, whole), `ratio` (> 0)."""

    counts_per_rev: int
    ratio: float

    def __post_init__(self) -> None:
        if int(self.counts_per_rev) != self.counts_per_rev or self.counts_per_rev <= 0:
            raise ValueError(
                f"encoder counts per revolution must be a positive whole number, got {self.counts_per_rev!r}"
            )
        if not math.isfinite(self.ratio) or self.ratio <= 0.0:
            raise ValueError(
                f"encoder transmission ratio must be a positive finite number, got {self.ratio!r}"
            )

    @cached_property
    def resolution(self) -> float:
        """Joint motion per count, m or rad."""
        return 2.0 * math.pi / (self.counts_per_rev * self.ratio)

    def counts(self, joint_position: float) -> int:
        """Encoder reading (counts, nearest) for a joint position in m or rad."""
        if not math.isfinite(joint_position):
            raise ValueError(f"joint position must be a finite number, got {joint_position!r}")
        return round(joint_position / self.resolution)

    def position(self, counts: int) -> float:
        """Joint position (m or rad) that a reading of `counts` reports."""
        return counts * self.resolution

    def quantize(self, joint_position: float) -> float:
        """The joint position as the encoder reports it (nearest count), m or rad."""
        return self.position(self.counts(joint_position))
