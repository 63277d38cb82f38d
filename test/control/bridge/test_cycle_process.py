"""The real drives' cycle in a process of its own (bridge.cycle_process, issue 32 item 1), against
six simulated CiA 402 drives on python-can's udp_multicast in a third process (test/support/
drives_process.py: test_polled_reception.py's rig, on their own clocks, their watchdogs live).

What must hold: the drives follow the commands posted here, the lifecycle requests reach the
bridge, the cycle runs in another process than this one; and the supervision both ways: a child
killed leaves the drives to their watchdogs and says so here; a parent gone (the child's input
closed) makes the child stop every drive and end.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from canopen.sdo.client import SdoClient
from drives_process import DrivesProcess
from virtual_can import START, wait_until

from quirobot_control.bridge.backend import DriveStartupError
from quirobot_control.bridge.canopen_backend import CanBusConfig
from quirobot_control.bridge.cycle_exchange import CycleSettings
from quirobot_control.bridge.cycle_process import CycleSpec, start_cycle_process
from quirobot_control.bridge.drive_bridge import BridgeError
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.safety.stop_codes import StopCode
from quirobot_description.parameters import load_parameters
from quirobot_description.urdf import robot_description

pytestmark = pytest.mark.canbus

#: The child's settings: drive_node's, without locking the memory of a test run. Its other threads
#: (the command reader, the reporter) on SCHED_FIFO too (process_priority): on SCHED_OTHER, a busy
#: machine preempted one holding the GIL and the cycle waited for it past the drives' watchdog
#: (seen with four busy processes).
SETTINGS = CycleSettings(lock_memory=False)


def spec_for(params, can: CanBusConfig) -> CycleSpec:
    """The child's master with this process's relaxed SDO settings (virtual_can: 1 s, 3 attempts;
    canopen's 0.3 s and one attempt failed a disable once on a host with 730 ms of steal)."""
    return CycleSpec(
        params,
        control_configuration(params),
        robot_description("drill", "real"),
        can,
        SETTINGS,
        sdo_response_timeout=SdoClient.RESPONSE_TIMEOUT,
        sdo_attempts=SdoClient.MAX_RETRIES,
    )


@pytest.fixture
def drives():
    made = DrivesProcess.start()
    yield made
    made.close()


@pytest.fixture
def process(drives):
    started = start_cycle_process(spec_for(drives.params, drives.config))
    yield started
    started.stop()


def post(process, gantry_x: float = START["gantry_x"]) -> None:
    names = process.names
    position = [gantry_x if n == "gantry_x" else START[n] for n in names]
    process.post_command(list(names), position, [0.0] * len(names), now=time.monotonic())


def started(process) -> bool:
    """The bridge took a command (the drives' state key says so) and a period stepped it since."""
    return process.state is not None and process.state[3] and process.latest is not None


def drive(process, drives) -> None:
    """The bridge started on a hold command, then the drives on their own clocks (watchdogs live)."""
    post(process)
    assert wait_until(lambda: started(process), 5.0), process.state
    drives.live()


def test_the_drives_follow_the_cycle_in_another_process(stall_window, process, drives):
    assert process.child.pid != os.getpid()
    assert "drive-cycle" not in {thread.name for thread in threading.enumerate()}  # not here
    assert "buses read by the cycle thread" in process.report_text, process.report_text
    drive(process, drives)
    assert drives.enabled(), drives.states()
    target = START["gantry_x"] + 1e-3

    def moved() -> bool:
        post(process, target)
        return abs(process.latest.sample.position[process.names.index("gantry_x")] - target) < 1e-4

    assert wait_until(moved, 5.0), process.latest.sample.position
    assert process.latest.sample.stop_reason is None
    assert any("first controller command accepted" in event for event in process.events), process.events
    status = process.request("status")
    assert status.enabled and status.stop_reason is None
    stall_window.assert_master_kept(drives)


def test_lifecycle_requests_reach_the_bridge_with_the_bus_kept_alive(stall_window, process, drives):
    drive(process, drives)
    assert process.request("disable") == "disabled"
    assert wait_until(lambda: "OPERATION_ENABLED" not in drives.states().values(), 2.0)
    assert process.request("enable", time.monotonic()) == "enabled"
    stall_window.assert_master_kept(drives)  # the bus stayed alive through the SDO handshakes
    with pytest.raises(ValueError, match="unknown drive cycle request 'fly'"):
        process.request("fly")


def test_a_killed_cycle_process_leaves_the_drives_to_their_watchdogs_and_says_so(process, drives):
    drive(process, drives)
    assert drives.enabled()
    os.kill(process.child.pid, signal.SIGKILL)
    assert wait_until(lambda: len(drives.master_lost()) == len(process.names), 2.0), drives.master_lost()
    assert wait_until(lambda: process.ended is not None, 2.0)
    reason = process.latest.sample.stop_reason
    assert reason.startswith("drive cycle process ended: exit code -9"), reason
    # What drive_node publishes as the drives' state (DrivesStatusOut): inactive, the stop.
    status = process.bridge.status()
    assert status.lifecycle == "inactive" and not status.enabled and not status.commanded
    assert status.stop_reason == reason and status.stop_code is StopCode.CYCLE_LOST
    assert process.bridge.hardware.stop_reason == reason
    with pytest.raises(BridgeError, match="has ended: exit code -9"):
        process.request("status")


def test_when_its_parent_goes_the_cycle_process_stops_every_drive_and_ends(process, drives):
    drive(process, drives)
    process._send.close()  # what the kernel does to the child's input when drive_node dies
    assert process.child.wait(10.0) == 0
    # The drives' own process applies the child's quick stops when the host lets it run: on a CI
    # host with 700 ms of CPU stolen per bench window, two drives still reported Operation enabled
    # as the child ended. Asked again until they have taken the frames (or 5 s).
    deadline = time.monotonic() + 5.0
    while "OPERATION_ENABLED" in (states := drives.states()).values() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "OPERATION_ENABLED" not in states.values(), states


def test_a_bus_that_does_not_open_fails_the_start_in_the_childs_words():
    params = load_parameters()
    can = CanBusConfig("socketcan", dict.fromkeys(params.canopen.channel_names, "quirobot_no_such_can0"))
    with pytest.raises(DriveStartupError, match=r"CAN bus can0 \(socketcan channel quirobot_no_such_can0\)"):
        start_cycle_process(spec_for(params, can), timeout=30.0)
