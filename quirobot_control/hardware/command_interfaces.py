"""The hardware component's interfaces: what ros2_control reads and writes per joint.

States position, velocity, effort; commands position, velocity (what the URDF declares), plus two
optional feed-forward inputs not exported to ros2_control: acceleration (m/s^2 or rad/s^2;
default: the difference of successive velocity commands) and effort (N or N*m, the model-based
feed-forward, e.g. inverse dynamics along the plan), and a known process load
(`set_load_feedforward`). A command that is not a number, or arrays of the wrong shape, stop every
drive while ACTIVE (else the command is refused); a non-finite command or feed-forward stops every
drive at the next write (an infinite effort would otherwise be clamped to the full current). No
position or velocity command is taken before every drive reports homed (NotHomedError).
"""

from __future__ import annotations

import math
from operator import attrgetter

import numpy as np

from quirobot_control.hardware.hardware_info import HardwareError
from quirobot_control.hardware.joint_control import (
    CommandError,
    JointControl,
    command_number,
)
from quirobot_control.hardware.lifecycle import (
    LifecycleState,
)

_HOMED = attrgetter("homed")
_FLOAT = frozenset((float,))


class NotHomedError(HardwareError):
    """A motion command before every drive reports homed (refused: nothing moves)."""


class CommandInterfaces:
    """The state and command interfaces of `QuirobotHardware` (hardware.component), which sets
    up the joints, the lifecycle state and the safety layer these methods use."""

    STATE_INTERFACES = ("position", "velocity", "effort")
    COMMAND_INTERFACES = ("position", "velocity")
    FEED_FORWARD_INTERFACES = ("acceleration", "effort")
    _INTERFACES = frozenset(COMMAND_INTERFACES + FEED_FORWARD_INTERFACES)

    def export_state_interfaces(self) -> list[tuple[str, str]]:
        return [(j.name, s) for j in (self.info.joints if self.info else ()) for s in j.state_interfaces]

    def export_command_interfaces(self) -> list[tuple[str, str]]:
        return [(j.name, c) for j in (self.info.joints if self.info else ()) for c in j.command_interfaces]

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self._names

    def state(self, joint: str, interface: str) -> float:
        return self._joint(joint).state[interface]

    def states(self, interface: str) -> list[float]:
        """`state(name, interface)` of every joint, in joint_names order (one list per cycle for
        a joint state message, not a lookup per joint)."""
        return [joint.state[interface] for joint in self.joints]

    def set_command(self, joint: str, interface: str, value: float) -> None:
        """Set one command interface (position, velocity) or feed-forward (acceleration, effort).

        A value that is not a number stops every drive (while ACTIVE) naming the joint, the
        interface and the value; an unknown joint or interface also raises HardwareError."""
        try:
            target = self._joint(joint)
            if interface not in self._INTERFACES:
                raise HardwareError(f"joint {joint}: no command interface {interface!r}")
        except HardwareError as error:
            self._refuse_command(str(error))
            raise
        try:
            number = command_number(value, interface, joint)
        except CommandError as error:
            self._refuse_command(str(error))
            return
        if interface in self.COMMAND_INTERFACES:
            self._refuse_motion_before_homing()
        target.store(interface, number)

    def set_motion_commands(
        self, names: tuple[str, ...] | list[str], position: list[float], velocity: list[float]
    ) -> None:
        """`set_command(name, "position", p)` then `set_command(name, "velocity", v)` for each
        named joint in turn: a JointState command. Done as those calls would do it when every
        value is a float, every joint known and homed (each cycle's case: nothing to refuse),
        through them otherwise (the refusals and errors in the same order)."""
        by_name = self._by_name
        # The tests in C (map and set, no generator expression): every name a joint's, every
        # joint homed, every value's type exactly float.
        if (
            all(map(by_name.__contains__, names))
            and all(map(_HOMED, self.joints))
            and set(map(type, position)) <= _FLOAT
            and set(map(type, velocity)) <= _FLOAT
        ):
            for name, q, v in zip(names, position, velocity, strict=True):
                command = by_name[name].command
                command["position"] = q
                command["velocity"] = v
            return
        for name, q, v in zip(names, position, velocity, strict=True):
            self.set_command(name, "position", q)
            self.set_command(name, "velocity", v)

    def set_commands(
        self,
        time: float,
        position: np.ndarray,
        velocity: np.ndarray,
        acceleration: np.ndarray | None = None,
        effort: np.ndarray | None = None,
    ) -> None:
        """All joints at once (arrays (n,) in joint_names order), stamped fresh at `time` s.

        Malformed input (a value that is not a number, an array of the wrong shape, a time that is
        not a finite number) stops every drive with the reason (while ACTIVE; nothing is raised)."""
        try:
            stamp = command_number(time, "time", "all")
            if not math.isfinite(stamp):
                raise CommandError(f"command time {time!r} is not a finite number")
            columns = {
                label: self._column(values, label)
                for label, values in (
                    ("position", position),
                    ("velocity", velocity),
                    ("acceleration", acceleration),
                    ("effort", effort),
                )
                if values is not None or label in ("position", "velocity")
            }
        except CommandError as error:
            self._refuse_command(str(error))
            return
        self._refuse_motion_before_homing()
        for k, joint in enumerate(self.joints):
            joint.acceleration = joint.effort_ff = None
            for label, values in columns.items():
                joint.store(label, values[k])
        self.command_received(stamp)

    def _refuse_motion_before_homing(self) -> None:
        """NotHomedError naming the joints whose drive does not report homed: no position or
        velocity command is taken before homing (nothing is stored; the drives stay disabled,
        on_activate refuses). While ACTIVE a drive that loses its reference is a stop (read)."""
        for joint in self.joints:  # the per-cycle case first: every joint homed, nothing built
            if not joint.homed:
                break
        else:
            return
        unhomed = self.unhomed
        if unhomed:
            reason = f"motion refused: {', '.join(unhomed)} not homed; home() first (while inactive)"
            self.refused = reason
            self.log.record(("not homed",), reason)
            raise NotHomedError(reason)

    def command_received(self, time: float) -> None:
        """Tell the watchdog a fresh command arrived at `time` (s, the clock given to write())."""
        if self.safety is not None:
            self.safety.note_command(time)

    def set_load_feedforward(self, efforts: np.ndarray | None) -> None:
        """A known process load to feed forward from the next cycle on: efforts (n,) N or N*m in
        joint_names order (e.g. the bone's predicted thrust balanced by J^T f, a drive bridge's
        compensation), added to each joint's feed-forward (the effort or M_eff*a) within its
        effort limit; None: none. Not a number stops every drive, as a malformed command does."""
        try:
            n = len(self.joints)
            values = [0.0] * n if efforts is None else self._column(efforts, "load feed-forward")
            bad = [j.name for j, v in zip(self.joints, values, strict=True) if not math.isfinite(v)]
            if bad:
                raise CommandError(f"non-finite load feed-forward for joint {', '.join(bad)}: {list(values)}")
        except CommandError as error:
            self._refuse_command(str(error))
            return
        for joint, value in zip(self.joints, values, strict=True):
            joint.load_ff = float(value)

    def _refuse_command(self, reason: str) -> None:
        if self.lifecycle is LifecycleState.ACTIVE:
            self.stop(reason)
        else:
            self.refused = f"command refused: {reason}"

    def _column(self, values: object, label: str) -> list[float]:
        """values (n,) -> n floats (NaN kept for the safety layer to name); CommandError if the
        shape is not (n,) or an entry is not a number."""
        n = len(self.joints)
        if isinstance(values, np.ndarray) and values.dtype.kind in "fiu" and values.shape == (n,):
            return values.tolist()  # the usual case, cheaply (NaN kept)
        array = np.asarray(values, dtype=object)
        if array.shape != (n,):
            joints = ", ".join(self._names)
            raise CommandError(
                f"{label} command of shape {array.shape}: expected {n} {label} values ({joints})"
                if array.ndim != 1
                else f"{len(array)} {label} values for {n} joints ({joints})"
            )
        return [command_number(v, label, name) for v, name in zip(array, self._names, strict=True)]

    def _joint(self, name: str) -> JointControl:
        joint = self._by_name.get(name)
        if joint is not None:
            return joint
        raise HardwareError(f"no joint {name!r}; joints are {', '.join(self._names)}")
