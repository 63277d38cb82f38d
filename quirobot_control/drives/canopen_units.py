"""CiA 402 torque and current units of one drive (`TorqueScaling`), shared by master and slave.

Units. The current command i (A, q-axis) becomes a torque K_T * i (N*m) and is sent as
round(1000 * K_T * i / T_rated) per-mille (one count = T_rated / 1000 = 2.0 mN*m on the gantry
motors, 0.042 mN*m on the wrist); the current actual comes back as I_rated / 1000 per count
(12.9 mA on the gantry). T_rated = K_T * I_continuous and I_rated = I_continuous come from the
parameter file, rounded to whole mN*m and mA as the drive stores them; `start()` reads them back
and refuses a drive that disagrees. Position: an encoder of n counts per motor revolution on a
transmission of ratio r (motor rad per joint m or rad) reports 2*pi / (n * r) m or rad per count.
The encoder's zero is the joint's zero (homing is not done here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from quirobot_description.parameters import MotorParameters


class CanopenConfigurationError(ValueError):
    """A drive's configuration disagrees with the parameter file, or a setting is invalid."""


MILLI = 1000.0  # mA per A, mN*m per N*m
PER_MILLE = 1000.0
INT16_MAX = 2**15 - 1


@dataclass(frozen=True)
class TorqueScaling:
    """CiA 402 torque and current units of one drive.

    `rated_current_milliamps` (0x6075, mA) and `rated_torque_millinewton_metres` (0x6076, mN*m)
    as the drive stores them; `torque_constant` K_T in N*m/A. Target torque and current actual
    are per-mille of them.
    """

    rated_current_milliamps: int
    rated_torque_millinewton_metres: int
    torque_constant: float

    def __post_init__(self) -> None:
        if self.rated_current_milliamps <= 0 or self.rated_torque_millinewton_metres <= 0:
            raise CanopenConfigurationError(
                f"motor rated current ({self.rated_current_milliamps} mA) and rated torque "
                f"({self.rated_torque_millinewton_metres} mN*m) must be > 0"
            )

    @classmethod
    def for_motor(cls, motor: MotorParameters) -> TorqueScaling:
        """The values a drive commissioned from the parameter file holds: I_cont, K_T * I_cont."""
        return cls(
            rated_current_milliamps=round(motor.continuous_current * MILLI),
            rated_torque_millinewton_metres=round(motor.continuous_torque * MILLI),
            torque_constant=motor.torque_constant,
        )

    @property
    def rated_current(self) -> float:
        """A."""
        return self.rated_current_milliamps / MILLI

    @property
    def rated_torque(self) -> float:
        """N*m."""
        return self.rated_torque_millinewton_metres / MILLI

    def target_torque(self, current: float) -> int:
        """0x6071 value (per-mille of rated torque, int16) for a q-axis current command in A."""
        value = round(PER_MILLE * self.torque_constant * current / self.rated_torque)
        return max(-INT16_MAX, min(INT16_MAX, value))

    def current_for_target_torque(self, target_torque: int) -> float:
        """q-axis current (A) that a 0x6071 value asks for: (per-mille * T_rated / 1000) / K_T."""
        return target_torque * self.rated_torque / PER_MILLE / self.torque_constant

    def current_actual(self, current: float) -> int:
        """0x6078 value (per-mille of rated current, int16) for a current in A."""
        value = round(PER_MILLE * current / self.rated_current)
        return max(-INT16_MAX, min(INT16_MAX, value))

    def current(self, current_actual: int) -> float:
        """Current (A) that a 0x6078 value reports."""
        return current_actual * self.rated_current / PER_MILLE


UINT32_MAX = 2**32 - 1
INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class MotionScaling:
    """CiA 402 position units of one drive: encoder increments (counts) on the motor shaft.

    `resolution`: joint motion per count (m or rad, `models.encoder.Encoder.resolution`).
    Positions (0x607A, 0x6064) are INTEGER32 counts, velocities (0x60B1, 0x606C, 0x6099)
    counts/s, accelerations (0x6085, 0x609A) UNSIGNED32 counts/s^2.
    """

    resolution: float

    def counts(self, value: float) -> int:
        """A position (m or rad) or velocity (per s) in counts (per s), nearest, INTEGER32."""
        count = round(value / self.resolution)
        if abs(count) > INT32_MAX:
            raise CanopenConfigurationError(
                f"{value!r} is {count} counts, beyond the INTEGER32 range of CiA 402 positions"
            )
        return count

    def positive_counts(self, value: float, what: str = "acceleration") -> int:
        """A speed (per s) or acceleration (per s^2), > 0, in counts per s (s^2): UNSIGNED32, >= 1."""
        if not value > 0.0 or not math.isfinite(value) or round(value / self.resolution) > UINT32_MAX:
            raise CanopenConfigurationError(
                f"{what} {value!r} is not > 0 or beyond the UNSIGNED32 range in counts"
            )
        return max(1, round(value / self.resolution))

    def value(self, counts: int) -> float:
        """Counts (per s, per s^2) back to joint units (m or rad, per s, per s^2)."""
        return counts * self.resolution
