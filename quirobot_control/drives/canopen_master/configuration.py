"""The CANopen drive's configuration by SDO (pre-operational) and its PDO mapping.

What start() writes, in order: the scaling check (rated current and torque, encoder resolution
against the parameter file), the stops (quick-stop option and deceleration, abort-connection
option, consumer heartbeat on the master's, read back), the position-loop gains 0x60FB, the
homing objects, the mode 0x6060 (checked in 0x6061), the PDOs (RPDO1/2 event-driven, TPDO1/2 on
SYNC, decoded by precompiled structs); then NMT operational. A restart whose boot-up frame was
missed is found by reading the stop options back (`_configuration_lost`). `read_serial_number`
reads the drive's serial number (0x1018:04) for the owner of the bus, once at start-up.
"""

from __future__ import annotations

import math

from quirobot_control.drives.canopen_master.core import (
    COMMUNICATION_ERRORS,
)
from quirobot_control.drives.canopen_units import CanopenConfigurationError
from quirobot_control.drives.cia402 import (
    ABORT_CONNECTION_OPTION_CODE,
    ABORT_CONNECTION_QUICK_STOP,
    CONSUMER_HEARTBEAT_TIME,
    CONTROLWORD,
    CURRENT_ACTUAL,
    HOME_OFFSET,
    HOMING_ACCELERATION,
    HOMING_METHOD,
    HOMING_SPEEDS,
    MODE_CYCLIC_SYNCHRONOUS_POSITION,
    MODE_CYCLIC_SYNCHRONOUS_TORQUE,
    MODE_HOMING,
    MODES_OF_OPERATION,
    MODES_OF_OPERATION_DISPLAY,
    MOTOR_RATED_CURRENT,
    MOTOR_RATED_TORQUE,
    POSITION_ACTUAL,
    POSITION_CONTROL_PARAMETERS,
    POSITION_CONTROL_SUBINDICES,
    POSITION_ENCODER_RESOLUTION,
    QUICK_STOP_DECELERATION,
    QUICK_STOP_OPTION_CODE,
    QUICK_STOP_RAMP_THEN_DISABLE,
    RPDO1_COB_BASE,
    RPDO1_MAPPING,
    RPDO2_COB_BASE,
    RPDO2_MAPPING,
    STATUSWORD,
    TARGET_TORQUE,
    TORQUE_OFFSET,
    TPDO1_COB_BASE,
    TPDO1_MAPPING,
    TPDO2_COB_BASE,
    TPDO2_MAPPING,
    TRANSMISSION_EVENT,
    TRANSMISSION_SYNCHRONOUS,
    VELOCITY_ACTUAL,
)
from quirobot_control.drives.interface import DriveError, DriveMode
from quirobot_control.drives.pid import PIDGains
from quirobot_description.machine_identity import SERIAL_NUMBER_OBJECT
from quirobot_description.parameters import (
    HomingParameters,
)

#: 0x6060 value of each mode.
MODE_CODES = {
    DriveMode.CSP: MODE_CYCLIC_SYNCHRONOUS_POSITION,
    DriveMode.CST: MODE_CYCLIC_SYNCHRONOUS_TORQUE,
    DriveMode.HOMING: MODE_HOMING,
}


