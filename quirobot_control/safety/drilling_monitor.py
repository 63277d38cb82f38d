"""`DrillingMonitor`: process safety of the drill feed, run by the host every control cycle.

ROS-free; reads what the feed's drive reports (its effort, K_T * i * ratio * efficiency, i.e. its
current) and the spindle's state, and says when the feed must stop (one latched `DrillingEvent`):

- thrust limit: the feed's thrust estimate F = effort - m_eff * a_cmd - b * v (the drive's effort
  less the feed's own inertia and viscous friction), low-pass filtered (first order, time
  constant tools.drill.thrust_filter_time), above tools.drill.thrust_limit stops the feed. The
  limit lies below the URDF effort limit (tools.drill.feed_effort, where the hardware component
  clamps the feed's current), so it trips while the feed still has authority to decelerate, and
  a harder bone ends in this stop instead of a stalled feed pushing at its current limit;
- far-cortex breakthrough: the thrust drops sharply when the drill's point leaves the far
  cortex. Detection follows the force-drop criterion of Ong & Bouazza-Marouf (1999, "The
  detection of drill bit break-through for the enhancement of safety in mechatronic assisted
  orthopaedic drilling", Mechatronics 9(6):565-588: a drop of the filtered force between samples
  against thresholds) in its simplest form, on the thrust estimate averaged over one spindle
  revolution (2 pi / tools.drill.spindle_speed: the cutting force's own period, so the
  once-per-revolution and regenerative chatter components cancel, where a first-order filter
  lets a chattering cortex' thrust wander by a third). Armed from `arm_depth` (the imaged far
  cortex less tools.drill.breakthrough_arm_margin, so the near cortex' exit into the canal is not
  taken for it, as DRIBON arms on the expected layer: Louredo, Diaz & Gil 2012, Mechatronics
  22:1060) and only while the feed is commanded at a constant rate (a planned deceleration lowers
  the thrust too, thrust ~ v^n), it tracks the averaged thrust's peak and fires when it has
  fallen by tools.drill.breakthrough_drop of a peak of at least
  tools.drill.breakthrough_min_thrust (cortical bone). The peak is a sustained one: the largest
  level the average held for tools.drill.breakthrough_peak_time (the running minimum over that
  time), so a short thrust bump (a chip jam, a tooth catching) is not a peak whose end looks like
  a drop. A breakthrough is the drilling's success: the feed stops and the task goes on. One
  detected more than tools.drill.breakthrough_exit_tolerance before the imaged far cortex' exit
  (`exit_depth`) is `EARLY_BREAKTHROUGH`: the feed stops and the task retracts as after a
  breakthrough (the thrust fell: pushing on is not safer), but it is not a success (a porous band
  in the cortex, a bone other than imaged: the hole may not pass through the far cortex);
- spindle interlock: the feed may not advance within its stopping distance of the bone (depth >
  -v_max^2 / (2 a_max) of the feed axis) unless the spindle is at speed; a spindle stall stops
  the feed;
- non-finite input: a NaN or infinite effort, depth, velocity or command, or a period that is not
  a positive finite number, is a fault naming the input (`NON_FINITE`), like a non-finite
  position in the hardware component; it never reaches the filters, which would stay NaN and
  disable the thrust limit and the breakthrough detector for good (`NaN > limit` is false).

What the host does with an event (decelerate the feed at its acceleration limit and hold it: a
category 2 stop of the feed, then stop or go on) is the caller's (the drive bridge's hole context).

Without a drilling context (`DrillingMonitorSettings.thrust_limit_only`: the real-drive path,
bridge.drive_bridge, has neither the goal's far cortex nor a spindle model) only the thrust limit
runs: breakthrough detection and the spindle interlock are disarmed, `depth` is the feed joint's
position and the host's stop is the hardware's category 1 stop. Not on the ROS path yet:
breakthrough detection (needs the far-cortex depth of the goal) and the spindle interlock.
"""

from __future__ import annotations

import enum
import math
from collections import deque
from dataclasses import dataclass

from quirobot_description.drilling_parameters import ProcessSafetyParameters, SpindleParameters
from quirobot_description.parameters import DrillParameters


class DrillingStop(enum.Enum):
    THRUST_LIMIT = "thrust limit"
    BREAKTHROUGH = "breakthrough"
    SPINDLE_STALL = "spindle stall"
    SPINDLE_NOT_AT_SPEED = "spindle not at speed"
    EARLY_BREAKTHROUGH = "early breakthrough"
    NON_FINITE = "non-finite input"


