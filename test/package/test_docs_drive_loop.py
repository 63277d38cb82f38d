"""docs/canopen.md's drive-loop block is bench/results/drive_loop.txt's, as
scripts/docs_drive_loop.py writes it (the file verbatim and the verdicts against issue 32's targets,
each against the host's floor of the same run, computed from it: no number typed by hand)."""

from __future__ import annotations

from repo_scripts import load_script

script = load_script("docs_drive_loop")

#: Verdicts per run: the cycle's lateness, the stops, command -> RPDO.
TARGETS_PER_RUN = 3


def test_the_page_holds_the_block_of_the_saved_runs():
    page = script.PAGE.read_text()
    assert script.BLOCK.of(page) == script.block(script.RESULTS.read_text())


def test_every_run_gets_a_verdict_per_target():
    text = script.RESULTS.read_text()
    verdicts = script.verdicts(text)
    assert len(verdicts) == len(script.runs(text)) + 1 >= 2  # and the master alone
    for line in verdicts[:-1]:
        assert line.count("(met") + line.count("(missed") + line.count("not measured") == TARGETS_PER_RUN


def _with_cell(text: str, column: str, cell: str) -> str:
    """The file with the first run's `column` set to `cell` (that column's cell alone: another
    column of the row may hold the same text)."""
    lines = text.splitlines(keepends=True)
    rows = [k for k, line in enumerate(lines) if line.startswith("|")]
    header = [name.strip() for name in lines[rows[0]].strip().strip("|").split("|")]
    cells = lines[rows[2]].strip().strip("|").split("|")
    cells[header.index(column)] = f" {cell} "
    lines[rows[2]] = "|" + "|".join(cells) + "|\n"
    return "".join(lines)


def test_the_lateness_verdict_follows_the_floor_of_the_same_run():
    """The check can fail: the first run's cycle lateness set 0.5 ms and 1.5 ms over its floor's
    p99.9 flips the verdict."""
    text = script.RESULTS.read_text()
    floor = script.value(script.runs(text)[0], script.FLOOR, 1)
    for over, verdict in ((0.5, "met"), (1.5, "missed")):
        lateness = round(floor + over, 2)
        changed = _with_cell(text, script.LATENESS, f"{lateness:.2f} / 99.00")
        assert (
            f"cycle lateness p99.9 {lateness:g} ms against the floor's {floor:g} ms ({verdict}"
            in (script.verdicts(changed)[0])
        )


def test_an_unexplained_stop_is_a_missed_target():
    text = script.RESULTS.read_text()
    for cell, verdict in (("2 / 0", "met"), ("2 / 1", "missed")):
        changed = _with_cell(text, script.STOPS, cell)
        unexplained = cell.split(" / ")[1]
        assert (
            f"2 SYNC-loss or heartbeat stop(s) in the whole run, {unexplained} not explained"
            in (script.verdicts(changed)[0])
        )
        assert f"watchdog ({verdict}: none)" in script.verdicts(changed)[0]


def test_command_to_rpdo_is_judged_against_3_ms_plus_the_floors_p99():
    text = script.RESULTS.read_text()
    floor_p99 = script.value(script.runs(text)[0], script.FLOOR, 0)
    bound = 3.0 + floor_p99
    for p99, verdict in ((bound - 0.1, "met"), (bound + 0.1, "missed")):
        changed = _with_cell(text, script.COMMAND, f"1.00 / {p99:.2f}")
        assert (
            f"command -> RPDO p99 {float(f'{p99:.2f}'):g} ms ({verdict}: <= {bound:g})"
            in (script.verdicts(changed)[0])
        )
    changed = _with_cell(text, script.COMMAND, "nan / nan")
    assert "command -> RPDO not measured" in script.verdicts(changed)[0]
