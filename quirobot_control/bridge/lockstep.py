"""Lock-step of the simulated plant with the controller manager on the simulated clock (ROS-free).

drive_node with `publish_clock` (sim.launch.py) owns the ROS time: it publishes /clock, and
ros2_control_node, on use_sim_time, runs one cycle (read, update, write) per period of that clock
and then sleeps until the clock reaches its cycle's time + one period
(controller_manager/src/ros2_control_node.cpp: `get_clock()->sleep_until(current_time + period)`).
joint_state_topic_hardware_interface's write() publishes the controllers' commands every cycle
(trigger_joint_command_threshold -1). The handshake, one period k at a time:

    drive_node: joint states at t_k, then /clock t_k      (the plant waits)
    controller manager: wakes at t_k, read, update, write -> the command of period k
    drive_node: that command arrives -> the plant runs period k -> t_{k+1}, and so on

With `substeps` > 1 the controller manager runs slower than the plant (bringup.launch.py's
controller_rate, e.g. sim.launch.py's 100 Hz controllers on the drives' 1 kHz position loop, as
gz_ros2_control can run its controller manager slower than the physics): each command is the
drives' setpoint for `substeps` plant periods, carried on within them to second order from its
position, velocity and the acceleration since the command before (the drive bridge's hold, as a
CiA 402 drive interpolates between the master's cyclic setpoints), and /clock goes out once per
controller period, t_k = epoch + k * substeps * plant period. Every joint state and /clock
sample is a DDS round trip and a Python callback in three processes: fewer of them let the same
machine run the same plant faster; docs/drive_from_another_node.md gives the sim/wall, the CPU
and the hole measured at 1 kHz, 250 Hz and 100 Hz.

So the plant runs each period on the command computed for it and nothing else decides when: a
slow machine slows the whole loop and never changes what it computes (as gz_ros2_control steps
the controller manager inside the physics step). Times are integer nanoseconds: t_k = epoch +
k * period exactly, so that t_{k+1} always reaches the controller manager's `t_k + period`
(floats of ~1.7e9 s carry 240 ns of rounding: a sample 1 ns short of it never wakes the loop).

Before the first command the controller manager is not writing yet (no robot description, no
hardware component): its loop still waits for the clock, first to start (`wait_until_started`),
then for one period (`sleep_for`), then a period per cycle. So until the first command arrives the
plant runs one controller period every `republish_after` s of wall time (start-up: the drives hold where
they are), which lets the controller manager come up; from the first command on, lock-step.

Wall time enters only as guards, never into the simulation once commands flow:
- `republish_after` (s) without a command: /clock t_k again (best effort, rclcpp's ClockQoS, a
  sample can be lost; one the controller manager already had changes nothing: its sleep wakes on
  a forward jump only).
- `dead_after` (s) without a command once the loop ran: the controller manager is taken as dead.
  The drives are stopped (the hardware's stop, with the reason) and the plant runs on the wall
  clock (`free_run`) so that the stop plays out and the states keep coming; a command that arrives
  after that puts the plant back in lock-step (the stop stays latched until acknowledged).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["GuardAction", "Lockstep", "substeps_per_command"]


def substeps_per_command(period_ns: int, controller_rate: int) -> int:
    """Plant periods per controller period: the plant's control period `period_ns` (ns) into the
    controller manager's `controller_rate` (Hz, its update_rate; 0: the plant's own rate). A
    rate that is not a whole fraction of the plant's is refused (ValueError naming both): the
    controller manager would wake between the plant's samples."""
    if controller_rate == 0:
        return 1
    plant_rate = 1e9 / period_ns
    substeps = plant_rate / controller_rate if controller_rate > 0 else 0.0
    if controller_rate < 0 or substeps < 1.0 or abs(substeps - round(substeps)) > 1e-9:
        raise ValueError(
            f"controller_rate {controller_rate} Hz must divide the drives' control rate {plant_rate:g} Hz "
            "into a whole number of periods"
        )
    return round(substeps)


