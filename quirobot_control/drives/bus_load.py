"""CAN bus load of one control cycle: SYNC plus each drive's RPDO1, TPDO1 and TPDO2 frames.

`bus_load(params.canopen)` says which fraction of the busiest bus one SYNC period takes, nominal
and with worst-case bit stuffing (frame sizes from the PDO mappings of drives.cia402).
"""

from __future__ import annotations

from dataclasses import dataclass

from quirobot_control.drives.cia402 import RPDO1_MAPPING, TPDO1_MAPPING, TPDO2_MAPPING
from quirobot_description.parameters import CanopenParameters


def can_frame_bits(data_bytes: int, *, worst_case_stuffing: bool = False) -> int:
    """Bits on the wire of a CAN 2.0A data frame with `data_bytes` (0-8), interframe space included.

    47 + 8n bits (SOF, 11-bit id, RTR, IDE, r0, DLC, data, CRC, delimiters, ACK, EOF, 3-bit
    intermission); bit stuffing adds at most one bit per 4 after the first over the 34 + 8n bits
    from SOF to the CRC.
    """
    if not 0 <= data_bytes <= 8:
        raise ValueError(f"a CAN frame carries 0 to 8 data bytes, got {data_bytes}")
    bits = 47 + 8 * data_bytes
    if worst_case_stuffing:
        bits += (34 + 8 * data_bytes - 1) // 4
    return bits


@dataclass(frozen=True)
class BusLoad:
    frames_per_cycle: int
    bits_per_cycle: int  # nominal, no stuff bits
    worst_bits_per_cycle: int  # worst-case bit stuffing
    cycle_time: float  # s, the SYNC period
    bitrate: int  # bit/s

    @property
    def load(self) -> float:
        """Fraction of the bus busy per cycle, nominal."""
        return self.bits_per_cycle / self.bitrate / self.cycle_time

    @property
    def worst_load(self) -> float:
        """Fraction of the bus busy per cycle with worst-case bit stuffing."""
        return self.worst_bits_per_cycle / self.bitrate / self.cycle_time


def bus_load(canopen_parameters: CanopenParameters, nodes: int | None = None) -> BusLoad:
    """Load of one cycle on one bus: SYNC + RPDO1, TPDO1, TPDO2 of `nodes` drives.

    Default: the busiest bus of the parameter file (canopen.channels).
    """
    if nodes is None:
        channels = canopen_parameters.channels
        count = max(len(canopen_parameters.axes_on(c)) for c in set(channels.values()))
    else:
        count = nodes
    payloads = [0] + [
        sum(bits for _, bits in m) // 8 for m in (RPDO1_MAPPING, TPDO1_MAPPING, TPDO2_MAPPING)
    ] * count
    return BusLoad(
        frames_per_cycle=len(payloads),
        bits_per_cycle=sum(can_frame_bits(n) for n in payloads),
        worst_bits_per_cycle=sum(can_frame_bits(n, worst_case_stuffing=True) for n in payloads),
        cycle_time=canopen_parameters.sync_period,
        bitrate=canopen_parameters.bitrate,
    )
