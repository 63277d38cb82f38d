"""The servo drives in the parameter file: their electronics (`drive`), their homing (`homing`)
and their CANopen bus (`canopen`), one entry per axis of `drive_axes()`.

Each dataclass is SI; each `read_*` builds one from a `SourcedReader` over the parameter file
(parameters.load_parameters calls them), refusing a bad value by its dotted key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

from quirobot_description.mechanism_parameters import JointParameters
from quirobot_description.sourced_yaml import SourcedReader
from quirobot_description.tool_parameters import DrillParameters, drive_axes


@dataclass(frozen=True)
class DriveParameters:
    """Servo-drive electronics shared by every axis (design assumptions, see the YAML)."""

    bus_voltage: float  # V
    voltage_headroom: float  # maximum duty cycle, 0..1
    current_loop_bandwidth: float  # rad/s
    current_loop_rate: float  # Hz
    encoder_counts_per_rev: int
    control_rate: float  # Hz
    brake_engage_time: float  # s from the drive ceasing to drive to the holding brake holding
    brake_holding_ratio: float  # holding-brake torque / motor peak torque K_T*I_max
    #: axis (drive_axes()) -> the drive's quick-stop ramp (CiA 402 0x6085), m/s^2 or rad/s^2
    quick_stop_deceleration: dict[str, float] = field(default_factory=dict)
    #: s without a command from the master before an enabled drive stops itself (0x1016)
    master_timeout: float = math.inf


#: CiA 402 homing methods (0x6098) the drives run: limit switch without index pulse, and the
#: direction each searches in (17: negative limit switch, 18: positive limit switch).
HOMING_METHOD_DIRECTIONS = {17: -1, 18: 1}


@dataclass(frozen=True)
class HomingParameters:
    """One axis's CiA 402 homing: m, m/s, m/s^2 (prismatic, the feed) or rad, rad/s, rad/s^2."""

    method: int  # 0x6098, a key of HOMING_METHOD_DIRECTIONS
    switch_position: float  # where the limit switch becomes active (joint coordinate)
    switch_speed: float  # 0x6099:1, speed of the search for the switch, > 0
    zero_speed: float  # 0x6099:2, speed off the switch to its falling edge, > 0
    acceleration: float  # 0x609A, > 0
    home_offset: float  # 0x607C, the position the drive assigns to the switch's falling edge

    @cached_property  # read by every simulated drive at every physics step (its home switch)
    def direction(self) -> int:
        """-1 or +1: the sign of the search motion (towards the switch)."""
        return HOMING_METHOD_DIRECTIONS[self.method]


@dataclass(frozen=True)
class CanopenParameters:
    """The CANopen bus of the servo drives (CiA 301 / CiA 402), see quirobot_control.drives.canopen_master."""

    node_ids: dict[str, int]  # axis name (drive_axes()) -> node id, 1..127, all different
    bitrate: int  # bit/s
    sync_period: float  # s, one SYNC (and one PDO exchange) per period
    feedback_timeout_periods: int  # SYNC periods without a TPDO before a "feedback timeout" fault
    transition_timeout: float  # s, allowed for a CiA 402 state change (enable, fault reset)
    channels: dict[str, str]  # axis name -> CAN bus (SocketCAN interface name) it is on
    master_node_id: int = 127  # the master's node id: its heartbeat is 0x700 + id (CiA 301)
    heartbeat_period: float = 0.004  # s, the master's producer heartbeat (its loop sends it)
    sync_loss_periods: int = 5  # SYNC periods without a SYNC after which a drive stops itself

    @property
    def feedback_timeout(self) -> float:
        """Time without feedback (s) that faults a drive: feedback_timeout_periods * sync_period."""
        return self.feedback_timeout_periods * self.sync_period

    @property
    def channel_names(self) -> tuple[str, ...]:
        """The CAN buses, in the order of their first axis."""
        return tuple(dict.fromkeys(self.channels[axis] for axis in drive_axes()))

    def axes_on(self, channel: str) -> tuple[str, ...]:
        """The axes on one CAN bus, in drive_axes() order."""
        return tuple(axis for axis in drive_axes() if self.channels[axis] == channel)


def read_drive(reader: SourcedReader) -> DriveParameters:
    """drive: the electronics every axis's drive shares, and each one's quick-stop ramp."""
    key = "drive"
    headroom = reader.number(f"{key}.voltage_headroom", positive=True)
    if headroom > 1.0:
        raise reader.fail(f"{key}.voltage_headroom", f"must be in (0, 1], got {headroom}")
    counts = reader.number(f"{key}.encoder_counts_per_rev", positive=True)
    if counts != int(counts):
        raise reader.fail(f"{key}.encoder_counts_per_rev", f"must be a whole number, got {counts}")
    return DriveParameters(
        bus_voltage=reader.number(f"{key}.bus_voltage", positive=True),
        voltage_headroom=headroom,
        current_loop_bandwidth=reader.number(f"{key}.current_loop_bandwidth", positive=True),
        current_loop_rate=reader.number(f"{key}.current_loop_rate", positive=True),
        encoder_counts_per_rev=int(counts),
        control_rate=reader.number(f"{key}.control_rate", positive=True),
        brake_engage_time=reader.number(f"{key}.brake_engage_time", positive=True),
        brake_holding_ratio=reader.number(f"{key}.brake_holding_ratio", positive=True),
        quick_stop_deceleration={
            axis: reader.number(f"{key}.quick_stop_deceleration.{axis}", positive=True)
            for axis in drive_axes()
        },
        master_timeout=reader.number(f"{key}.master_timeout", positive=True),
    )