#: The events that end the feed as a breakthrough does (the feed stops, holds, then the task
#: retracts): every other one is a fault, the host's stop of every drive.
ENDS_THE_FEED = frozenset({DrillingStop.BREAKTHROUGH, DrillingStop.EARLY_BREAKTHROUGH})


@dataclass(frozen=True)
class DrillingEvent:
    """Why the feed stops: the kind, when (s), at which tip depth (m) and thrust estimate (N)."""

    kind: DrillingStop
    time: float
    depth: float
    thrust: float
    message: str

    @property
    def success(self) -> bool:
        """A breakthrough at the imaged far cortex ends the feed as planned; nothing else does."""
        return self.kind is DrillingStop.BREAKTHROUGH

    @property
    def is_fault(self) -> bool:
        """A fault stops every drive; a breakthrough, early or not, ends the feed only."""
        return self.kind not in ENDS_THE_FEED


@dataclass(frozen=True)
class DrillingMonitorSettings:
    thrust_limit: float  # N
    filter_time: float  # s
    breakthrough_drop: float  # 1
    breakthrough_min_thrust: float  # N
    arm_depth: float | None  # m tip depth from which breakthrough detection is armed; None: off
    # m (< 0): the spindle must be at speed for the feed to advance past it; None: no interlock
    interlock_depth: float | None
    feed_mass: float  # kg, the feed's effective inertia (reflected rotor + bit)
    feed_damping: float  # N*s/m
    average_time: float  # s, the breakthrough detector's moving average (one spindle revolution)
    drilling_context: bool = True  # False: thrust limit only, `depth` is the feed joint's position
    # m, the imaged far cortex' exit below the entry; None: no early-breakthrough check
    exit_depth: float | None = None
    exit_tolerance: float = 0.0  # m, a breakthrough this far before exit_depth is still on time
    peak_time: float = 0.0  # s, how long the average must hold a level for it to count as the peak

    @classmethod
    def thrust_limit_only(
        cls, safety: ProcessSafetyParameters, drill: DrillParameters, feed_mass: float
    ) -> DrillingMonitorSettings:
        """The thrust limit alone (no drilling context: no far cortex, no spindle state), for a
        host that knows only the feed drive (bridge.drive_bridge); feed_mass as in from_parameters."""
        return cls(
            thrust_limit=safety.thrust_limit,
            filter_time=safety.thrust_filter_time,
            breakthrough_drop=safety.breakthrough_drop,
            breakthrough_min_thrust=safety.breakthrough_min_thrust,
            arm_depth=None,
            interlock_depth=None,
            feed_mass=feed_mass,
            feed_damping=drill.feed.damping,
            average_time=safety.thrust_filter_time,
            drilling_context=False,
        )

    @classmethod
    def from_parameters(
        cls,
        safety: ProcessSafetyParameters,
        drill: DrillParameters,
        spindle: SpindleParameters,
        feed_mass: float,
        far_cortex_depth: float | None,
        *,
        exit_depth: float | None = None,
    ) -> DrillingMonitorSettings:
        """far_cortex_depth: where the imaged far cortex begins below the entry (m), None: no far
        cortex to detect; exit_depth: where it ends (m; None: no early-breakthrough check);
        feed_mass: the feed's effective inertia (control configuration)."""
        return cls(
            thrust_limit=safety.thrust_limit,
            filter_time=safety.thrust_filter_time,
            breakthrough_drop=safety.breakthrough_drop,
            breakthrough_min_thrust=safety.breakthrough_min_thrust,
            arm_depth=None
            if far_cortex_depth is None
            else max(far_cortex_depth - safety.breakthrough_arm_margin, 0.0),
            interlock_depth=-(drill.feed.velocity**2) / (2.0 * drill.feed.acceleration),
            feed_mass=feed_mass,
            feed_damping=drill.feed.damping,
            average_time=2.0 * math.pi / spindle.speed,
            exit_depth=None if far_cortex_depth is None else exit_depth,
            exit_tolerance=safety.breakthrough_exit_tolerance,
            peak_time=safety.breakthrough_peak_time,
        )


#: N: the thrust estimate is clipped to +-this before the filters (a million newtons, far beyond any
#: feed: it keeps the filters' sums finite whatever finite effort is reported; the limit still trips).
THRUST_CLIP = 1e6

