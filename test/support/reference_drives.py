"""The simulated drives as they were stepped before drive_simulators.drive_array: one object at a
time, each advance() calling its encoder, its controller and its current loop (commit d30a129).

Kept only as the reference that test_drive_array compares the array step with, bit for bit.
`use_reference_drives(monkeypatch)` puts this code in place of the current one for one run.
"""

from __future__ import annotations

import math

import numpy as np

from quirobot_control.drive_simulators.simulated_drive import SimulatedDrive
from quirobot_control.drives.interface import DriveState
from quirobot_control.simulation.plant import MujocoPlant
from quirobot_control.simulation.realistic_plant import WRIST, RealisticPlant


def _integrate(self: SimulatedDrive, dt: float, speed: float) -> None:
    R, L, K_V, limit, period, full_decay = self._current_loop_constants[:6]
    tolerance = 1e-9 * period
    update, reference = self.loop.update, self._reference
    current, voltage, until_sample = self._current, self._voltage, self._until_sample
    remaining = dt
    while remaining > tolerance:
        if until_sample <= tolerance:
            voltage = update(reference, current, speed)
            until_sample = period
        step = remaining if remaining < until_sample else until_sample
        decay = full_decay if step == period else math.exp(-step * R / L)
        steady = (voltage - K_V * speed) / R
        current = steady + (current - steady) * decay
        current = limit if current > limit else -limit if current < -limit else current
        remaining -= step
        until_sample -= step
    self._current, self._voltage, self._until_sample = current, voltage, until_sample


def _sense(self: SimulatedDrive, dt: float, joint_position: float) -> None:
    position = self.encoder.quantize(joint_position)
    if self._raw_origin is None:
        self._raw_origin = position
    if self._velocity_anchor is None:
        self._velocity_anchor = position
    else:
        self._velocity_elapsed += self._previous_dt
        if self._velocity_elapsed >= self._velocity_period * (1.0 - 1e-9):
            self._velocity = (position - self._velocity_anchor) / self._velocity_elapsed
            self._velocity_anchor = position
            self._velocity_elapsed = 0.0
    self._position = position
    self._previous_dt = dt


def reference_advance(self: SimulatedDrive, dt: float, joint_position: float, joint_velocity: float) -> float:
    """SimulatedDrive.advance as it was."""
    if not (math.isfinite(dt) and math.isfinite(joint_position) and math.isfinite(joint_velocity)):
        raise ValueError(f"drive {self.name}: non-finite input")
    if dt < 0.0:
        raise ValueError(f"drive {self.name}: time step must be >= 0 s, got {dt!r}")
    speed = self.transmission.ratio * joint_velocity
    if abs(speed) > self.motor.max_speed and self._state is not DriveState.FAULT:
        self.inject_fault(
            f"overspeed: motor at {abs(speed):.1f} rad/s exceeds its rating {self.motor.max_speed:.1f} rad/s"
        )
    self._joint_position = joint_position
    _sense(self, dt, joint_position)
    output = self.control.step(dt, self._raw_position, self._velocity, self.home_switch)
    if self._state is DriveState.ENABLED and self.control.stopping is not None and not self.control.halted:
        self._state = self._next_state("quick_stop")
        self._fault = self.control.fault
    if output.power:
        self._reference = output.current
        _integrate(self, dt, speed)
    elif self._current != 0.0 or self._reference != 0.0:
        self._switch_off()
    return self._effort()


def _ideal_follow_brakes(self: MujocoPlant, drives) -> None:
    engaged = tuple(drive.brake_engaged for drive in drives)
    if engaged != self._brakes:
        holding = [d.brake_holding_effort if e else 0.0 for d, e in zip(drives, engaged, strict=True)]
        self.set_brakes(np.array(holding))
        self._brakes = engaged


def _ideal_sense(self: MujocoPlant, drives) -> None:
    position, velocity = self.data.qpos, self.data.qvel
    for j, drive in enumerate(drives):
        drive.advance(0.0, position[j], velocity[j])


def _ideal_step_period(self: MujocoPlant, drives, substeps: int, tip_force=None) -> np.ndarray:
    h = self.model.opt.timestep
    efforts = self._efforts
    for _ in range(substeps):
        position, velocity = self.data.qpos, self.data.qvel
        for j, drive in enumerate(drives):
            efforts[j] = drive.advance(h, position[j], velocity[j])
        _ideal_follow_brakes(self, drives)
        force = None
        if tip_force is not None:
            self.forward_kinematics()
            force = tip_force(h)
        self.step(efforts, force)
    return efforts


def _realistic_encoder_positions(self: RealisticPlant) -> np.ndarray:
    q = self.data.qpos.copy()
    q[list(WRIST)] = self.motor_angle[list(WRIST)]
    return q


def _realistic_sense(self: RealisticPlant, drives=()) -> None:
    q = _realistic_encoder_positions(self)
    speed = self.data.qvel.copy()
    speed[list(WRIST)] = self.motor_speed[list(WRIST)]
    for j, drive in enumerate(self.drives):
        drive.inner.advance(0.0, q[j], speed[j])
        drive.load_position = self.data.qpos[j]
        drive.latch()


def _realistic_follow_brakes(self: RealisticPlant) -> None:
    holding = np.array(
        [
            d.brake_holding_effort if (d.brake_engaged and j not in WRIST) else 0.0
            for j, d in enumerate(self.drives)
        ]
    )
    self.rigid.set_brakes(holding)


def _realistic_step_period(self: RealisticPlant, drives=(), substeps: int = 1, tip_force=None) -> np.ndarray:
    h = self.model.opt.timestep
    efforts = self._efforts
    applied = np.zeros(6)
    for _ in range(substeps):
        q, qd = self.data.qpos, self.data.qvel
        for j, drive in enumerate(self.drives):
            if j in WRIST:
                efforts[j] = drive.inner.advance(h, self.motor_angle[j], self.motor_speed[j])
            else:
                efforts[j] = drive.inner.advance(h, q[j], qd[j])
        applied[:] = efforts
        self._step_wrists(efforts.tolist(), [drive.brake_engaged for drive in self.drives], applied)
        _realistic_follow_brakes(self)
        for index, j in enumerate((0, 1, 2)):
            self.screw_deflection(index, efforts[j])
        self.rigid.forward_kinematics()
        force = tip_force(h) if tip_force is not None else None
        force = self._cutting(h, force)
        self._step_ram(h, force)
        self.rigid.step(applied, force)
    return efforts


def use_reference_drives(monkeypatch) -> None:
    """Step the drives and both plants with the code above (until monkeypatch undoes it)."""
    monkeypatch.setattr(SimulatedDrive, "advance", reference_advance)
    monkeypatch.setattr(MujocoPlant, "sense", _ideal_sense)
    monkeypatch.setattr(MujocoPlant, "step_period", _ideal_step_period)
    monkeypatch.setattr(RealisticPlant, "sense", _realistic_sense)
    monkeypatch.setattr(RealisticPlant, "step_period", _realistic_step_period)
