"""Which machine a calibration belongs to: the serial numbers of its drives.

A calibration file (`quirobot calibrate`, geometric_errors.read_calibration_file) describes the
geometry of one machine. Its numbers lie inside the tolerance bands of every machine of the
design, so nothing the robot measures shows a calibration of another machine: its encoders read
through that calibration put the tip on the planned axis while the true tip is off it (issue 33:
0.655 mm from the axis against a 0.1 mm target, reported as success). So a calibration names its
machine, and the drive side drills on a calibrated model only on that machine's drives
(bridge.hole_in_force).

A machine is named by its drives' serial numbers: CiA 301's identity object, 0x1018 sub-index 4
(UNSIGNED32), which every CiA 402 drive holds. The CANopen master reads them at start-up
(bridge.canopen_backend). The simulated machines have serial numbers of their own
(`simulated_machine`). A replaced drive makes another machine: calibrate again (or, after a
verification measurement that shows the geometry unchanged, write the new serial number into the
file).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from quirobot_description.joint_names import FEED_JOINT, JOINT_NAMES

#: CiA 301 identity object, serial number: (index, sub-index).
SERIAL_NUMBER_OBJECT = (0x1018, 4)
#: The largest serial number (UNSIGNED32).
MAX_SERIAL = 2**32 - 1
#: The drives a machine may have, in the order simulated serial numbers are given.
DRIVE_JOINTS = (*JOINT_NAMES, FEED_JOINT)
#: The simulated machines: `simulated_machine(seed)` for seeds 0 .. MAX_SIMULATED_SEED.
MAX_SIMULATED_SEED = 2**24 - 2


@dataclass(frozen=True)
class MachineIdentity:
    """One machine: its drives' serial numbers (0x1018:04), by joint name."""

    serials: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, serials: Mapping[str, int] | Iterable[tuple[str, int]]) -> MachineIdentity:
        """From joint -> serial number; ValueError naming a joint the robot has not or a number
        that is not a serial number."""
        pairs = tuple(sorted(dict(serials).items(), key=lambda item: _joint_order(item[0])))
        for joint, serial in pairs:
            if joint not in DRIVE_JOINTS:
                raise ValueError(f"machine identity: no drive {joint!r} (drives: {', '.join(DRIVE_JOINTS)})")
            if isinstance(serial, bool) or not isinstance(serial, int) or not 0 <= serial <= MAX_SERIAL:
                raise ValueError(
                    f"machine identity: drive {joint}'s serial number must be a whole number in "
                    f"[0, {MAX_SERIAL}] (UNSIGNED32, 0x1018:04), got {serial!r}"
                )
        if not pairs:
            raise ValueError("machine identity: no drive serial number")
        return cls(pairs)

    def text(self) -> str:
        """One line, `from_text`'s input: "gantry_x=0x00000401 gantry_y=0x00000402 ..."."""
        return " ".join(f"{joint}=0x{serial:08X}" for joint, serial in self.serials)

    @classmethod
    def from_text(cls, text: str) -> MachineIdentity:
        """The identity `text()` wrote; ValueError saying what is wrong."""
        serials = {}
        for item in text.split():
            joint, _, number = item.partition("=")
            try:
                serials[joint] = int(number, 0)
            except ValueError:
                raise ValueError(f"machine identity: {item!r} is not joint=serial number") from None
        return cls.of(serials)

    def differs_from(self, drives: MachineIdentity) -> str | None:
        """Why `drives` (the drives on the bus) are not this machine's, None if they are: each drive
        on the bus must be one this identity names, with the same serial number (a tool without a
        feed drive leaves that one out), and not 0 (the identity object's default: no serial number
        programmed, which any such drive would share)."""
        own = dict(self.serials)
        for joint, serial in drives.serials:
            if serial == 0:  # the EDS default: a drive with no serial number programmed names no machine
                return f"drive {joint} reports serial number 0 (none programmed): it names no machine"
            if joint not in own:
                return f"drive {joint} (serial 0x{serial:08X}) is not one of the calibrated machine's"
            if own[joint] != serial:
                return (
                    f"drive {joint} has serial number 0x{serial:08X}, the calibrated machine's "
                    f"0x{own[joint]:08X}"
                )
        return None


def simulated_machine(seed: int | None, joints: Iterable[str] = DRIVE_JOINTS) -> MachineIdentity:
    """The simulated machine of `seed` (None: the nominal machine, no geometric errors), its drives
    of `joints`: the one whose geometric errors `GeometricTolerances.sample(default_rng(seed))`
    draws (`quirobot calibrate --seed`, the simulated drive backend's `machine`). Serial number:
    (seed + 1) * 256 + the drive's place in DRIVE_JOINTS + 1; the nominal machine's seed term is 0."""
    if seed is not None and (isinstance(seed, bool) or not 0 <= seed <= MAX_SIMULATED_SEED):
        raise ValueError(
            f"simulated machine: seed must be in [0, {MAX_SIMULATED_SEED}] or none, got {seed!r}"
        )
    base = 0 if seed is None else (seed + 1) * 256
    return MachineIdentity.of({joint: base + _joint_order(joint) + 1 for joint in joints})


def _joint_order(joint: str) -> int:
    return DRIVE_JOINTS.index(joint) if joint in DRIVE_JOINTS else len(DRIVE_JOINTS)