#: m/s^2: below this the commanded feed acceleration is taken as a constant feed rate.
CRUISING_ACCELERATION = 1e-6


class DrillingMonitor:
    """See the module docstring. `update` once per control cycle. `event`: the first event (what
    ended the feed); `fault`: the first fault, latched (after a breakthrough, while the feed holds
    and retracts, the thrust limit and the spindle are still watched)."""

    def __init__(self, settings: DrillingMonitorSettings) -> None:
        self.settings = settings
        self.thrust = 0.0  # N, the filtered thrust estimate (thrust limit)
        self.average = 0.0  # N, the thrust estimate over the last spindle revolution (breakthrough)
        self.peak = 0.0  # N, the average's peak since the detector armed
        self.event: DrillingEvent | None = None
        self.fault: DrillingEvent | None = None
        self.depth: float | None = None  # m, the depth of the latest update (None: none yet)
        self._window: deque[float] = deque()
        self._window_sum = 0.0
        # The averages of the last peak_time (cycle index, value), increasing: the front is the
        # running minimum, the level held over the whole window.
        self._held: deque[tuple[int, float]] = deque()
        self._held_since: int | None = None  # the cycle the current armed stretch began
        self._cycle = 0
        # (dt, settings, filter gain, samples per revolution) of the last period: the same
        # numbers while neither changes (every cycle), computed once (update).
        self._per_dt: tuple | None = None

    def update(
        self,
        time: float,
        dt: float,
        *,
        depth: float,
        effort: float,
        velocity: float,
        commanded_velocity: float,
        commanded_acceleration: float,
        spindle_at_speed: bool,
        spindle_stalled: bool,
        spindle_reason: str | None = None,
    ) -> DrillingEvent | None:
        """One cycle: depth (m, the tip below the entry along the axis, from the feed's encoder),
        effort (N, the feed drive's), velocity (m/s, measured), the feed's commanded velocity and
        acceleration; returns the event that stops the feed this cycle (None: go on)."""
        s = self.settings
        self.depth = depth
        bad = None
        if not _finite_floats(time, dt, effort, depth, velocity, commanded_velocity, commanded_acceleration):
            bad = _non_finite(
                time=time,
                dt=dt,
                effort=effort,
                depth=depth,
                velocity=velocity,
                commanded_velocity=commanded_velocity,
                commanded_acceleration=commanded_acceleration,
            )
        if bad is not None:  # never into the filters: they would stay NaN
            if self.fault is not None:
                return None
            return self._stop(DrillingStop.NON_FINITE, time, depth if math.isfinite(depth) else math.nan, bad)
        raw = effort - s.feed_mass * commanded_acceleration - s.feed_damping * velocity
        if not math.isfinite(raw):  # finite inputs whose terms overflow
            if self.fault is not None:
                return None
            return self._stop(
                DrillingStop.NON_FINITE,
                time,
                depth,
                f"thrust estimate {raw} from effort {effort}, velocity {velocity} and commanded "
                f"acceleration {commanded_acceleration} is not a finite number",
            )
        raw = min(max(raw, -THRUST_CLIP), THRUST_CLIP)
        self._cycle += 1
        # Each computed where it always was (a settings value that raises does so at the same point).
        per_dt = self._per_dt
        if per_dt is None or per_dt[0] != dt or per_dt[1] is not s:
            per_dt = (dt, s, 1.0 - math.exp(-dt / s.filter_time), None)
        alpha = per_dt[2]
        self.thrust += alpha * (raw - self.thrust)
        self._window.append(raw)
        self._window_sum += raw
        samples = per_dt[3]
        if samples is None:
            samples = max(1, round(s.average_time / dt))
            per_dt = (dt, s, alpha, samples)
        self._per_dt = per_dt
        while len(self._window) > samples:
            self._window_sum -= self._window.popleft()
        self.average = self._window_sum / len(self._window)
        averaged = len(self._window) == samples  # a whole revolution seen
        if self.fault is not None:
            return None
        thrust = self.thrust
        if spindle_stalled:
            return self._stop(DrillingStop.SPINDLE_STALL, time, depth, spindle_reason or "spindle stalled")
        interlocked = s.interlock_depth is not None and depth > s.interlock_depth
        if commanded_velocity > 0.0 and interlocked and not spindle_at_speed:
            return self._stop(
                DrillingStop.SPINDLE_NOT_AT_SPEED,
                time,
                depth,
                f"the feed would advance {depth * 1e3:.2f} mm from the bone with the spindle not at speed",
            )
        if thrust > s.thrust_limit:
            return self._stop(
                DrillingStop.THRUST_LIMIT,
                time,
                depth,
                f"feed thrust {_above(thrust, s.thrust_limit)} N above the limit {s.thrust_limit:.1f} N "
                f"({s.filter_time * 1e3:.0f} ms filter) at "
                + ("depth" if s.drilling_context else "feed position")
                + f" {depth * 1e3:.2f} mm",
            )
        cruising = commanded_velocity > 0.0 and abs(commanded_acceleration) < CRUISING_ACCELERATION
        armed = s.arm_depth is not None and depth >= s.arm_depth and cruising and averaged
        if self.event is None and armed:
            average = self.average
            self.peak = max(self.peak, self._held_level(average, dt))
            if self.peak >= s.breakthrough_min_thrust and average <= (1.0 - s.breakthrough_drop) * self.peak:
                return self._breakthrough(time, depth, average)
        else:
            self._held.clear()
            self._held_since = None
        return None

    def _held_level(self, average: float, dt: float) -> float:
        """The lowest average over the last peak_time (the level held that long; -inf until the
        window is full): a running minimum over a monotonic queue."""
        held, k = self._held, self._cycle
        while held and held[-1][1] >= average:
            held.pop()
        held.append((k, average))
        span = max(1, round(self.settings.peak_time / dt))
        while held[0][0] <= k - span:
            held.popleft()
        if self._held_since is None:
            self._held_since = k
        return held[0][1] if k - self._held_since + 1 >= span else -math.inf

    def _breakthrough(self, time: float, depth: float, average: float) -> DrillingEvent:
        s = self.settings
        found = f"thrust {average:.1f} N (one revolution's mean) from a held peak of {self.peak:.1f} N"
        if s.exit_depth is not None and depth < s.exit_depth - s.exit_tolerance:
            return self._stop(
                DrillingStop.EARLY_BREAKTHROUGH,
                time,
                depth,
                f"at depth {depth * 1e3:.2f} mm, {(s.exit_depth - depth) * 1e3:.2f} mm short of the "
                f"imaged far cortex exit at {s.exit_depth * 1e3:.2f} mm (tolerance "
                f"{s.exit_tolerance * 1e3:.1f} mm): {found}; the hole may not pass through the far cortex",
            )
        message = f"far-cortex breakthrough at depth {depth * 1e3:.2f} mm: {found}"
        return self._stop(DrillingStop.BREAKTHROUGH, time, depth, message)

    def _stop(self, kind: DrillingStop, time: float, depth: float, message: str) -> DrillingEvent:
        event = DrillingEvent(kind, float(time), float(depth), float(self.thrust), f"{kind.value}: {message}")
        if self.event is None:
            self.event = event
        if event.is_fault:
            self.fault = event
        return event


