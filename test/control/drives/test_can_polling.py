"""drives.can_polling on python-can's virtual bus: frames to canopen's subscribers from the
caller's thread, bounded per call, error and remote frames dropped, a subscriber's error logged."""

from __future__ import annotations

import logging
import uuid

import can
import canopen
import pytest

from quirobot_control.drives.can_polling import bus_descriptor, frames_waiting, take_frames

pytestmark = pytest.mark.canbus


@pytest.fixture
def buses():
    channel = f"quirobot-polling-{uuid.uuid4().hex}"
    sender = can.Bus(interface="virtual", channel=channel)
    network = canopen.Network(can.Bus(interface="virtual", channel=channel))  # no connect: no thread
    yield sender, network
    sender.shutdown()
    network.bus.shutdown()


def test_frames_reach_the_subscribers_at_most_limit_a_call(buses):
    sender, network = buses
    seen = []
    network.subscribe(0x181, lambda cob, data, stamp: seen.append(bytes(data)))
    for k in range(5):
        sender.send(can.Message(arbitration_id=0x181, data=[k], is_extended_id=False))
    assert take_frames(network, limit=3) == 3
    assert seen == [b"\0", b"\1", b"\2"]
    assert take_frames(network, limit=3) == 2
    assert seen == [bytes([k]) for k in range(5)]
    assert take_frames(network) == 0  # nothing waits: it returns at once


def test_error_and_remote_frames_are_dropped_and_a_subscribers_error_logged(buses, caplog):
    sender, network = buses
    seen = []

    def broken(cob, data, stamp):
        raise ValueError("bad frame")

    network.subscribe(0x181, broken)
    network.subscribe(0x182, lambda cob, data, stamp: seen.append(cob))
    sender.send(can.Message(arbitration_id=0x182, is_remote_frame=True, is_extended_id=False))
    sender.send(can.Message(arbitration_id=0x182, is_error_frame=True, is_extended_id=False))
    sender.send(can.Message(arbitration_id=0x181, data=[1], is_extended_id=False))
    sender.send(can.Message(arbitration_id=0x182, data=[2], is_extended_id=False))
    with caplog.at_level(logging.ERROR):
        assert take_frames(network) == 4
    assert seen == [0x182]  # the data frame only, after the subscriber that raised
    assert "0x181" in caplog.text and "bad frame" in caplog.text


def test_a_bus_without_a_descriptor_is_said_so(buses):
    _, network = buses
    assert bus_descriptor(network.bus) == -1  # python-can's virtual bus
    assert bus_descriptor(None) == -1
    assert frames_waiting(network.bus) is False
