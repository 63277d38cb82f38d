"""An EMCY flood (issue 33 item 13): a babbling node sent 100,000 EMCY frames and canopen's own EMCY
log grew by 44 MB, each frame a warning. The frames enter the library where its bus listener hands
them over (`canopen.Network.notify`, no bus needed); the drive's clock advances 1 ms per frame."""

from __future__ import annotations

import logging
import struct
import tracemalloc

import canopen
import pytest

from quirobot_control.drives.canopen_master import canopen_drives_for_robot
from quirobot_control.drives.canopen_master.feedback import EMCY_LOG_LIMIT, EMCY_WARNING_INTERVAL
from quirobot_control.drives.interface import DriveState
from quirobot_description.parameters import load_parameters

FRAMES = 100_000
PERIOD = 1e-3  # s of the drive's clock per frame


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_emcy_flood_keeps_the_logs_bounded_the_warnings_throttled_and_the_count(caplog):
    params = load_parameters()
    network = canopen.Network()  # not connected: construction does no bus I/O
    clock = Clock()
    drive = canopen_drives_for_robot(params, network, axes=["gantry_x"], start=False, clock=clock)["gantry_x"]
    cob_id = 0x80 + drive.node_id
    over_voltage = struct.pack("<HB5s", 0x3210, 0x01, bytes(5))
    caplog.set_level(logging.WARNING, logger="quirobot_control.drives.canopen_master.feedback")
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for k in range(FRAMES):
            clock.now = k * PERIOD
            network.notify(cob_id, over_voltage, clock.now)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert drive.emcy_count == FRAMES
    assert len(drive.emcy_log) == EMCY_LOG_LIMIT
    assert drive.emcy_log[-1] == pytest.approx(((FRAMES - 1) * PERIOD, 0x3210, 0x01))  # the latest kept
    assert len(drive.node.emcy.log) <= EMCY_LOG_LIMIT and len(drive.node.emcy.active) <= EMCY_LOG_LIMIT
    assert grown < 2_000_000, f"{grown / 1e6:.1f} MB kept for {FRAMES} EMCY frames"
    warnings = [record.getMessage() for record in caplog.records if "EMCY" in record.getMessage()]
    seconds = FRAMES * PERIOD
    assert 1 <= len(warnings) <= seconds / EMCY_WARNING_INTERVAL + 1, len(warnings)
    assert "more EMCY" in warnings[-1] and f"{FRAMES - 1} in all" not in warnings[0]
    # Still a fault at once, with its code as the reason.
    feedback = drive.feedback()
    assert feedback.state is DriveState.FAULT and "0x3210" in feedback.fault


def test_a_new_error_code_is_warned_at_once_within_a_flood(caplog):
    params = load_parameters()
    network = canopen.Network()
    clock = Clock()
    drive = canopen_drives_for_robot(params, network, axes=["gantry_y"], start=False, clock=clock)["gantry_y"]
    cob_id = 0x80 + drive.node_id
    caplog.set_level(logging.WARNING, logger="quirobot_control.drives.canopen_master.feedback")
    for _ in range(50):
        network.notify(cob_id, struct.pack("<HB5s", 0x3210, 0x01, bytes(5)), 0.0)
    network.notify(cob_id, struct.pack("<HB5s", 0x2310, 0x01, bytes(5)), 0.0)  # over-current
    warnings = [record.getMessage() for record in caplog.records if "EMCY" in record.getMessage()]
    assert len(warnings) == 2 and "0x2310" in warnings[1], warnings
