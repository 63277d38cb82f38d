"""The URDF's <ros2_control> block as `HardwareInfo` (what on_init of the component receives).

`hardware_info_from_urdf(xml)` parses the first <ros2_control type="system">: its name, the
hardware plugin and <param>s, and each joint's command and state interfaces.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass


class HardwareError(ValueError):
    """Malformed hardware description or an interface that does not exist."""


@dataclass(frozen=True)
class ComponentInfo:
    name: str
    command_interfaces: tuple[str, ...]
    state_interfaces: tuple[str, ...]


@dataclass(frozen=True)
class HardwareInfo:
    """The URDF's <ros2_control> block: name, plugin, <param>s and joints."""

    name: str
    plugin: str
    parameters: dict[str, str]
    joints: tuple[ComponentInfo, ...]


def hardware_info_from_urdf(urdf: str) -> HardwareInfo:
    """Parse the first <ros2_control type="system"> of a URDF XML string."""
    try:
        root = ET.fromstring(urdf)
    except ET.ParseError as error:
        raise HardwareError(f"robot description is not valid XML: {error}") from error
    block = root.find("ros2_control")
    if block is None:
        raise HardwareError("robot description has no <ros2_control> block")
    hardware = block.find("hardware")
    plugin = hardware.findtext("plugin", "").strip() if hardware is not None else ""
    parameters = {
        p.get("name", ""): (p.text or "").strip() for p in (hardware.findall("param") if hardware else [])
    }
    joints = tuple(
        ComponentInfo(
            name=j.get("name", ""),
            command_interfaces=tuple(c.get("name", "") for c in j.findall("command_interface")),
            state_interfaces=tuple(s.get("name", "") for s in j.findall("state_interface")),
        )
        for j in block.findall("joint")
    )
    if not joints:
        raise HardwareError("the <ros2_control> block lists no joint")
    return HardwareInfo(name=block.get("name", ""), plugin=plugin, parameters=parameters, joints=joints)
