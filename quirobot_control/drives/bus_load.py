"""CAN bus load of one SYNC cycle: SYNC, the master's heartbeat and each drive's PDOs.

`bus_load(params.canopen)` says which fraction of the busiest bus one SYNC period takes, nominal
and with worst-case bit stuffing (frame sizes from the PDO mappings of drives.cia402). In cyclic
synchronous position (CSP, the default) a drive gets RPDO1 (controlword, target torque, torque
offset) and RPDO2 (target position, velocity offset) and answers TPDO1 and TPDO2; in cyclic
synchronous torque (CST) it gets RPDO1 only. The master's heartbeat (one byte) is counted in
every cycle (it is sent every canopen.heartbeat_period >= one SYNC period: an upper bound).
"""

from __future__ import annotations

from dataclasses import dataclass

from quirobot_control.drives.cia402 import RPDO1_MAPPING, RPDO2_MAPPING, TPDO1_MAPPING, TPDO2_MAPPING
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


def bus_load(
    canopen_parameters: CanopenParameters,
    nodes: int | None = None,
    *,
    csp: bool = True,
    cycle_time: float | None = None,
) -> BusLoad:
    """Load of one cycle on one bus: SYNC, heartbeat and the PDOs of `nodes` drives.

    Default: the busiest bus of the parameter file (canopen.channels), in CSP, one cycle per
    canopen.sync_period; `csp=False`: CST (RPDO1 only), e.g. at `cycle_time` = the 1 ms
    control period of the host PID.
    """
    if nodes is None:
        channels = canopen_parameters.channels
        count = max(len(canopen_parameters.axes_on(c)) for c in set(channels.values()))
    else:
        count = nodes
    mappings = (RPDO1_MAPPING, RPDO2_MAPPING) if csp else (RPDO1_MAPPING,)
    per_node = [sum(bits for _, bits in m) // 8 for m in (*mappings, TPDO1_MAPPING, TPDO2_MAPPING)]
    payloads = [0, 1] + per_node * count  # SYNC, master heartbeat, then the nodes' PDOs
    return BusLoad(
        frames_per_cycle=len(payloads),
        bits_per_cycle=sum(can_frame_bits(n) for n in payloads),
        worst_bits_per_cycle=sum(can_frame_bits(n, worst_case_stuffing=True) for n in payloads),
        cycle_time=canopen_parameters.sync_period if cycle_time is None else cycle_time,
        bitrate=canopen_parameters.bitrate,
    )