def _above(value: float, limit: float) -> str:
    """value (> limit) with the decimals that show it above the limit (80.04, not 80.0 against 80.0)."""
    for digits in (1, 2, 3):
        text = f"{value:.{digits}f}"
        if float(text) > round(limit, digits):
            return text
    return f"{value:.6g}"


def _finite_floats(time, dt, effort, depth, velocity, commanded_velocity, commanded_acceleration) -> bool:
    """Every input a float (exactly: no subclass, int or string), finite, the period > 0: what
    every cycle sends, where `_non_finite` has no reason to give, told without naming the inputs
    (a non-finite float makes the sum non-finite). False also for finite floats whose sum
    overflows: `_non_finite` then tells (None)."""
    return (
        type(time) is float
        and type(dt) is float
        and type(effort) is float
        and type(depth) is float
        and type(velocity) is float
        and type(commanded_velocity) is float
        and type(commanded_acceleration) is float
        and dt > 0.0
        and math.isfinite(time + dt + effort + depth + velocity + commanded_velocity + commanded_acceleration)
    )


def _non_finite(**values: float) -> str | None:
    """The first input that is not a finite number (the period also not > 0), as a reason."""
    for name, value in values.items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            return f"{name} {value!r} is not a number"
        if not math.isfinite(number) or (name == "dt" and number <= 0.0):
            what = "control period" if name == "dt" else name.replace("_", " ")
            return f"{what} {number} is not a finite number" + (" > 0" if name == "dt" else "")
    return None