@dataclass(frozen=True)
class GuardAction:
    """What the wall-clock guard asks of drive_node on one of its ticks."""

    republish: bool = False  # publish /clock t_k (and the joint states) again
    stop_reason: str | None = None  # stop every drive with this reason (once, when found dead)
    periods: int = 0  # control periods to run now (start-up, or a dead controller manager's free run)


@dataclass
class Lockstep:
    """The plant's clock in lock-step with the controller manager (module docstring).

    `period_ns`: the plant's control period (ns, = 1e9 / the drives' control rate);
    `epoch_ns`: the clock at period 0 (ns, whole seconds: stamps that look like times);
    `republish_after`, `dead_after`: the wall-clock guards (s);
    `substeps`: plant periods per controller period (the drives' control rate over the
    controller manager's update_rate, an integer)."""

    period_ns: int
    epoch_ns: int
    republish_after: float = 0.05
    dead_after: float = 10.0
    substeps: int = 1
    periods: int = 0  # control periods the plant has run
    commands: int = 0  # commands received (one per period in lock-step)
    republished: int = 0  # /clock samples sent again by the guard
    dead: bool = False  # the guard found the controller manager silent for dead_after
    _last_activity: float | None = field(default=None, repr=False)  # wall s: last command or republish
    _last_command: float | None = field(default=None, repr=False)  # wall s
    _free_run_from: tuple[float, int] | None = field(default=None, repr=False)  # (wall s, periods)

    def __post_init__(self) -> None:
        if self.period_ns <= 0:
            raise ValueError(f"lock-step period must be positive, got {self.period_ns} ns")
        if not (isinstance(self.substeps, int) and self.substeps >= 1):
            raise ValueError(f"lock-step substeps must be whole plant periods >= 1, got {self.substeps}")
        if not 0.0 < self.republish_after < self.dead_after:
            raise ValueError(
                f"lock-step guards need 0 < republish_after < dead_after, got {self.republish_after} s "
                f"and {self.dead_after} s"
            )

    @property
    def stamp_ns(self) -> int:
        """The clock now, t_k (ns since the epoch of ROS time)."""
        return self.epoch_ns + self.periods * self.period_ns

    @property
    def seconds(self) -> float:
        """The plant's time (s since period 0): the drive bridge's clock."""
        return self.periods * self.period_ns * 1e-9

    def on_command(self, wall: float) -> int:
        """A command arrived at `wall` (s, monotonic): the periods the plant runs now (`substeps`:
        this controller period's command is in). Ends a free run (the controller manager is back)."""
        self.commands += 1
        self._last_command = self._last_activity = wall
        self._free_run_from = None
        self.dead = False
        return self.substeps

    def ran(self, periods: int) -> None:
        """The plant ran `periods` more periods."""
        self.periods += periods

    def on_guard(self, wall: float) -> GuardAction:
        """The wall-clock guard's tick at `wall` (s, monotonic)."""
        if self._last_activity is None:
            self._last_activity = wall
        if self._free_run_from is not None:
            start_wall, start_periods = self._free_run_from
            due = int((wall - start_wall) / (self.period_ns * 1e-9)) - (self.periods - start_periods)
            return GuardAction(periods=max(min(due, 100), 0))
        if self._last_command is not None and wall - self._last_command >= self.dead_after:
            self.dead = True
            self._free_run_from = (wall, self.periods)
            return GuardAction(
                stop_reason=(
                    f"no command from the controller manager for {wall - self._last_command:.1f} s of wall "
                    f"time (lock-step on the simulated clock, limit {self.dead_after:g} s): taken as dead"
                )
            )
        if wall - self._last_activity >= self.republish_after:
            self._last_activity = wall
            if self._last_command is None:  # start-up: a controller period, for its clock to move
                return GuardAction(periods=self.substeps)
            self.republished += 1
            return GuardAction(republish=True)
        return GuardAction()
