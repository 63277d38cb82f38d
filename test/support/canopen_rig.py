"""A CANopen test rig on python-can's virtual bus: CanopenDrives against simulated CiA 402 slaves.

The master (canopen.Network + RemoteNode inside each CanopenDrive) and the slaves
(CanopenServoSimulator, canopen.LocalNode on their own Network) share a virtual CAN channel; a
third bus on the channel sniffs the raw frames. Simulated time advances one SYNC period per
SYNC; the master's watchdog reads a fake clock advanced by the same period (`Rig.step`), so
nothing depends on the wall clock. Used by test_canopen_drive.py and test_canopen_stops.py.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass

import can
import canopen
from virtual_can import WAIT, network

from quirobot_control.drive_simulators.canopen_slave import CanopenServoSimulator, simulator_for_axis
from quirobot_control.drives.canopen_master import CanopenDrive, MasterHeartbeat, canopen_drives_for_robot
from quirobot_control.drives.interface import DriveMode


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Rig:
    params: object
    master: canopen.Network
    slave: canopen.Network
    sniffer: can.BusABC
    clock: FakeClock
    simulators: dict[str, CanopenServoSimulator]
    drives: dict[str, CanopenDrive]
    period: float  # s, simulated per SYNC
    heartbeat: MasterHeartbeat

    def step(self, n: int = 1) -> None:
        """n SYNC cycles: advance the clock one period, SYNC (and the master's heartbeat when
        due, as a control loop does), wait for every drive's TPDOs."""
        for _ in range(n):
            targets = {name: drive.feedback_count + 1 for name, drive in self.drives.items()}
            self.clock.now += self.period
            self.master.sync.transmit()
            self.heartbeat.tick(self.clock.now)
            for name, drive in self.drives.items():
                assert drive.wait_for_feedback(targets[name], WAIT), f"no TPDOs from {name}"

    @property
    def settle(self) -> int:
        """SYNC cycles covering 30 current-loop time constants (1/bandwidth): a current step is done."""
        return math.ceil(30.0 / self.params.drive.current_loop_bandwidth / self.period)

    def frames(self) -> list[can.Message]:
        """Every frame sent on the channel since the last call."""
        out = []
        while (message := self.sniffer.recv(timeout=0)) is not None:
            out.append(message)
        return out


class RigFactory:
    """Builds rigs (`make`) and closes their buses (`close`)."""

    def __init__(self, params, inertias: dict[str, float]) -> None:
        self.params = params
        self.inertias = inertias
        self.created: list[tuple[canopen.Network, canopen.Network, can.BusABC]] = []

    def make(
        self,
        axes=("gantry_x",),
        positions=None,
        start=True,
        clock=None,
        first_step=True,
        parameters=None,
        mode=DriveMode.CST,
        sync_period=None,
        absolute_encoder=True,
    ) -> Rig:
        parameters = parameters or self.params
        channel = f"quirobot-test-{uuid.uuid4().hex}"
        slave, master = network(channel), network(channel)
        sniffer = can.Bus(interface="virtual", channel=channel)
        self.created.append((master, slave, sniffer))
        simulators = {}
        for axis in axes:
            simulators[axis] = simulator_for_axis(
                parameters,
                axis,
                inertia=self.inertias[axis],
                position=(positions or {}).get(axis, 0.0),
                sync_period=sync_period,
                absolute_encoder=absolute_encoder,
            )
            simulators[axis].attach(slave)
        clock = clock or FakeClock()
        drives = canopen_drives_for_robot(
            parameters, master, axes=axes, start=start, clock=clock, mode=mode, homed=absolute_encoder
        )
        period = parameters.canopen.sync_period if sync_period is None else sync_period
        heartbeat = MasterHeartbeat(
            master, parameters.canopen.master_node_id, parameters.canopen.heartbeat_period
        )
        rig = Rig(parameters, master, slave, sniffer, clock, simulators, drives, period, heartbeat)
        if start and first_step:
            rig.step()  # the first feedback: the watchdog arms, enable() may proceed
        return rig

    def close(self) -> None:
        for master, slave, sniffer in self.created:
            master.sync.stop()
            master.disconnect()
            slave.disconnect()
            sniffer.shutdown()
