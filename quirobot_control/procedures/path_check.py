"""A goal's path check: each joint state against the plan at the state's own time (ROS-free).

The DrillHole executor runs it on every state it reads while the plan executes; a joint beyond its
path tolerance (config/control.yaml `path_tolerance`: 1 mm, 0.01 rad, the feed 0.2 mm) ends the
goal as a controller's path abort did (the cancel policy stops, or withdraws the bit from bone).

Why not the trajectory controllers' own path tolerance (config/controllers.yaml leaves it at 0,
unchecked): JTC compares the plan at the controller manager's current time with the newest joint
state its executor threads have taken from the hardware's topic, which under load is several
periods old (max 27 ms measured, bench/sim_state_staleness.py), so it saw speed x age as error and
aborted good motions. Here every state carries its stamp (when it was measured, on the plant's
clock), and is compared with the plan's sample at that stamp: a late state is still compared with
what was planned for its instant, so load changes when a deviation is seen, never its size.

What it sees: the drives' following error plus the period the plant runs behind a command. The
hardware's following-error stop (safety.motion_monitor: command against measured of the same
cycle, every cycle, every drive stopped) stays the fast guard beneath it.

`time_out` (CiA 402's following error time out, 0x6066, beside its window 0x6065): how long, in
the states' own stamps, a joint must stay beyond its tolerance before the goal ends. 0, the
default and the robot's: the first state beyond it. Gazebo's launch sets one because its
controllers do not run on the physics' clock: ros2_control (since ros2_control#2046) hands them
the controller manager node's ROS time, a copy of /clock that reaches the node through the
bridge and freezes while either waits for a CPU, then jumps; each jump moves the trajectory's
reference v * jump at once, and gz_ros2_control's position loop closes the step within a few
physics steps, or longer while the clock catches up over several (simulation.gazebo_drives.
PATH_TIME_OUT says how long, measured). A deviation that outlasts the time-out is no such
step. The exceedances it let pass are counted (`passed`) and the largest is in `worst`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from quirobot_control.planning.trajectory import JointTrajectory

__all__ = ["PathCheck"]


@dataclass
class PathCheck:
    """`tolerance` (n,): m and rad per axis of `names` (the plan's axes); `time_out`: s of the
    states' stamps an exceedance may last (module docstring); `worst` (n,): the largest deviation
    seen; `passed`: the exceedances that ended within the time-out."""

    tolerance: np.ndarray
    names: tuple[str, ...]
    time_out: float = 0.0
    worst: np.ndarray = field(init=False)
    passed: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.tolerance = np.asarray(self.tolerance, dtype=float)
        if self.tolerance.shape != (len(self.names),) or not np.all(
            np.isfinite(self.tolerance) & (self.tolerance > 0.0)
        ):
            raise ValueError(
                f"path tolerances must be {len(self.names)} finite numbers > 0, got {self.tolerance.tolist()}"
            )
        if not (np.isfinite(self.time_out) and self.time_out >= 0.0):
            raise ValueError(f"the path check's time-out must be a finite number >= 0 s, got {self.time_out}")
        self.worst = np.zeros(len(self.names))
        self._beyond_since: float | None = None  # the stamp (s of the plan) the exceedance began at
        self._worst = self.worst.tolist()  # its floats, for check's plain-float loop
        self._tolerance = self.tolerance.tolist()

    def check(
        self, plan: JointTrajectory, t: float, position: np.ndarray, exempt: frozenset[str] = frozenset()
    ) -> str | None:
        """`position` (6,) measured at `t` s of `plan` against the plan's sample there: a one-line
        reason naming the joint furthest beyond its tolerance, or None. A measured position that is
        not a finite number is beyond every tolerance (issue 33 item 5: NaN compared as within).
        `exempt`: joints not held to the plan now (the feed stopped by a breakthrough: it stays
        behind the plan by design until the retract passes it)."""
        measured = np.asarray(position, dtype=float)
        if measured.shape != self.tolerance.shape:
            raise ValueError(f"path check of {len(self.names)} joints: a position of shape {measured.shape}")
        values = measured.tolist()
        if not all(map(math.isfinite, values)):  # plain floats: numpy's calls cost more (every period)
            j = next(k for k, value in enumerate(values) if not math.isfinite(value))
            return f"path tolerance: joint {self.names[j]} measured {measured[j]} at {t:.3f} s"
        # Six joints in plain floats (every control period: numpy's per-call cost was most of the
        # check); the same operations as the array form, np.argmax's first largest ratio.
        planned = plan.sample(t)[0].tolist()
        tolerance, worst, names = self._tolerance, self._worst, self.names
        j, largest, deviation = 0, -1.0, 0.0
        for k, value in enumerate(values):
            off = 0.0 if exempt and names[k] in exempt else abs(value - planned[k])
            if off > worst[k]:
                worst[k] = off
                self.worst[k] = off
            ratio = off / tolerance[k]
            if ratio > largest:
                j, largest, deviation = k, ratio, off
        if not largest > 1.0:
            if self._beyond_since is not None:
                self._beyond_since = None
                self.passed += 1
            return None
        if self._beyond_since is None:
            self._beyond_since = t
        lasted = t - self._beyond_since
        if lasted < self.time_out:
            return None
        held = ""
        if self.time_out:
            held = f", beyond it for {lasted * 1e3:.0f} ms (time-out {self.time_out * 1e3:.0f} ms)"
        return (
            f"path tolerance: joint {self.names[j]} is {deviation:.4g} from its plan at {t:.3f} s of "
            f"the motion (limit {self.tolerance[j]:.4g}{held})"
        )

    def summary(self) -> str:
        """The largest deviation relative to its tolerance, in words."""
        ratio = self.worst / self.tolerance
        j = int(np.argmax(ratio))
        summary = (
            f"largest path deviation {self.names[j]} {self.worst[j]:.3g} ({ratio[j]:.0%} of its tolerance)"
        )
        if self.passed:
            summary += f"; {self.passed} beyond it for less than the {self.time_out * 1e3:.0f} ms time-out"
        return summary
