"""Which SDO frames answer which request (CiA 301, 7.2.4.3), as `sdo_answers.answers` decides."""

from __future__ import annotations

import struct

import pytest

from quirobot_control.drives.canopen_master.sdo_answers import answers


def frame(command: int, index: int = 0, subindex: int = 0, data: int = 0) -> bytes:
    return struct.pack("<BHBL", command, index, subindex, data)


WRITE_CONTROLWORD = frame(0x2B, 0x6040, 0, 0x0F)  # initiate download, expedited, 2 bytes
READ_STATUSWORD = frame(0x40, 0x6041)  # initiate upload


@pytest.mark.parametrize(
    ("request_", "response", "expected"),
    [
        # A write's answer is scs 3 on its own object.
        (WRITE_CONTROLWORD, frame(0x60, 0x6040), True),
        (WRITE_CONTROLWORD, frame(0x60, 0x6041), False),
        (WRITE_CONTROLWORD, frame(0x4B, 0x6040, 0, 0x0237), False),
        # A read's answer is scs 2 (expedited or not, any size) on its own object.
        (READ_STATUSWORD, frame(0x4B, 0x6041, 0, 0x0237), True),
        (READ_STATUSWORD, frame(0x43, 0x6041, 0, 0x0237), True),
        (READ_STATUSWORD, frame(0x41, 0x6041, 0, 12), True),
        (READ_STATUSWORD, frame(0x60, 0x6040), False),  # the CI failure: a write's late answer
        (READ_STATUSWORD, frame(0x4B, 0x6041, 1, 0x0237), False),
        (READ_STATUSWORD, frame(0x4B, 0x6064, 0, 0x0237), False),
        # An abort names the request's object (or none at all).
        (READ_STATUSWORD, frame(0x80, 0x6041, 0, 0x06020000), True),
        (READ_STATUSWORD, frame(0x80, 0x0000, 0, 0x06020000), True),
        (READ_STATUSWORD, frame(0x80, 0x6040, 0, 0x05040000), False),
        # A segment's answer has its toggle bit; any abort ends a segmented transfer.
        (bytes([0x60]) + bytes(7), bytes([0x00]) + bytes(7), True),  # upload segment, toggle 0
        (bytes([0x70]) + bytes(7), bytes([0x10]) + bytes(7), True),  # upload segment, toggle 1
        (bytes([0x70]) + bytes(7), bytes([0x00]) + bytes(7), False),
        (bytes([0x10]) + bytes(7), bytes([0x30]) + bytes(7), True),  # download segment, toggle 1
        (bytes([0x10]) + bytes(7), bytes([0x20]) + bytes(7), False),
        (bytes([0x10]) + bytes(7), bytes([0x60]) + bytes(7), False),
        (bytes([0x10]) + bytes(7), frame(0x80, 0x1234, 5, 0x05030000), True),
        # Block transfers and the client's own abort are not checked.
        (frame(0xC0, 0x1008), frame(0x60, 0x1008), True),
        (frame(0x80, 0x6041, 0, 0x05040000), frame(0x60, 0x6040), True),
    ],
)
def test_an_answer_is_the_requests_own(request_, response, expected):
    assert answers(request_, response) is expected
