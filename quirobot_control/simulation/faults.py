"""Faults injected into the closed-loop simulation, and what the robot did after them
(`quirobot simulate --inject KIND@SECONDS`, issue 8).

Kinds (`Injection.parse("drive-fault@4.2")`, `"drive-fault:gantry_z@4.2"` for another drive; the
same for power-fault):
- master-loss: the host stops calling hardware.read/write (a killed or stalled process, an
  unplugged bus); the plant keeps advancing the drives, whose own watchdog (drive.master_timeout)
  must stop them;
- drive-fault: one drive (default the feed) has a fault with which it still controls its motor
  (over-temperature, following error: 0x605E = 2): its quick-stop ramp, category 1; the host
  quick-stops the others (category 1) when it reads the fault;
- power-fault: one drive's power stage fails (over-current, DC-link under-voltage, STO) or its
  encoder is lost: category 0 on that drive (a vertical axis falls until its brake holds), then
  the host quick-stops the others;
- estop: the host's stop of every drive (category 1);
- bone-harder: the bone's thrust times BONE_HARDER from then on: the drilling monitor's thrust
  limit must stop the feed (not a feed stalled at its current limit);
- spindle-stall: a jammed bit (a load of twice the spindle's torque limit): the spindle slowing
  below its at-speed band (the interlock, within a cycle) or its stall must stop the feed.

Several injections all apply, each at its time. The run ends FAULT_OBSERVE_TIME after a fault
(sooner: POST_STOP_TIME after a stop); a bone fault (BONE_FAULT_KINDS) acts only when the bit
cuts, so the run goes on to its end or to the stop it causes. An injection whose time the run
never reaches is reported (`not_applied`), never taken for a safe outcome.
`fault_report`: when it was noticed (`detected_after`, s), when the tip came to rest for good
(`stopped_after`, s; the tip slower than STOPPED_SPEED from then on; None: still moving at the
end), how far the tip moved (`tip_travel_after_fault`, m) and how much deeper it went
(`extra_depth`, m, into the bone: the deepest depth after the fault less the depth at the
fault, depths above the bone's surface counted as 0; a bone fault: after the monitor's stop less
the depth at it). `breakthrough_report`: the far cortex' exit
depth, where the monitor detected the breakthrough, and how far past the exit the tip went.
`safety_verdict`: did the robot end safe (at rest, no more than EXTRA_DEPTH_LIMIT deeper, no
more than BREAKTHROUGH_LIMIT past the far cortex, not past the planned depth).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Protocol

import numpy as np

from quirobot_control.drive_simulators.simulated_drive import SimulatedDrive
from quirobot_control.drives.interface import DriveState
from quirobot_control.hardware.component import QuirobotHardware
from quirobot_control.models.spindle import Spindle
from quirobot_control.safety.drilling_monitor import DrillingMonitor
from quirobot_control.safety.stop_codes import StopCode
from quirobot_control.simulation.bone_contact import BoneContact
from quirobot_control.simulation.plant import MujocoPlant
from quirobot_control.simulation.simulation_log import SimulationLog
from quirobot_description.parameters import DrillParameters

FAULT_KINDS = ("master-loss", "drive-fault", "power-fault", "estop", "bone-harder", "spindle-stall")
#: The kinds that name a drive (KIND:JOINT).
DRIVE_FAULT_KINDS = ("drive-fault", "power-fault")
#: The kinds that change the bone or the bit: they act only when the bit cuts, so the run goes on
#: to its end (or POST_STOP_TIME after the stop they cause), not FAULT_OBSERVE_TIME after them.
BONE_FAULT_KINDS = ("bone-harder", "spindle-stall")
#: The harder bone's thrust factor (issue 8: "a 3x harder bone").
BONE_HARDER = 3.0
#: s of simulation after the fault, as simulation_log.POST_STOP_TIME after a stop: the stops (10 ms
#: watchdog, quick-stop ramps of a few ms, 15 ms brakes) and the arm's settling fit within it.
FAULT_OBSERVE_TIME = 0.5
#: m/s: the tip at rest is slower than this (a fifteenth of the 1.5 mm/s feed; the arm's residual
#: vibration after a stop is far below it).
STOPPED_SPEED = 1e-4
#: m: no stop moves the bit deeper than this (issue 8).
EXTRA_DEPTH_LIMIT = 0.05e-3
#: m: the feed stops within this past the far cortex (issue 8).
BREAKTHROUGH_LIMIT = 0.5e-3
#: m: the bit never goes past the planned depth by more than this (the depth-overshoot target).
DEPTH_LIMIT = 0.05e-3


class FaultError(ValueError):
    """A malformed --inject value (named in the message)."""


@dataclass(frozen=True)
class Injection:
    kind: str  # one of FAULT_KINDS
    at: float  # s, simulation time
    joint: str = DrillParameters.feed_joint  # drive-fault, power-fault: the drive that faults

    @classmethod
    def parse(cls, text: str) -> Injection:
        """ "KIND@SECONDS" or "drive-fault:JOINT@SECONDS" (or power-fault:JOINT); SECONDS a plain
        decimal number (no sign, underscores, hex, nan or inf)."""
        match = _SPEC.fullmatch(str(text))
        if match is None or match["kind"] not in FAULT_KINDS:
            raise FaultError(
                f"--inject {text!r}: expected KIND@SECONDS or KIND:JOINT@SECONDS with KIND one of "
                f"{', '.join(FAULT_KINDS)}"
            )
        kind, joint, seconds = match["kind"], match["joint"], match["seconds"]
        at = float(seconds) if _SECONDS.fullmatch(seconds) else math.nan
        if not 0.0 <= at < 1e6:
            raise FaultError(f"--inject {text!r}: the time must be a number of seconds >= 0, got {seconds!r}")
        axes = MujocoPlant.axes  # the simulated robot's drives
        if joint is not None and (kind not in DRIVE_FAULT_KINDS or joint not in axes):
            raise FaultError(
                f"--inject {text!r}: only drive-fault and power-fault name a drive, one of {', '.join(axes)}"
            )
        return cls(kind, at, joint or DrillParameters.feed_joint)


#: KIND[:JOINT]@SECONDS: a joint, if named, is not empty.
_SPEC = re.compile(r"(?P<kind>[^:@]+)(?::(?P<joint>[^:@]+))?@(?P<seconds>[^@]*)")
_SECONDS = re.compile(r"[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?|\.[0-9]+([eE][-+]?[0-9]+)?")


class FaultTarget(Protocol):
    """What an injection acts on and watches: the robot's own path (simulation.executor_run: the
    drive bridge's drives, hardware and hole monitor, the plant's bone contact and spindle, and
    the port that stands for drive_node)."""

    dt: float  # s, the control period
    end_time: float | None  # s: the run ends after this (the observation window), None: the plan's end
    host_running: bool  # False: the host no longer runs its cycle (master loss)
    drives: Mapping[str, SimulatedDrive]
    hardware: QuirobotHardware
    spindle: Spindle | None
    contact: BoneContact | None
    monitor: DrillingMonitor | None


class FaultInjector:
    """Applies an `Injection` to a `FaultTarget` (called at the start of each control cycle) and
    records when the fault happened and when the robot noticed it."""

    def __init__(self, injection: Injection) -> None:
        self.injection = injection
        self.time: float | None = None  # s, when the fault was applied
        self.detected: float | None = None  # s, when the robot first reacted

    def __call__(self, k: int, sim: FaultTarget) -> None:
        t = k * sim.dt
        injection = self.injection
        if self.time is None:
            if t < injection.at - 1e-9:
                return
            self.time = t
            if injection.kind not in BONE_FAULT_KINDS:  # a bone fault acts when the bit cuts
                end = t + FAULT_OBSERVE_TIME
                sim.end_time = end if sim.end_time is None else min(sim.end_time, end)
            if injection.kind == "master-loss":
                sim.host_running = False
            elif injection.kind == "drive-fault":
                sim.drives[injection.joint].inject_fault(
                    "injected drive fault (over-temperature): quick-stop ramp", controllable=True
                )
            elif injection.kind == "power-fault":
                sim.drives[injection.joint].inject_fault("injected power-stage fault (over-current)")
            elif injection.kind == "estop":
                sim.hardware.stop("emergency stop (injected)", StopCode.EMERGENCY_STOP)
                self.detected = t  # the host's own stop: nothing to notice
            elif injection.kind == "spindle-stall" and sim.spindle is not None:
                sim.spindle.external_torque = 2.0 * sim.spindle.parameters.max_torque
            elif injection.kind == "bone-harder" and sim.contact is not None:
                sim.contact.thrust.scale = BONE_HARDER
        if self.detected is None and self._noticed(sim):
            self.detected = t

    def _noticed(self, sim: FaultTarget) -> bool:
        """Has the robot reacted (seen at the start of a cycle: at most one period late)?"""
        kind = self.injection.kind
        if kind == "master-loss":  # the drives' own watchdog: a drive leaves ENABLED
            return any(drive.feedback().state is not DriveState.ENABLED for drive in sim.drives.values())
        if kind in ("bone-harder", "spindle-stall"):
            return sim.monitor is not None and sim.monitor.fault is not None
        return sim.hardware.stop_reason is not None


@dataclass(frozen=True)
class FaultReport:
    """What the robot did after one injected fault (module docstring); None where it did not
    happen. `as_dict()`: the JSON `quirobot simulate --inject` prints under "faults"."""

    kind: str  # the injection's kind, KIND:JOINT for a drive fault
    at: float  # s, the injection's simulation time
    not_applied: str | None = None  # why the fault never happened (the run ended first)
    detected_after: float | None = None  # s from the fault to the robot's first reaction
    stopped_after: float | None = None  # s from the fault to the tip at rest for good
    tip_travel_after_fault: float | None = None  # m, the tip's largest distance from its place at the fault
    extra_depth: float | None = None  # m, how much deeper into the bone the bit went

    def as_dict(self) -> dict[str, float | str | None]:
        return asdict(self)


@dataclass(frozen=True)
class BreakthroughReport:
    """The far cortex' exit against where the feed stopped (module docstring). `as_dict()`: the
    JSON `quirobot simulate` prints under "breakthrough"."""

    exit_depth: float  # m below the entry, along the drilling axis
    detected_depth: float | None  # m: the tip's depth when the monitor detected it (None: not detected)
    overshoot: float  # m past the exit the tip went (0: it never left the bone)

    def as_dict(self) -> dict[str, float | None]:
        return asdict(self)


def _depths(log: SimulationLog, entry: np.ndarray, direction: np.ndarray) -> np.ndarray:
    return (log.tip - entry) @ direction


def fault_report(
    injector: FaultInjector, log: SimulationLog, entry: np.ndarray, direction: np.ndarray
) -> FaultReport:
    """The FaultReport of an injected run (s and m; None where it did not happen); `not_applied`
    says why the fault never happened (the run ended before its time), else None."""
    injection = injector.injection
    kind = f"{injection.kind}:{injection.joint}" if injection.kind in DRIVE_FAULT_KINDS else injection.kind
    report = FaultReport(kind, injection.at)
    if injector.time is None:  # the run ended before the fault
        end = float(log.time[-1]) if len(log.time) else 0.0
        return replace(report, not_applied=f"the run ended at {end:.3f} s, before {injection.at} s")
    start = int(np.searchsorted(log.time, injector.time - 1e-9))
    if injector.detected is not None:
        report = replace(report, detected_after=injector.detected - injector.time)
    tip = log.tip[start:]
    speed = np.linalg.norm(np.diff(tip, axis=0), axis=1) / np.diff(log.time[start:])
    moving = np.nonzero(speed >= STOPPED_SPEED)[0]
    if len(speed) and (not len(moving) or moving[-1] < len(speed) - 1):
        rest = 0 if not len(moving) else int(moving[-1]) + 1
        report = replace(report, stopped_after=float(log.time[start + rest] - injector.time))
    report = replace(report, tip_travel_after_fault=float(np.max(np.linalg.norm(tip - tip[0], axis=1))))
    # How much deeper into the bone the stop let the bit go: from the fault, or for a bone fault
    # (drilling on in it is intended until the monitor stops the feed) from that stop; none if the
    # monitor never had to stop it (the hole completed as planned). Depth above the bone's surface
    # (a transfer, the approach) is not counted.
    if injection.kind in BONE_FAULT_KINDS:
        if injector.detected is None:
            return report
        reference = int(np.searchsorted(log.time, injector.detected - 1e-9))
    else:
        reference = start
    depth = np.maximum(_depths(log, entry, direction), 0.0)
    return replace(report, extra_depth=float(max(depth[reference:].max() - depth[reference], 0.0)))


def breakthrough_report(
    log: SimulationLog, entry: np.ndarray, direction: np.ndarray, exit_depth: float
) -> BreakthroughReport:
    """The BreakthroughReport (m): the far cortex' exit below the entry, the tip's depth when the
    monitor detected the breakthrough (None: not detected), and how far past the exit the tip
    went (0 if it never left the bone)."""
    depth = _depths(log, entry, direction)
    event = log.drilling_event
    detected = None
    if event is not None and not event.is_fault:  # a breakthrough, early or not
        detected = float(depth[int(np.searchsorted(log.time, event.time - 1e-9))])
    overshoot = float(max(depth.max() - exit_depth, 0.0))
    return BreakthroughReport(exit_depth=float(exit_depth), detected_depth=detected, overshoot=overshoot)


def safety_verdict(
    log: SimulationLog,
    planned_depth: float,
    entry: np.ndarray,
    direction: np.ndarray,
    faults: list[FaultReport],
    breakthrough: BreakthroughReport | None,
) -> list[str]:
    """Why the robot did not end safe (empty: it did): not at rest after a fault, deeper by more
    than EXTRA_DEPTH_LIMIT after one, past the far cortex by more than BREAKTHROUGH_LIMIT or past
    the planned depth by more than DEPTH_LIMIT. `faults`: the report of each injection."""
    reasons = []
    for fault in faults:
        if fault.not_applied is not None:
            continue
        if fault.stopped_after is None:
            reasons.append(f"{fault.kind}: the tip was still moving at the end of the run")
        if fault.extra_depth is not None and fault.extra_depth > EXTRA_DEPTH_LIMIT:
            reasons.append(
                f"{fault.kind}: the bit went {fault.extra_depth * 1e3:.3f} mm deeper after the fault "
                f"(limit {EXTRA_DEPTH_LIMIT * 1e3:.2f} mm)"
            )
    if breakthrough is not None and breakthrough.overshoot > BREAKTHROUGH_LIMIT:
        reasons.append(
            f"the tip went {breakthrough.overshoot * 1e3:.3f} mm past the far cortex "
            f"(limit {BREAKTHROUGH_LIMIT * 1e3:.1f} mm)"
        )
    deepest = float(_depths(log, entry, direction).max())
    if deepest > planned_depth + DEPTH_LIMIT:
        reasons.append(f"the tip went {(deepest - planned_depth) * 1e3:.3f} mm past the planned depth")
    return reasons
