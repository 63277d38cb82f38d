"""Reading a CAN bus from the caller's own thread, with no receive thread.

canopen's `Network.connect` starts a python-can `Notifier`: one thread per bus that receives
every frame and runs canopen's callbacks (TPDOs, EMCYs, SDO responses) under the GIL. A control
cycle that needs those frames then hands the GIL to its receive threads at every frame it sends
(a send releases the GIL, and a loopback transport echoes the frame to the receivers at once),
and waits for them to give it back. Polling the bus from the cycle's thread instead keeps the
cycle the only thread on its path: `take_frames` hands every frame waiting in the bus's socket to
canopen (`Network.notify`, as canopen's `MessageListener` does) and returns; `wait_readable`
blocks on the buses' file descriptors until one has a frame. Only a bus with a file descriptor
(SocketCAN, udp_multicast) can be polled this way: `bus_descriptor` says which.
"""

from __future__ import annotations

import logging
import select
from collections.abc import Sequence

import can
import canopen

logger = logging.getLogger(__name__)


def bus_descriptor(bus: can.BusABC | None) -> int:
    """The file descriptor `bus` receives on, or -1 (python-can's virtual bus has none)."""
    if bus is None:
        return -1
    try:
        return int(bus.fileno())
    except (NotImplementedError, OSError, ValueError):
        return -1


def frames_waiting(bus: can.BusABC | None) -> bool:
    """Whether frames wait unread in `bus`'s receive socket (a bus without a descriptor: False)."""
    descriptor = bus_descriptor(bus)
    return descriptor >= 0 and bool(select.select([descriptor], [], [], 0.0)[0])


#: Frames one `take_frames` call takes at most: a babbling node must not hold the caller in the
#: loop (a 1 Mbit/s CAN bus carries at most about 18 frames a millisecond).
TAKE_LIMIT = 1000


def take_frames(network: canopen.Network, limit: int = TAKE_LIMIT) -> int:
    """The frames waiting on `network`'s bus (at most `limit`) to canopen's subscribers, in this
    thread, without blocking; error and remote frames are dropped, as canopen's own listener drops
    them. A subscriber's exception is logged, not raised (canopen's listener does the same: one bad
    frame must not stop the cycle); the bus's own errors (can.CanError, OSError) are raised. The
    number of frames taken."""
    bus, notify, taken = network.bus, network.notify, 0
    if bus is None:
        return 0
    while taken < limit and (message := bus.recv(0.0)) is not None:
        taken += 1
        if message.is_error_frame or message.is_remote_frame:
            continue
        try:
            notify(message.arbitration_id, message.data, message.timestamp)
        except Exception as error:  # noqa: BLE001  (as canopen.network.MessageListener)
            logger.error("CAN frame 0x%03X: %s", message.arbitration_id, error)
    return taken


def wait_readable(descriptors: Sequence[int], timeout: float) -> bool:
    """Block at most `timeout` s until one of `descriptors` has a frame; True if one has."""
    if timeout <= 0.0:
        return False
    return bool(select.select(descriptors, [], [], timeout)[0])
