"""Simulated CiA 402 servo drives on a CAN channel, one CANopen node per axis (bench-top demo).

    python -m quirobot_cli.canopen_servo_simulator --channel vcan0 [--axes gantry_x gantry_y]

serves the axes (node ids from the parameter file) with quirobot_control.drive_simulators.canopen_slave
until Ctrl-C, each simulated joint with the effective inertia of config/control.yaml, so that
`CanopenDrive` (or drive_node with drive_backend:=canopen) runs without hardware. A bad interface
or parameter file is one line on stderr, exit 2. See docs/canopen.md.
"""

from __future__ import annotations

import argparse
import sys
import threading

import can
import canopen

from quirobot_cli.verb_parser import EXIT_USAGE
from quirobot_control.drive_simulators.canopen_slave import serve
from quirobot_control.hardware.control_config import control_configuration
from quirobot_description.parameters import drive_axes, load_parameters


def main(argv: list[str] | None = None) -> int:
    """Serve simulated CiA 402 drives on a CAN channel until interrupted (bench-top demo)."""
    parser = argparse.ArgumentParser(
        prog="python -m quirobot_cli.canopen_servo_simulator",
        description="Simulated CiA 402 servo drives (one CANopen node per axis, node ids from the "
        "parameter file) on a CAN channel, for running CanopenDrive without hardware.",
    )
    parser.add_argument("--interface", default="socketcan", help="python-can interface (default socketcan)")
    parser.add_argument("--channel", default="vcan0", help="CAN channel (default vcan0)")
    parser.add_argument(
        "--axes",
        nargs="+",
        choices=drive_axes(),
        default=list(drive_axes()),
        help="axes to simulate (default all)",
    )
    parser.add_argument("--parameters", help="parameter file (default: the shipped quirobot.yaml)")
    args = parser.parse_args(argv)
    try:
        params = load_parameters(args.parameters)
        control = control_configuration(params)
        inertias = {axis: control.joint(axis).effective_inertia for axis in args.axes}
        network = canopen.Network()
        network.connect(interface=args.interface, channel=args.channel, bitrate=params.canopen.bitrate)
    except (ValueError, OSError, can.CanError) as error:
        print(f"canopen_servo_simulator: error: {' '.join(str(error).split())}", file=sys.stderr)
        return EXIT_USAGE
    ids = ", ".join(f"{axis} {params.canopen.node_ids[axis]}" for axis in args.axes)
    print(f"simulating CANopen nodes ({ids}) on {args.interface} {args.channel}; Ctrl-C to stop")
    stop = threading.Event()
    try:
        serve(params, network, inertias, stop, axes=tuple(args.axes))
    except KeyboardInterrupt:
        stop.set()
    finally:
        network.disconnect()
    return 0


if __name__ == "__main__":
    sys.exit(main())
