"""The drive bridge's start-up handshake: which message is a controller taking over (ROS-free).

joint_state_topic_hardware_interface publishes the command interfaces on every controller-manager
cycle, before any controller has written them (NaN: a command handle without initial_value; 0.0
or the state's initial_value in the older topic_based_ros2_control) and, after a stop, the
stopped controllers' last commands until they are reactivated. Neither is a command. The first
command is the first message whose positions and velocities are all finite and whose positions
are each within the joint's takeover tolerance (config/control.yaml `takeover_tolerance`: 0.05 mm,
0.5 mrad) of the measured position: what a controller writes when it takes over
(joint_trajectory_controller holds the state interfaces, our measured state, on activation:
config/controllers.yaml sets set_last_command_interface_value_as_state_on_activation false).

Measured positions, not the one measured now: the controller read its hold from our joint
states some periods ago, and a drive may have moved since within its own loop (a vertical axis
sags while its loop takes hold at enable, 89 um on the simulated CANopen gantry_z, then comes
back): a hold read mid-sag, compared with the recovered position, would never be taken and the
start-up watchdog would stop every drive. So the command is compared with the span of the
positions measured since the handshake began (construction or enable), widened by the tolerance;
a stale command lies outside it (the stop left the axes short of it before the enable).

Why not the following-error limit (1-2 mm), as before: a stop leaves the axes short of the
controllers' last commands (a vertical axis settles onto its brake, the feed stops past its
command: 0.08-0.32 mm in the ROS tier). Those stale commands passed it at enable; the drives moved
there with the bit in bone, and a goal planned from the pose before that move started off its plan
(a ROS-tier goal aborted on the feed's 0.2 mm path tolerance before its motion began).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["Takeover"]


@dataclass
class Takeover:
    """`tolerance`: m or rad per joint name; `events`: where the notes go (the bridge's)."""

    tolerance: Mapping[str, float]
    events: list[str]
    noted: set[str] = field(default_factory=set)  # joints whose ignored command was noted
    #: per joint, the lowest and highest position measured since the handshake began (m or rad)
    span: dict[str, tuple[float, float]] = field(default_factory=dict)

    def reset(self) -> None:
        """A new handshake (after an enable): the span starts again, ignored commands are noted again."""
        self.noted.clear()
        self.span.clear()

    def observe(self, names: Sequence[str], measured: Callable[[str], float]) -> None:
        """One period's measured positions (`measured(name)`, m or rad) into the span."""
        span = self.span
        for name in names:
            q = measured(name)
            if not math.isfinite(q):
                continue
            low, high = span.get(name, (q, q))
            span[name] = (q if q < low else low, q if q > high else high)

    def takes_over(
        self,
        names: Sequence[str],
        position: Sequence[float],
        velocity: Sequence[float],
        measured: Callable[[str], float],
    ) -> bool:
        """Is this message (`position`, `velocity` of `names`) a controller taking over the drives,
        measured now at `measured(name)`? The first one beyond a joint's tolerance is noted per
        joint; the accepted one is noted with its largest offset from the measured span."""
        if not all(math.isfinite(v) for v in (*position, *velocity)):
            return False
        self.observe(names, measured)
        farthest, offset = "", 0.0
        for name, q in zip(names, position, strict=True):
            low, high = self.span.get(name, (math.nan, math.nan))
            distance, tolerance = max(low - q, q - high, 0.0), self.tolerance[name]
            if not distance <= tolerance:  # NaN: never measured
                if name not in self.noted:
                    self.noted.add(name)
                    measured_here = f"{low:.6g}" if low == high else f"{low:.6g} to {high:.6g}"
                    self.events.append(
                        f"start-up: ignored a command of {name} at {q:.6g}, {distance:.3g} from its measured "
                        f"{measured_here}, beyond its takeover tolerance {tolerance:.3g} (a controller "
                        "taking over commands the measured position)"
                    )
                return False
            if distance > offset:
                farthest, offset = name, distance
        self.events.append(
            "start-up: first controller command accepted, command watchdog armed"
            + (f" ({farthest} {offset:.3g} from its measured positions)" if farthest else "")
        )
        return True
