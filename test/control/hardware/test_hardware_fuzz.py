"""Property test (hypothesis) of the hardware component on the MuJoCo plant (issue 11).

Random command streams (jogs at any allowed speed, steps to anywhere including past the end
stops, silences), drive-state changes behind the component's back (a drive disabled, quick-stopped,
faulted or restarted), malformed commands and control periods, stops acknowledged at once and
again every period (issue 19: during the ramps) and activation after them, and, at the end, homing
with the host lost: from random start poses the true position of every joint (the MuJoCo plant's,
a model the controller does not contain) never passes a hard limit, no drive is left enabled after
a stop, an acknowledgement goes through only with every joint at standstill (the plant's velocity)
and does within a second of a stop, a host lost mid-homing leaves every drive not homing stopped,
and nothing raises out of the component. The drives have their master watchdog
(drive.master_timeout).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hardware_hardening import PlantRig

from quirobot_control.axes.limits import JointLimits
from quirobot_control.drives.interface import DriveState
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.hardware.hardware_info import hardware_info_from_urdf
from quirobot_control.hardware.homing import HomingError
from quirobot_control.hardware.lifecycle import CallbackReturn, LifecycleState
from quirobot_control.models.dynamics import gravity_model
from quirobot_description.parameters import axes_for, load_parameters
from quirobot_description.urdf import robot_description

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

pytestmark = pytest.mark.fuzz

DT = 1e-3
JOINT = st.integers(0, len(DRILL_AXES) - 1)
CYCLES = st.integers(10, 400)
#: A start pose fraction of the soft range: near either end as often as anywhere.
START = st.one_of(st.floats(0.0, 0.05), st.floats(0.95, 1.0), st.floats(0.0, 1.0))

SEGMENT = st.one_of(
    st.tuples(st.just("jog"), JOINT, st.one_of(st.floats(-1.0, 1.0), st.sampled_from([-1.0, 1.0])), CYCLES),
    st.tuples(st.just("step"), JOINT, st.floats(-0.2, 1.2), CYCLES),
    st.tuples(st.just("silence"), st.integers(10, 600)),
    st.tuples(st.just("drive"), JOINT, st.sampled_from(["disable", "quick_stop", "fault", "reboot"]), CYCLES),
    st.tuples(st.just("acknowledge"), CYCLES),
    st.tuples(
        st.just("garbage"),
        st.sampled_from(["string", "nan", "inf", "short", "huge effort", "string time"]),
        CYCLES,
    ),
    st.tuples(st.just("period"), st.sampled_from([0.0, -DT, math.nan, math.inf])),
)


class _World:
    """Built once: parameters, configuration, description, gravity model."""

    def __init__(self) -> None:
        self.params = load_parameters()
        self.control = control_configuration(self.params)
        self.info = hardware_info_from_urdf(robot_description("drill", "real"))
        self.gravity = gravity_model(self.params)
        self.limits = JointLimits.from_parameters(self.params)


_WORLD: _World | None = None


def world() -> _World:
    global _WORLD
    if _WORLD is None:
        _WORLD = _World()
    return _WORLD


class Campaign:
    """One example: the rig, the command being sent, and the invariants checked every cycle."""

    def __init__(self, start: list[float]) -> None:
        w = world()
        self.limits = w.limits
        q0 = w.limits.soft_lower + np.array(start) * (w.limits.soft_upper - w.limits.soft_lower)
        self.rig = PlantRig(w.params, w.control, w.info, w.gravity, q0)
        for drive in self.rig.backend.drives.values():  # the drives watch their master
            drive.control.settings = dataclasses.replace(
                drive.control.settings, master_timeout=w.params.drive.master_timeout
            )
        self.master_timeout = w.params.drive.master_timeout
        self.command = q0.copy()
        self.velocity = np.zeros(6)
        self.worst = 0.0  # largest excursion past a hard limit seen, m or rad

    def cycle(self, send: bool = True, period: float = DT) -> None:
        rig, hw = self.rig, self.rig.hardware
        rig.backend.before_read()
        hw.read(rig.t, period)
        if send:
            hw.set_commands(rig.t, self.command, self.velocity)
        hw.write(rig.t, period)
        rig.backend.after_write()
        rig.t += DT
        self.check()

    def check(self) -> None:
        self.check_limits()
        self.check_states()

    def check_limits(self) -> None:
        q = self.rig.true_position
        past = np.maximum(self.limits.lower - q, q - self.limits.upper)
        self.worst = max(self.worst, float(past.max()))
        assert (past <= 0.0).all(), (
            f"{DRILL_AXES[int(past.argmax())]} {past.max():.4g} past its hard limit; stop: "
            f"{self.rig.hardware.stop_reason}; events: {self.rig.hardware.events[-3:]}"
        )

    def check_states(self) -> None:
        states = self.rig.states()
        if self.rig.hardware.stop_reason is not None:
            enabled = [n for n, s in zip(DRILL_AXES, states, strict=True) if s is DriveState.ENABLED]
            assert not enabled, f"{enabled} enabled after the stop: {self.rig.hardware.stop_reason}"
        elif self.rig.hardware.lifecycle is LifecycleState.ACTIVE:  # running: every drive enabled
            off = [
                f"{n} {s.value}"
                for n, s in zip(DRILL_AXES, states, strict=True)
                if s is not DriveState.ENABLED
            ]
            assert not off, f"{off} while the component runs unstopped"

    def run(self, segment: tuple) -> None:
        kind = segment[0]
        hw = self.rig.hardware
        if kind == "jog":
            _, j, fraction, cycles = segment
            speed, sign = abs(fraction) * self.limits.velocity[j], math.copysign(1.0, fraction)
            self.velocity[:] = 0.0
            for _ in range(cycles):  # ramped at the acceleration limit, as a jog pendant does
                self.velocity[j] = sign * min(speed, abs(self.velocity[j]) + self.limits.acceleration[j] * DT)
                self.command[j] += self.velocity[j] * DT
                self.cycle()
        elif kind == "step":
            _, j, fraction, cycles = segment
            self.velocity[:] = 0.0
            self.command[j] = self.limits.lower[j] + fraction * (self.limits.upper[j] - self.limits.lower[j])
            for _ in range(cycles):
                self.cycle()
        elif kind == "silence":
            for _ in range(segment[1]):
                self.cycle(send=False)
        elif kind == "drive":
            _, j, action, cycles = segment
            drive = self.rig.backend.drives[DRILL_AXES[j]]
            if action == "fault":
                drive.inject_fault("fuzz: injected fault")
            elif action == "reboot":
                drive.power_cycle()
            else:
                getattr(drive, action)()
            for _ in range(cycles):
                self.cycle()
        elif kind == "garbage":
            _, what, cycles = segment
            bad = {
                "string": lambda: hw.set_commands(self.rig.t, ["x"] * 6, self.velocity),
                "nan": lambda: hw.set_command(DRILL_AXES[0], "position", math.nan),
                "inf": lambda: hw.set_command(DRILL_AXES[1], "velocity", math.inf),
                "short": lambda: hw.set_commands(self.rig.t, self.command[:5], self.velocity),
                "huge effort": lambda: hw.set_commands(
                    self.rig.t, self.command, self.velocity, effort=np.full(6, 1e12)
                ),
                "string time": lambda: hw.set_commands("now", self.command, self.velocity),
            }[what]
            bad()
            for _ in range(cycles):
                self.cycle(send=what == "huge effort")
        elif kind == "period":
            self.cycle(period=segment[1])
        elif kind == "acknowledge":
            hw.stop("fuzz: operator stop")
            for _ in range(segment[1]):
                self.cycle(send=hw.lifecycle is LifecycleState.ACTIVE)
                if hw.stop_reason is not None:
                    self.acknowledge()

    def acknowledge(self) -> bool:
        """Try acknowledge_stop(); if it goes through, check the robot stood still and activate."""
        hw = self.rig.hardware
        moving = np.abs(self.rig.backend.plant.velocity)
        if hw.acknowledge_stop("fuzz: operator") is not CallbackReturn.SUCCESS:
            assert "stop still in progress" in hw.refused or "reset of" in hw.refused, hw.refused
            return False
        # A drive's stop ends at standstill: brake holding, inverter off.
        assert (moving < 5e-3).all(), (
            f"acknowledged while moving: {dict(zip(DRILL_AXES, moving, strict=True))}"
        )
        if hw.on_activate() is CallbackReturn.SUCCESS:
            self.command = np.array([hw.state(n, "position") for n in DRILL_AXES])
            self.velocity[:] = 0.0
        return True

    def home_and_lose_the_host(self, axis: int, homing_cycles: int) -> None:
        """Stop, acknowledge once every stop is complete (within a second), re-home `axis` for
        `homing_cycles` periods, then the host is gone: the plant and the drives go on alone."""
        rig, hw = self.rig, self.rig.hardware
        if hw.lifecycle is LifecycleState.ACTIVE:
            hw.stop("fuzz: before homing")
        for _ in range(1000):
            if hw.stop_reason is None or self.acknowledge():
                break
            self.cycle(send=False)
        assert hw.stop_reason is None, f"no acknowledgement within 1 s of the stop: {hw.refused}"
        if hw.lifecycle is LifecycleState.ACTIVE:
            hw.on_deactivate()
        homing = DRILL_AXES[axis]
        try:
            for _ in range(homing_cycles):
                rig.backend.before_read()
                hw.home(rig.t, rehome=(homing,))
                rig.backend.after_write()
                rig.t += DT
                self.check_limits()
        except HomingError:
            return  # the sequence failed and stopped every drive (e.g. a drive still stopping)
        for _ in range(round(3 * self.master_timeout / DT) + 100):  # the host is gone
            rig.backend.before_read()
            rig.backend.after_write()
            rig.t += DT
            self.check_limits()
        homing_now = hw.homing.axis if hw.homing is not None else None
        for name, drive in rig.backend.drives.items():
            if name != homing_now:
                assert not drive.control.power, f"{name} still powered after the host was lost"


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    start=st.lists(START, min_size=6, max_size=6),
    segments=st.lists(SEGMENT, min_size=1, max_size=5),
    homing=st.one_of(st.none(), st.tuples(JOINT, st.integers(1, 300))),
)
def test_no_command_stream_drive_change_or_garbage_breaks_a_limit_or_escapes(start, segments, homing):
    campaign = Campaign(start)
    for segment in segments:
        campaign.run(segment)
    for _ in range(150):  # whatever happened last coasts out (brakes, quick stop)
        campaign.cycle(send=False)
    if homing is not None:
        campaign.home_and_lose_the_host(*homing)
