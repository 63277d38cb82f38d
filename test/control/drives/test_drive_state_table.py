"""The drive state machine against CiA 402, written out here by hand, on both drives.

Every (state, request) pair of drives.interface's simplified CiA 402 is run on a SimulatedDrive
and on a CanopenDrive over the virtual bus against the simulated CiA 402 slave (canbus), and the
state each reports afterwards is compared with EXPECTED below, derived from the CiA 402 drive
state machine (transition numbers as in the standard), not from DRIVE_TRANSITIONS. The
SimulatedDrive applies DRIVE_TRANSITIONS; the CanopenDrive's state comes from the slave's
statusword (plus the master's QUICK_STOP/FAULT latch), so for it this checks that what the drive
reports follows the same table.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from canopen_rig import RigFactory

from quirobot_control.drive_simulators.simulated_drive import drive_for_joint
from quirobot_control.drives.cia402 import Cia402State
from quirobot_control.drives.interface import (
    DRIVE_REQUESTS,
    DRIVE_TRANSITIONS,
    Drive,
    DriveError,
    DriveMode,
    DriveState,
)
from quirobot_control.hardware.control_config import control_configuration
from quirobot_description.parameters import axes_for

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

OFF, ON, STOP, FAULT = DriveState.DISABLED, DriveState.ENABLED, DriveState.QUICK_STOP, DriveState.FAULT
REFUSED = None  # the request raises DriveError and the state stays
#: request -> {state before: state after}, from CiA 402 (the project's mapping: Operation enabled
#: is ENABLED, Quick stop active QUICK_STOP, Fault reaction active and Fault FAULT, every other
#: state DISABLED; QUICK_STOP and FAULT latched until a fault reset).
EXPECTED = {
    # Shutdown, Switch on, Enable operation (transitions 2, 3, 4). Quick stop option code 2 ends
    # in Switch on disabled, so no transition 16 back; Fault is left only by transition 15.
    "enable": {OFF: ON, ON: ON, STOP: REFUSED, FAULT: REFUSED},
    # Disable operation (transition 5, to Switched on); the latches stay.
    "disable": {OFF: OFF, ON: OFF, STOP: STOP, FAULT: FAULT},
    # Quick stop (transition 11); from the disabled states CiA 402 ends in Switch on disabled
    # (transitions 7, 10) and the request is latched; a fault keeps priority.
    "quick_stop": {OFF: STOP, ON: STOP, STOP: STOP, FAULT: FAULT},
    # Fault reset (transition 15) and Disable voltage out of Quick stop active (transition 12),
    # both to Switch on disabled once the stop is complete; nothing to reset otherwise.
    "reset_fault": {OFF: OFF, ON: ON, STOP: OFF, FAULT: OFF},
    # A fault the drive detects: Fault reaction active, then Fault (transitions 13, 14), from any state.
    "fault": {OFF: FAULT, ON: FAULT, STOP: FAULT, FAULT: FAULT},
    # Halt (controlword bit 8) changes no state; leaving it is refused once the drive is stopped.
    "halt": {OFF: OFF, ON: ON, STOP: STOP, FAULT: FAULT},
    "resume": {OFF: OFF, ON: ON, STOP: REFUSED, FAULT: REFUSED},
}
AXIS = "gantry_x"


def test_the_table_is_the_standard_pair_by_pair():
    for state, request in itertools.product(DriveState, EXPECTED):
        assert DRIVE_TRANSITIONS[(state, request)] is EXPECTED[request][state], (state, request)
    assert set(DRIVE_REQUESTS) == set(EXPECTED)
    assert len(DRIVE_TRANSITIONS) == len(DriveState) * len(EXPECTED)


@dataclass
class Harness:
    """One drive, a way to let time pass (`step`: one control or SYNC period) and to make it fault
    by itself (`fault`: a power-stage fault detected by the drive)."""

    drive: Drive
    step: Callable[[], None]
    fault: Callable[[], None]
    statusword_state: Callable[[], Cia402State] | None = None  # CanopenDrive: the slave's own word

    def settle(self, periods: int = 3) -> None:
        """Let any stop reach the drive and finish (its own report: standstill, brake holding,
        power off), then `periods` more."""

        def done() -> bool:
            feedback = self.drive.feedback()
            return feedback.confirmed and not feedback.stopping

        for _ in range(2000):
            if done():
                break
            self.step()
        assert done(), "the stop did not finish"
        for _ in range(periods):
            self.step()


@pytest.fixture(scope="module")
def control(parameters):
    return control_configuration(parameters)


@pytest.fixture
def make_rig(parameters, control):
    factory = RigFactory(parameters, {axis: control.joint(axis).effective_inertia for axis in DRILL_AXES})
    yield factory.make
    factory.close()


def _simulated(parameters, control, make_rig) -> Harness:
    drive = drive_for_joint(parameters, AXIS)
    drive.configure_position_loop(control.joint(AXIS).gains, control.dt)  # its stops ramp with it
    drive.advance(0.0, 0.5, 0.0)
    return Harness(
        drive, step=lambda: drive.advance(control.dt, 0.5, 0.0), fault=lambda: drive.inject_fault("test")
    )


def _canopen(parameters, control, make_rig) -> Harness:
    # A wall-clock bound only (the SDO steps of enable and fault reset): 2 s instead of the
    # parameter file's 0.1 s, so that a loaded machine starving the slave's thread fails no pair.
    bus = dataclasses.replace(parameters.canopen, transition_timeout=2.0)
    rig = make_rig(
        axes=(AXIS,),
        positions={AXIS: 0.5},
        mode=DriveMode.CSP,
        parameters=dataclasses.replace(parameters, canopen=bus),
    )
    drive, slave = rig.drives[AXIS], rig.simulators[AXIS]
    drive.configure_position_loop(control.joint(AXIS).gains, control.dt)
    return Harness(
        drive,
        step=rig.step,
        fault=lambda: slave.inject_fault(0x2310),  # continuous over-current (CiA 301)
        statusword_state=lambda: slave.state,
    )


DRIVES = [
    pytest.param(_simulated, id="SimulatedDrive"),
    pytest.param(_canopen, id="CanopenDrive", marks=pytest.mark.canbus),
]


def _bring_to(harness: Harness, state: DriveState) -> None:
    drive = harness.drive
    if state is not OFF:
        drive.enable()
    if state is STOP:
        drive.quick_stop()
    elif state is FAULT:
        harness.fault()
    harness.settle()
    assert drive.feedback().state is state


def _request(harness: Harness, request: str) -> None:
    if request == "fault":
        harness.fault()
    else:
        getattr(harness.drive, request)()


@pytest.mark.parametrize("state", list(DriveState))
@pytest.mark.parametrize("request_", list(EXPECTED))
@pytest.mark.parametrize("build", DRIVES)
def test_every_state_and_request_against_cia402(parameters, control, make_rig, build, state, request_):
    """The state reported after the request (and any stop it starts has finished) is EXPECTED's;
    a refused request raises DriveError naming reset_fault() and changes nothing. On the bus, an
    ENABLED or DISABLED report is the slave's statusword itself, not a latch of the master's."""
    harness = build(parameters, control, make_rig)
    _bring_to(harness, state)
    expected = EXPECTED[request_][state]
    if expected is REFUSED:
        with pytest.raises(DriveError, match="reset_fault"):
            _request(harness, request_)
        expected = state
    else:
        _request(harness, request_)
    harness.settle()
    feedback = harness.drive.feedback()
    assert feedback.state is expected
    assert feedback.confirmed  # the drive's own report agrees
    if harness.statusword_state is not None:
        reported = harness.statusword_state()
        allowed = {
            OFF: {Cia402State.SWITCH_ON_DISABLED, Cia402State.READY_TO_SWITCH_ON, Cia402State.SWITCHED_ON},
            ON: {Cia402State.OPERATION_ENABLED},
            STOP: {Cia402State.QUICK_STOP_ACTIVE, Cia402State.SWITCH_ON_DISABLED},  # option code 2
            FAULT: {Cia402State.FAULT},
        }[expected]
        assert reported in allowed, reported
