"""Stops as codes (issue 35 item 1): the enum, the one fault-merge rule, and the interface files.

The interface files (msg/DrivesState.msg, msg/OperatingState.msg, action/DrillHole.action) carry
`stop_code` with uint8 constants named and numbered as `StopCode`: read from the files here, so a
code added on one side only fails.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from quirobot_control.safety.stop_codes import NO_STOP, Stop, StopCode, merged_fault

ROOT = Path(__file__).resolve().parents[3]


def test_the_merge_rule_puts_the_drives_stop_first():
    drives = Stop(StopCode.DRILLING_MONITOR, "thrust limit: 81 N above 80 N")
    task = Stop(StopCode.PATH_TOLERANCE, "path tolerance: gantry_z")
    assert merged_fault(drives, task) == Stop(StopCode.DRILLING_MONITOR, f"drives stopped: {drives.reason}")
    assert merged_fault(NO_STOP, task) == task
    assert merged_fault(NO_STOP, NO_STOP) == NO_STOP and not merged_fault(NO_STOP, NO_STOP)


@pytest.mark.parametrize("path", ["msg/DrivesState.msg", "msg/OperatingState.msg", "action/DrillHole.action"])
def test_each_interface_file_carries_the_stop_codes(path):
    text = (ROOT / path).read_text()
    constants = {
        name: int(value) for name, value in re.findall(r"^uint8 STOP_([A-Z_]+) = (\d+)", text, re.MULTILINE)
    }
    assert constants == {code.name: code.value for code in StopCode}
    assert re.search(r"^uint8 stop_code\b", text, re.MULTILINE), f"{path} has no uint8 stop_code field"
