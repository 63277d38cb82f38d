"""Helpers for the CANopen tests: networks on python-can's virtual bus, waiting, frame decoding, and
what the drive rigs share (their drives' start pose, the parameters with the master's own limits
relaxed for simulated drives)."""

from __future__ import annotations

import dataclasses
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
#: attempts per SDO request (canopen's default 1: no retry). Over udp_multicast a datagram can be
#: dropped when a starved reader's socket buffer fills with the keep-alive's SYNC and TPDO traffic
#: (a CAN controller acknowledges every frame on the wire; /proc/net/snmp
#: Udp RcvbufErrors counted 81,627 such drops on this VM); CI's ROS tier once failed a drive's
#: start-up on one unanswered statusword read. A retry sends the same request again.
SdoClient.MAX_RETRIES = 3


#: The rigs' drives start here (m, rad), inside every axis' travel.
START = {
    "gantry_x": 0.5,
    "gantry_y": 0.6,
    "gantry_z": 0.7,
    "wrist_yaw": 1.0,
    "wrist_pitch": 0.3,
    "drill_feed": 0.02,
}


def relaxed_parameters(parameters):
    """The parameter file with the master's own wall-clock limits relaxed (transition 2 s,
    feedback timeout 500 SYNC periods, 1 s): here the simulated drives share the test's process
    and two loaded cores, so they answer late now and then, which a real drive does not. The
    drives' watchdogs on the master (SYNC loss, heartbeat: 10 ms), the subject of the cycle tests,
    keep the file's values."""
    bus = dataclasses.replace(parameters.canopen, transition_timeout=2.0, feedback_timeout_periods=500)
    return dataclasses.replace(parameters, canopen=bus)


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


def sdo_uploads(frames, node_id, index, subindex):
    """What the node answered to SDO uploads (reads) of `index`:`subindex`, in order: the value of
    each expedited upload response (CiA 301: scs 2, e = 1), or ("abort", code) for an abort."""
    answers = []
    for frame in frames:
        if frame.arbitration_id != 0x580 + node_id or len(frame.data) != 8:
            continue
        frame_index, frame_subindex = struct.unpack_from("<HB", frame.data, 1)
        if (frame_index, frame_subindex) != (index, subindex):
            continue
        command = frame.data[0]
        if command == 0x80:  # abort transfer
            answers.append(("abort", struct.unpack_from("<I", frame.data, 4)[0]))
        elif command & 0xE2 == 0x42:  # expedited upload response
            size = 4 - ((command >> 2) & 0x3) if command & 0x1 else 4
            answers.append(int.from_bytes(frame.data[4 : 4 + size], "little"))
    return answers


def is_upload_request(data, index: int, subindex: int) -> bool:
    """Whether an SDO request's `data` is an upload (read) of `index`:`subindex` (CiA 301: ccs 2)."""
    return data[0] == 0x40 and tuple(struct.unpack_from("<HB", data, 1)) == (index, subindex)


def sdo_upload_requests(frames, node_id, index, subindex):
    """How many SDO upload (read) requests the master sent to the node for `index`:`subindex`."""
    return sum(
        1
        for frame in frames
        if frame.arbitration_id == 0x600 + node_id and is_upload_request(frame.data, index, subindex)
    )


def lose_the_first_upload_request(simulator, index: int, subindex: int = 0) -> list[float]:
    """The simulated drive's SDO server (on its network) never sees the first upload request of
    `index`:`subindex`, as if its frame were lost on the bus; it answers every other request. The
    list returned holds that request's timestamp once it is lost."""
    sdo, lost = simulator.node.sdo, []

    def serve(can_id: int, data: bytearray, timestamp: float) -> None:
        if not lost and is_upload_request(data, index, subindex):
            lost.append(timestamp)
            return
        sdo.on_request(can_id, data, timestamp)

    simulator.stop_sdo_server()
    simulator.network.subscribe(sdo.rx_cobid, serve)
    return lost


def answer_the_first_download_again_late(simulator, index: int, subindex: int = 0) -> list[bytes]:
    """The simulated drive's SDO server answers the first download (write) of `index`:`subindex`
    once more when the next request reaches it, before it serves that one: the master then finds a
    late answer to its earlier request waiting when it expects the answer to the next, as after a
    request sent again by a retry once its answer was late. The list returned holds the late answer
    once it is sent."""
    sdo, late = simulator.node.sdo, []
    pending: list[bytes] = []

    def serve(can_id: int, data: bytearray, timestamp: float) -> None:
        if pending:
            late.append(pending.pop())
            simulator.network.send_message(sdo.tx_cobid, late[-1])
        elif not late and data[0] >> 5 == 1 and struct.unpack_from("<HB", data, 1) == (index, subindex):
            pending.append(bytes([0x60]) + bytes(data[1:4]) + bytes(4))  # CiA 301: scs 3, same index
        sdo.on_request(can_id, data, timestamp)

    simulator.stop_sdo_server()
    simulator.network.subscribe(sdo.rx_cobid, serve)
    return late
