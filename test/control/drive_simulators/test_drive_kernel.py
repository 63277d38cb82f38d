"""The step of all drives compiled (drive_simulators.drive_array.advance_drives, the C extension
_drive_kernel) against its Python law (advance_drives_in_python: simulated_drive.advance_drive for
each drive), bit for bit, on every path the law has.

Two sets of the six drives, built alike, get the same commands and joint states for 1200 control
periods (a sync instant then four physics steps each); one set steps in C, the other in Python.
After every step every number of every drive, its controller, its current loop and its PID must
be the same to the bit (a zero's sign included). The script goes through what the C leaves to
the Python and what it runs itself: CSP and CST, a position loop sampling, a quick stop ramping
to its brake and switching off, a halt and its resume, a master lost (the watchdog's self-stop),
an overspeed fault and its reset, a power cycle, an incremental drive homing against its switch,
an encoder reading a zero from below (Python's round gives +0.0), a non-finite joint state
refused (the same error, nothing else changed).

That the Python law is the per-object code it replaced: test/control/simulation/test_drive_array.py.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from compiled_kernel import require_compiled_kernels

from quirobot_control.drive_simulators import drive_array
from quirobot_control.drive_simulators.drive_array import (
    DriveArray,
    advance_drives_in_python,
    brakes_holding_in_python,
)
from quirobot_control.drive_simulators.simulated_drive import drive_for_joint
from quirobot_control.drives.interface import DriveMode, DriveState
from quirobot_control.hardware.control_config import control_configuration
from quirobot_description.parameters import drive_axes

PERIODS = 1200
SUBSTEPS = 4
HOMING_AXIS = "gantry_x"  # incremental: homes against its switch
CST_AXES = ("gantry_y", "wrist_yaw")  # the host's current; the others CSP


def _drives(parameters, control):
    drives = []
    for axis in drive_axes():
        drive = drive_for_joint(parameters, axis, master_watchdog=True, absolute_encoder=axis != HOMING_AXIS)
        drive.configure_position_loop(control.joint(axis).gains, control.dt)
        drive.set_mode(DriveMode.CST if axis in CST_AXES else DriveMode.CSP)
        drives.append(drive)
    return DriveArray(drives)


def _bits(value):
    if isinstance(value, float):
        return struct.pack("<d", value)
    if isinstance(value, tuple):
        return tuple(_bits(v) for v in value)
    return value


def _state(drives: DriveArray) -> list[dict]:
    """Every attribute of each drive, its controller, current loop and PID (floats as bits)."""
    state = []
    for drive in drives:
        parts = {"drive": drive, "control": drive.control, "loop": drive.loop, "pid": drive.control.pid}
        state.append(
            {
                f"{label}.{name}": _bits(getattr(part, name))
                for label, part in parts.items()
                if part is not None
                for name in getattr(type(part), "__slots__", ()) or vars(part)
                if name
                not in ("control", "loop", "pid", "settings", "encoder", "motor", "transmission", "drive")
            }
        )
    return state


def _command(drives: DriveArray, period: int, dt: float) -> None:
    """The host's commands of one period (the same for both sets): a script over the paths."""
    t = period * dt
    for j, drive in enumerate(drives):
        name = drive.name
        if name == HOMING_AXIS:
            if period == 10:
                drive.set_mode(DriveMode.HOMING)
                drive.enable()
            if period >= 10 and drive.mode is DriveMode.HOMING and not drive.control.homed:
                drive.start_homing()  # held until homed (again after that would start a new run)
            continue
        if period == 5:
            drive.enable()
        if name == "gantry_z" and period == 300:
            drive.quick_stop()  # ramp, brake, off
        if name == "gantry_z" and period == 700:
            drive.reset_fault()
            drive.enable()
        if name == "wrist_pitch" and period == 200:
            drive.halt()
        if name == "wrist_pitch" and period == 260:
            drive.resume()
        if name == "drill_feed" and 400 <= period < 420:
            continue  # the master goes silent: the drive's watchdog stops it
        if name == "drill_feed" and period == 800:
            drive.reset_fault()
            drive.enable()
        if name == "wrist_yaw" and period == 900:
            drive.power_cycle()
            drive.set_mode(DriveMode.CST)
            drive.enable()
        if drive.state is not DriveState.ENABLED:
            continue
        if drive.mode is DriveMode.CST:
            drive.command_current(0.4 * math.sin(7.0 * t + j))
        elif drive.mode is DriveMode.CSP:
            drive.command_position(0.01 * math.sin(3.0 * t + j), 0.03 * math.cos(3.0 * t + j), 0.1)


def _joints(drives: DriveArray, q: np.ndarray, period: int, substep: int, dt: float, overspeed: bool):
    """Joint positions and velocities (6,) the drives see: a CSP joint near its target (its PID in
    its linear range, integrating), a CST one on a motion of its own, each standing still once its
    drive stops or halts (so a stop reaches standstill); the homing axis follows its drive's
    reference (it crosses its switch); one motor far past its rating."""
    t = period * dt + substep * dt / SUBSTEPS
    qd = np.zeros(len(drives))
    for j, drive in enumerate(drives):
        if drive.state is not DriveState.ENABLED or drive.control.halted:
            continue  # stands still
        if drive.mode is DriveMode.CSP:  # follows its target within some 20 um: the PID unsaturated
            q[j] = 0.01 * math.sin(3.0 * t + j) + 2e-5 * math.sin(40.0 * t + j)
            qd[j] = 0.03 * math.cos(3.0 * t + j)
        else:
            qd[j] = 0.04 * math.cos(2.0 * t + j)
            q[j] += qd[j] * (dt / SUBSTEPS if substep else 0.0)
    homing = [drive.name for drive in drives].index(HOMING_AXIS)
    reference, velocity = drives[homing].control.reference
    q[homing], qd[homing] = 0.01 + (reference - drives[homing].control.position_offset), velocity
    if overspeed:
        qd[1] = 1e3  # gantry_y's motor: far past its rating
    if period == 50 and substep == 1:
        q[3] = -1e-12  # wrist_yaw within half a count below zero: its encoder reads 0.0, not -0.0
    return q.copy(), qd