def read_canopen(reader: SourcedReader) -> CanopenParameters:
    """canopen: each axis's node id and bus, the bus timing."""
    key = "canopen"
    node_ids = {axis: reader.whole(f"{key}.node_ids.{axis}", 1, 127) for axis in drive_axes()}
    extra = set(reader.node(f"{key}.node_ids")) - set(drive_axes())
    if extra:
        axes = ", ".join(drive_axes())
        raise reader.fail(f"{key}.node_ids", f"unknown axes {sorted(extra)}; axes are {axes}")
    if len(set(node_ids.values())) != len(node_ids):
        raise reader.fail(f"{key}.node_ids", f"node ids must all differ, got {node_ids}")
    master_node_id = reader.whole(f"{key}.master_node_id", 1, 127)
    if master_node_id in node_ids.values():
        raise reader.fail(f"{key}.master_node_id", f"{master_node_id} is a drive's node id too")
    channels = {axis: reader.text(f"{key}.channels.{axis}") for axis in drive_axes()}
    extra = set(reader.node(f"{key}.channels")) - set(drive_axes())
    if extra:
        raise reader.fail(f"{key}.channels", f"unknown axes {sorted(extra)}")
    for axis, channel in channels.items():
        if not channel.strip():
            raise reader.fail(f"{key}.channels.{axis}", "must name a CAN interface, got an empty string")
    return CanopenParameters(
        channels=channels,
        node_ids=node_ids,
        bitrate=reader.whole(f"{key}.bitrate", 1, 1_000_000),
        sync_period=reader.number(f"{key}.sync_period", positive=True),
        feedback_timeout_periods=reader.whole(f"{key}.feedback_timeout_periods", 1, 1_000_000),
        transition_timeout=reader.number(f"{key}.transition_timeout", positive=True),
        master_node_id=master_node_id,
        heartbeat_period=reader.number(f"{key}.heartbeat_period", positive=True),
        sync_loss_periods=reader.whole(f"{key}.sync_loss_periods", 1, 1_000_000),
    )


def read_homing_axis(reader: SourcedReader, axis: str, lower: float, upper: float) -> HomingParameters:
    """One axis's homing; its switch inside the travel [lower, upper], reached without overtravel."""
    key = f"homing.{axis}"
    method = reader.whole(f"{key}.method", 1, 35)
    if method not in HOMING_METHOD_DIRECTIONS:
        methods = ", ".join(str(m) for m in HOMING_METHOD_DIRECTIONS)
        raise reader.fail(f"{key}.method", f"the drives run the limit-switch methods {methods}, got {method}")
    homing = HomingParameters(
        method=method,
        switch_position=reader.number(f"{key}.switch_position"),
        switch_speed=reader.number(f"{key}.switch_speed", positive=True),
        zero_speed=reader.number(f"{key}.zero_speed", positive=True),
        acceleration=reader.number(f"{key}.acceleration", positive=True),
        home_offset=reader.number(f"{key}.home_offset"),
    )
    if homing.zero_speed > homing.switch_speed:
        raise reader.fail(
            f"{key}.zero_speed", f"{homing.zero_speed} exceeds switch_speed {homing.switch_speed}"
        )
    # Stopping from the search speed once the switch is hit must not reach the end of travel.
    end = lower if homing.direction < 0 else upper
    room = abs(end - homing.switch_position)
    overtravel = homing.switch_speed**2 / (2.0 * homing.acceleration)
    if not lower < homing.switch_position < upper or overtravel >= room:
        raise reader.fail(
            f"{key}.switch_position",
            f"{homing.switch_position} must lie inside the travel [{lower}, {upper}] with room to stop "
            f"from switch_speed ({overtravel:.3g} needed, {room:.3g} to the end)",
        )
    return homing


def read_homing(
    reader: SourcedReader, joints: tuple[JointParameters, ...], drill: DrillParameters
) -> tuple[dict[str, HomingParameters], tuple[str, ...]]:
    """homing: each drive axis's homing (inside its travel) and the order they home in."""
    ranges = {j.name: (j.lower, j.upper) for j in (*joints, *drill.axis_parameters)}
    axes = drive_axes()
    homing = {axis: read_homing_axis(reader, axis, *ranges[axis]) for axis in axes}
    order = reader.node("homing.order")
    if not isinstance(order, list) or sorted(map(str, order)) != sorted(axes) or len(order) != len(axes):
        raise reader.fail("homing.order", f"must list every axis once ({', '.join(axes)}), got {order!r}")
    return homing, tuple(order)
