"""Decoding CAN frames captured on the virtual bus, shared by the CANopen tests."""

from __future__ import annotations

import struct


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
