"""Property test (hypothesis) of the hardware component on the MuJoCo plant (issue 11).

Random command streams (jogs at any allowed speed, steps to anywhere including past the end
stops, silences), drive-state changes behind the component's back (a drive disabled, quick-stopped
or faulted), malformed commands and control periods, from random start poses: the true position
of every joint (the MuJoCo plant's, a model the controller does not contain) never passes a hard
limit, no drive is left enabled after a stop, and nothing raises out of the component.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hardware_hardening import PlantRig

from quirobot_control.axes.limits import JointLimits
from quirobot_control.drives.interface import DriveState
from quirobot_control.loop.control_config import control_configuration
from quirobot_control.loop.hardware import hardware_info_from_urdf
from quirobot_control.models.dynamics import gravity_model
from quirobot_description.parameters import AXES, load_parameters
from quirobot_description.urdf import robot_description

pytestmark = pytest.mark.fuzz

DT = 1e-3
JOINT = st.integers(0, len(AXES) - 1)
CYCLES = st.integers(10, 400)
#: A start pose fraction of the soft range: near either end as often as anywhere.
START = st.one_of(st.floats(0.0, 0.05), st.floats(0.95, 1.0), st.floats(0.0, 1.0))

SEGMENT = st.one_of(
    st.tuples(st.just("jog"), JOINT, st.one_of(st.floats(-1.0, 1.0), st.sampled_from([-1.0, 1.0])), CYCLES),
    st.tuples(st.just("step"), JOINT, st.floats(-0.2, 1.2), CYCLES),
    st.tuples(st.just("silence"), st.integers(10, 600)),
    st.tuples(st.just("drive"), JOINT, st.sampled_from(["disable", "quick_stop", "fault"]), CYCLES),
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
        q = self.rig.true_position
        past = np.maximum(self.limits.lower - q, q - self.limits.upper)
        self.worst = max(self.worst, float(past.max()))
        assert (past <= 0.0).all(), (
            f"{AXES[int(past.argmax())]} {past.max():.4g} past its hard limit; stop: "
            f"{self.rig.hardware.stop_reason}; events: {self.rig.hardware.events[-3:]}"
        )
        states = self.rig.states()
        if self.rig.hardware.stop_reason is not None:
            enabled = [n for n, s in zip(AXES, states, strict=True) if s is DriveState.ENABLED]
            assert not enabled, f"{enabled} enabled after the stop: {self.rig.hardware.stop_reason}"
        else:  # running: every drive is in the state commanded, or the component has stopped
            off = [f"{n} {s.value}" for n, s in zip(AXES, states, strict=True) if s is not DriveState.ENABLED]
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
            drive = self.rig.backend.drives[AXES[j]]
            if action == "fault":
                drive.inject_fault("fuzz: injected fault")
            else:
                getattr(drive, action)()
            for _ in range(cycles):
                self.cycle()
        elif kind == "garbage":
            _, what, cycles = segment
            bad = {
                "string": lambda: hw.set_commands(self.rig.t, ["x"] * 6, self.velocity),
                "nan": lambda: hw.set_command(AXES[0], "position", math.nan),
                "inf": lambda: hw.set_command(AXES[1], "velocity", math.inf),
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


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    start=st.lists(START, min_size=6, max_size=6),
    segments=st.lists(SEGMENT, min_size=1, max_size=5),
)
def test_no_command_stream_drive_change_or_garbage_breaks_a_limit_or_escapes(start, segments):
    campaign = Campaign(start)
    for segment in segments:
        campaign.run(segment)
    for _ in range(150):  # whatever happened last coasts out (brakes, quick stop)
        campaign.cycle(send=False)
