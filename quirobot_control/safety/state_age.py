"""How old a stamped input may be: `age_fault`, one rule for every stamp a servo moves on, and
`StateAge`, the watchdog of the measured joint states (issue 31 item 4, issue 33 item 10).

A servo that commands motion from measured joint states must stop when they stop coming or come
stamped long ago: what it checks on them (the scope axis through the portal, the scope docked) is
then unobserved. The same holds for a command: a twist stamped an hour ago is not the operator's.

Rule: an input stamped `stamp` (s, on the receiver's clock) is refused at `now` when it is older
than `limit` (now - stamp > limit), and when it is stamped more than `limit` ahead of the clock (a
sender on another clock: its stamps would never grow old). A clock that steps back must not make
an old state young again: `StateAge` also counts the control periods since the latest state
arrived, and its age is the larger of the clock's and the counted one, as the hardware
component's command watchdog does (safety.motion_monitor).

Where it runs: procedures.scope_servo.ScopeServoSession, the servo mode that scope_servo_node runs
on the robot and `quirobot simulate --task arthroscopy` runs in simulation; the session refuses
to enter the mode on stale states and leaves it (holding) when they go stale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["StateAge", "age_fault"]


def age_fault(what: str, stamp: float, now: float, limit: float) -> str | None:
    """Why an input named `what` stamped `stamp` (s) is refused at `now` (s) with the age limit
    `limit` (s), in one line; None when it is within the limit."""
    if not (math.isfinite(stamp) and math.isfinite(now)):
        return f"{what}: stamp {stamp!r} s on a clock at {now!r} s is not a finite time"
    if now - stamp > limit:
        return f"{what}: stamped {now - stamp:.3f} s ago, older than the {limit:.3f} s limit"
    if stamp - now > limit:
        return (
            f"{what}: stamped {stamp - now:.3f} s ahead of this clock, more than the {limit:.3f} s "
            f"limit (the sender is on another clock)"
        )
    return None


@dataclass
class StateAge:
    """The age of the latest measured state (module docstring): `measured` when one arrives,
    `elapse` once per control period, `fault` for why the servo must not move on it."""

    limit: float  # s, the oldest state a servo may move on
    what: str = "joint states"
    stamp: float | None = None  # s, the latest state's own stamp (None: none yet)
    counted: float = 0.0  # s, control periods counted since it arrived (plus its age then)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.limit) and self.limit > 0.0):
            raise ValueError(f"{self.what}: the age limit must be a positive number of s, got {self.limit!r}")

    def measured(self, stamp: float, now: float) -> None:
        """A state stamped `stamp` (s) arrived at `now` (s)."""
        self.stamp = float(stamp)
        age = float(now) - self.stamp
        self.counted = age if age > 0.0 else 0.0  # NaN or ahead: 0, `fault` names it

    def elapse(self, dt: float) -> None:
        """One control period of dt s has passed."""
        self.counted += dt

    def fault(self, now: float) -> str | None:
        """Why the latest state is too old at `now` (s), in one line; None when it is fresh."""
        if self.stamp is None:
            return f"no {self.what} measured yet"
        fault = age_fault(self.what, self.stamp, now, self.limit)
        if fault is None and self.counted > self.limit:
            fault = (
                f"{self.what}: none for {self.counted:.3f} s of control periods, more than the "
                f"{self.limit:.3f} s limit (the clock says {now - self.stamp:.3f} s: it went back)"
            )
        return fault
