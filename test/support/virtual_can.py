"""Helpers for the CANopen tests on python-can's virtual bus: networks, waiting, frame decoding."""

from __future__ import annotations

import struct
import time

import can
import canopen
from canopen.sdo.client import SdoClient

WAIT = 2.0  # s, wall-clock bound on any single wait for frames (never reached when it works)
#: s, the masters' SDO response timeout in these tests (canopen's default 0.3 s, a real drive
#: answers in milliseconds): on a loaded 2-core machine the simulated slaves' threads are
#: starved for longer, and a start-up of a few dozen SDOs then failed now and then.
SdoClient.RESPONSE_TIMEOUT = 1.0


def network(channel: str) -> canopen.Network:
    """A connected canopen Network on the virtual bus `channel`."""
    net = canopen.Network(can.Bus(interface="virtual", channel=channel))
    net.NOTIFIER_CYCLE = 0.01  # s: lets disconnect() return at once
    return net.connect()


def wait_until(condition, timeout: float = WAIT) -> bool:
    """Poll `condition` until true (True) or `timeout` s pass (False)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(1e-4)
    return True


def sdo_downloads(frames, node_id, index):
    """Values of expedited SDO downloads to `index` (CiA 301: ccs 1, e = s = 1)."""
    values = []
    for frame in frames:
        if frame.arbitration_id == 0x600 + node_id and frame.data[0] & 0xE3 == 0x23:
            size = 4 - ((frame.data[0] >> 2) & 0x3)
            frame_index, _ = struct.unpack_from("<HB", frame.data, 1)
            if frame_index == index:
                values.append(int.from_bytes(frame.data[4 : 4 + size], "little"))
    return values