class CanopenDriveConfiguration:
    """SDO configuration and PDO mapping of the drive.

    A part of `CanopenDrive` (quirobot_control.drives.canopen_master): its state is set up in
    `CanopenDrive.__init__`.
    """

    def _configure_node(self, what: str) -> None:
        """Everything start() writes, by SDO in pre-operational, then NMT operational; the
        feedback watchdog re-arms at the first TPDOs after it (enable() waits for them)."""
        try:
            self.node.nmt.state = "PRE-OPERATIONAL"
            self._check_scaling()
            self._configure_stops()
            if self._gains is not None:
                self._write_gains(self._gains)
            if self.homing is not None:
                self._configure_homing(self.homing)
            self._write_mode(self._mode)
            self._configure_pdos()
            statusword = self.node.sdo[STATUSWORD].raw
            position = self.node.sdo[POSITION_ACTUAL].raw
            velocity = self.node.sdo[VELOCITY_ACTUAL].raw
            current = self.node.sdo[CURRENT_ACTUAL].raw
            self.node.nmt.state = "OPERATIONAL"
        except COMMUNICATION_ERRORS as error:
            raise DriveError(f"{self._who()}: {what} failed: {error}") from error
        with self._mutex:
            self._statusword = statusword
            self._position_counts, self._velocity_counts, self._current_actual = position, velocity, current
            self._tpdo_times = [None, None]  # the watchdog arms at the first TPDOs
            self._rebooted = False

    def read_serial_number(self) -> int:
        """The drive's serial number, CiA 301 identity 0x1018:04 (UNSIGNED32), read by SDO: which
        machine this is (quirobot_description.machine_identity). Once, at start-up (the owner of
        the bus, after start()); never in the cycle. Kept in `serial_number`. DriveError naming
        the object if the drive does not answer it."""
        index, subindex = SERIAL_NUMBER_OBJECT
        try:
            serial = self.node.sdo[index][subindex].raw
        except COMMUNICATION_ERRORS as error:
            raise DriveError(
                f"{self._who()}: serial number 0x{index:04X}:{subindex:02X} not readable: {error}"
            ) from error
        self.serial_number = serial
        return serial

    def _check_scaling(self) -> None:
        expected = {
            (MOTOR_RATED_CURRENT, 0): (self.scaling.rated_current_milliamps, "motor rated current", "mA"),
            (MOTOR_RATED_TORQUE, 0): (
                self.scaling.rated_torque_millinewton_metres,
                "motor rated torque",
                "mN*m",
            ),
            (POSITION_ENCODER_RESOLUTION, 1): (self.encoder.counts_per_rev, "encoder increments", "counts"),
            (POSITION_ENCODER_RESOLUTION, 2): (1, "motor revolutions of the encoder resolution", "rev"),
        }
        for (index, subindex), (value, label, unit) in expected.items():
            entry = self.node.sdo[index] if subindex == 0 else self.node.sdo[index][subindex]
            actual = entry.raw
            if actual != value:
                raise CanopenConfigurationError(
                    f"{self._who()}: {label} 0x{index:04X}:{subindex} is {actual} {unit}, the "
                    f"parameter file says {value} {unit} (commission the drive, or fix the file)"
                )

    def _configure_stops(self) -> None:
        """Category-1 quick stop on the drive's ramp; the drive watches the master's heartbeat and
        quick-stops itself when it is lost, in every mode (0x6007 = 3). Each watchdog object is
        read back: a drive that does not keep one (CiA 402 0x6007 = 0 is "no action") would go
        on without its master, and is refused (CanopenConfigurationError naming the object)."""
        sdo = self.node.sdo
        sdo[QUICK_STOP_DECELERATION].raw = self.units.positive_counts(
            self.quick_stop_deceleration, "quick-stop deceleration"
        )
        expected = self._master_watch()
        for (index, subindex, _), value in expected.items():
            entry = sdo[index] if subindex == 0 else sdo[index][subindex]
            entry.raw = value
        for (index, subindex, label), actual in self._read_master_watch().items():
            if actual != expected[index, subindex, label]:
                raise CanopenConfigurationError(
                    f"{self._who()}: {label} 0x{index:04X}:{subindex} reads {actual} after "
                    f"{expected[index, subindex, label]} was written: the drive would not stop itself on "
                    "a lost master (commission it to keep the value)"
                )

    def _master_watch(self) -> dict[tuple[int, int, str], int]:
        """What start() writes for the drive to stop itself on a lost master, by (index,
        subindex, name): the quick-stop option (category 1), the abort-connection option (quick
        stop) and the consumer heartbeat on the master's (node id << 16 | ms; none without a
        finite drive.master_timeout)."""
        watch = {
            (QUICK_STOP_OPTION_CODE, 0, "quick-stop option code"): QUICK_STOP_RAMP_THEN_DISABLE,
            (ABORT_CONNECTION_OPTION_CODE, 0, "abort-connection option code"): ABORT_CONNECTION_QUICK_STOP,
        }
        if math.isfinite(self.master_timeout):
            milliseconds = round(self.master_timeout * 1000.0)
            if not 1 <= milliseconds <= 0xFFFF:
                raise CanopenConfigurationError(
                    f"{self._who()}: master timeout {self.master_timeout} s is not 1..65535 ms (0x1016)"
                )
            watch[CONSUMER_HEARTBEAT_TIME, 1, "consumer heartbeat time"] = (
                self.bus.master_node_id << 16 | milliseconds
            )
        return watch

    def _read_master_watch(self) -> dict[tuple[int, int, str], int]:
        """The drive's values of the `_master_watch` objects, read by SDO."""
        sdo = self.node.sdo
        return {
            key: (sdo[key[0]] if key[1] == 0 else sdo[key[0]][key[1]]).raw for key in self._master_watch()
        }

    def _configure_homing(self, homing: HomingParameters) -> None:
        sdo = self.node.sdo
        sdo[HOMING_METHOD].raw = homing.method
        sdo[HOMING_SPEEDS][1].raw = self.units.positive_counts(homing.switch_speed, "homing switch speed")
        sdo[HOMING_SPEEDS][2].raw = self.units.positive_counts(homing.zero_speed, "homing zero speed")
        sdo[HOMING_ACCELERATION].raw = self.units.positive_counts(homing.acceleration, "homing acceleration")
        sdo[HOME_OFFSET].raw = self.units.counts(homing.home_offset)

    def _write_gains(self, gains: PIDGains) -> None:
        entry = self.node.sdo[POSITION_CONTROL_PARAMETERS]
        for field, subindex in POSITION_CONTROL_SUBINDICES.items():
            entry[subindex].raw = getattr(gains, field)

    def _write_mode(self, mode: DriveMode) -> None:
        code = MODE_CODES[mode]
        self.node.sdo[MODES_OF_OPERATION].raw = code
        display = self.node.sdo[MODES_OF_OPERATION_DISPLAY].raw
        if display != code:
            raise CanopenConfigurationError(
                f"{self._who()}: modes of operation display 0x6061 is {display} after setting "
                f"{mode.value} ({code})"
            )

    def _configure_pdos(self) -> None:
        for pdo, mapping, cob_base, transmission in (
            (self.node.rpdo[1], RPDO1_MAPPING, RPDO1_COB_BASE, TRANSMISSION_EVENT),
            (self.node.rpdo[2], RPDO2_MAPPING, RPDO2_COB_BASE, TRANSMISSION_EVENT),
            (self.node.tpdo[1], TPDO1_MAPPING, TPDO1_COB_BASE, TRANSMISSION_SYNCHRONOUS),
            (self.node.tpdo[2], TPDO2_MAPPING, TPDO2_COB_BASE, TRANSMISSION_SYNCHRONOUS),
        ):
            pdo.clear()
            for index, bits in mapping:
                pdo.add_variable(index, 0, bits)
            pdo.cob_id = cob_base + self.node_id
            pdo.trans_type = transmission
            pdo.rtr_allowed = False
            pdo.enabled = True
            pdo.save()
        # The feedback decoded by precompiled structs (cia402.TPDO_LAYOUTS), not by canopen's
        # PdoMap: the cycle takes 12 TPDOs per SYNC with six drives.
        network = self.node.network
        for pdo, handler in ((self.node.tpdo[1], self._on_tpdo1), (self.node.tpdo[2], self._on_tpdo2)):
            if pdo.cob_id in network.subscribers and pdo.on_message in network.subscribers[pdo.cob_id]:
                network.unsubscribe(pdo.cob_id, pdo.on_message)
            network.subscribe(pdo.cob_id, handler)
        self.node.rpdo[1][CONTROLWORD].raw = self._controlword
        self.node.rpdo[1][TARGET_TORQUE].raw = 0
        self.node.rpdo[1][TORQUE_OFFSET].raw = 0

    def _configuration_lost(self) -> bool:
        """The stop and master-watch configuration read back by SDO differs from what start()
        wrote (a restart whose boot-up frame was missed)."""
        try:
            return self._read_master_watch() != self._master_watch()
        except COMMUNICATION_ERRORS as error:
            raise DriveError(f"{self._who()}: configuration not readable: {error}") from error

    def configure_position_loop(self, gains: PIDGains, period: float) -> None:
        """The joint's PID gains (config/control.yaml) for the drive's own position loop, 0x60FB.

        `period` (s) must be the drive's loop period (1 / drive.control_rate: the gains are
        discrete at it). Written by SDO now if the drive is started, else at start().
        """
        if not isinstance(gains, PIDGains):
            raise CanopenConfigurationError(f"{self._who()}: gains must be PIDGains, got {gains!r}")
        if not math.isclose(float(period), self.control_period, rel_tol=1e-9):
            raise CanopenConfigurationError(
                f"{self._who()}: the drive's position loop runs every {self.control_period} s "
                f"(drive.control_rate), the gains are for {period} s"
            )
        self._gains = gains
        if self._started:
            try:
                self._write_gains(gains)
            except COMMUNICATION_ERRORS as error:
                raise DriveError(f"{self._who()}: position-loop gains 0x60FB not written: {error}") from error