def test_the_compiled_step_of_all_drives_is_the_python_law_bit_for_bit(parameters, monkeypatch):
    require_compiled_kernels()
    control = control_configuration(parameters)
    compiled, interpreted = _drives(parameters, control), _drives(parameters, control)
    efforts = {id(compiled): np.zeros(6), id(interpreted): np.zeros(6)}
    dt, h = control.dt, control.dt / SUBSTEPS
    seen = set()
    joints = np.full(6, 0.1)
    for period in range(PERIODS):
        for drives in (compiled, interpreted):
            _command(drives, period, dt)
        for substep in range(SUBSTEPS + 1):
            step = 0.0 if substep == 0 else h  # the sync instant, then the physics steps
            q, qd = _joints(
                interpreted, joints, period, substep, dt, overspeed=period == 500 and substep == 2
            )
            with monkeypatch.context() as patched:
                patched.setattr(drive_array, "advance_drives", advance_drives_in_python)
                interpreted.advance(step, q, qd, efforts[id(interpreted)])
            compiled.advance(step, q, qd, efforts[id(compiled)])
            assert _bits(tuple(efforts[id(compiled)].tolist())) == _bits(
                tuple(efforts[id(interpreted)].tolist())
            )
            assert drive_array.brakes_holding(compiled.drives) == brakes_holding_in_python(interpreted.drives)
            seen.add(("brakes", drive_array.brakes_holding(compiled.drives)))
            ours, theirs = _state(compiled), _state(interpreted)
            for drive, a, b in zip(compiled, ours, theirs, strict=True):
                differing = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
                assert not differing, f"period {period}, step {substep}: {drive.name}: {differing}"
        if period == 500:  # the overspeed takes gantry_y to FAULT; the host resets it
            assert compiled[1].state is DriveState.FAULT and "overspeed" in compiled[1].feedback().fault
        if period == 600:
            for drives in (compiled, interpreted):
                drives[1].reset_fault()
                drives[1].enable()
        for drive in compiled:
            feedback = drive.feedback()
            seen.add((drive.name, feedback.state, feedback.stopping, feedback.halted, feedback.homed))
    brakes = {holding for kind, holding in (entry[:2] for entry in seen if entry[0] == "brakes")}
    assert any(any(h) for h in brakes) and (False,) * 6 in brakes  # brakes holding and released
    seen = {entry for entry in seen if entry[0] != "brakes"}
    names = {name for name, *_ in seen}
    assert names == set(drive_axes())
    assert ("gantry_z", DriveState.QUICK_STOP, True, False, True) in seen  # ramping
    assert ("gantry_z", DriveState.QUICK_STOP, False, False, True) in seen  # braked and off
    assert ("wrist_pitch", DriveState.ENABLED, False, True, True) in seen  # halted
    assert any(n == "drill_feed" and s is DriveState.QUICK_STOP for n, s, *_ in seen)  # master lost
    assert compiled[0].feedback().homed and (HOMING_AXIS, DriveState.ENABLED, False, False, False) in seen


def test_a_non_finite_joint_state_is_refused_alike_and_changes_nothing_after_it(parameters):
    require_compiled_kernels()
    control = control_configuration(parameters)
    drives = _drives(parameters, control)
    for drive in drives:
        drive.enable()
    drives.advance(0.0, np.zeros(6), np.zeros(6), np.zeros(6))
    before = _state(drives)
    velocities = np.zeros(6)
    velocities[0] = math.nan
    with pytest.raises(ValueError, match="drive gantry_x: joint velocity must be a finite number, got nan"):
        drives.advance(control.dt, np.zeros(6), velocities, np.zeros(6))
    assert _state(drives) == before  # the first drive refused before anything changed


def test_the_kernel_names_a_buffer_of_the_wrong_size(parameters):
    require_compiled_kernels()
    control = control_configuration(parameters)
    drives = _drives(parameters, control)
    with pytest.raises(TypeError, match="efforts must be 6 contiguous float64 values"):
        drives.advance(0.0, np.zeros(6), np.zeros(6), np.zeros(5))


def test_the_compiled_brakes_are_the_property_at_the_engage_time_and_for_other_classes(parameters):
    """brakes_holding at the brake's engage time to the last bit (not yet holding one unit in the
    last place before it, holding from it on), and through the property for a drive whose
    controller is of another class."""
    require_compiled_kernels()
    drives = _drives(parameters, control_configuration(parameters)).drives
    for drive in drives:
        drive.control.brake = True
        engage = drive.control.settings.brake_engage_time
        for brake_time, holding in ((math.nextafter(engage, -math.inf), False), (engage, True)):
            drive.control.brake_time = brake_time
            assert drive.control.brake_holding is holding
            assert drive_array.brakes_holding((drive,)) == brakes_holding_in_python((drive,)) == (holding,)
        drive.control.brake = False
        assert drive_array.brakes_holding((drive,)) == (False,)

    class AlwaysHolding(type(drives[0].control)):
        __slots__ = ()
        brake_holding = True

    drives[2].control.__class__ = AlwaysHolding
    assert drive_array.brakes_holding(drives) == (False, False, True, False, False, False)
