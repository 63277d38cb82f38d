"""Print each failed or errored test of the JUnit XML files in a folder, with the last lines of its
report (the assertion's message and the launch's process output end there). Exit 0 always: the
test runner's own status decides.

    python .ci/test_failures.py FOLDER [--lines N]
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def failures(folder: Path, lines: int) -> list[str]:
    report = []
    for path in sorted(folder.glob("*.xml")):
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as error:
            report.append(f"{path.name}: unreadable ({error})")
            continue
        for case in root.iter("testcase"):
            for outcome in ("failure", "error"):
                for element in case.findall(outcome):
                    text = (element.text or element.get("message") or "").rstrip().splitlines()
                    report.append(f"--- {outcome}: {case.get('classname')}.{case.get('name')} ({path.name})")
                    report.extend(f"    {line}" for line in text[-lines:])
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--lines", type=int, default=30, help="last lines of each report (default 30)")
    args = parser.parse_args()
    report = failures(args.folder, args.lines)
    if report:
        print("== failed tests, the end of each report:")
        print("\n".join(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
