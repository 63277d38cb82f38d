"""docs/canopen.md's drive-loop block is bench/results/drive_loop.txt's, as
scripts/docs_drive_loop.py writes it (the file verbatim and the verdicts against issue 18's targets
computed from it: no number typed by hand)."""

from __future__ import annotations

from repo_scripts import load_script

script = load_script("docs_drive_loop")


def test_the_page_holds_the_block_of_the_saved_runs():
    page = script.PAGE.read_text()
    assert script.BLOCK.of(page) == script.block(script.RESULTS.read_text())


def test_every_run_gets_a_verdict_per_target():
    text = script.RESULTS.read_text()
    verdicts = script.verdicts(text)
    assert len(verdicts) == len(script.runs(text)) + 1 >= 2  # and the master alone
    for line in verdicts[:-1]:
        assert line.count("met") + line.count("missed") + line.count("not measured") == len(script.TARGETS)


def test_a_changed_figure_changes_the_verdict():
    """The check can fail: a run's SYNC p99.9 set under and over the target flips its verdict."""
    text = script.RESULTS.read_text()
    run = script.runs(text)[0]
    column = "SYNC period p50 / p99 / p99.9 / max (ms)"
    cells = run[column].split(" / ")
    for p999, verdict in (("2.50", "met"), ("9.00", "missed")):
        changed = text.replace(run[column], " / ".join([*cells[:2], p999, cells[3]]), 1)
        expected = f"SYNC period p99.9 {float(p999):g} ms (period 2 ms + 1 ms) ({verdict}"
        assert expected in script.verdicts(changed)[0]


def test_a_run_with_the_floors_watchdog_column_names_the_stalls_it_explains():
    """Files written since issue 32 have the floor's wake-ups later than the drives' watchdog: the
    verdict says how many (window, whole run); a file without the column keeps its verdicts."""
    text = script.RESULTS.read_text()
    lines = text.splitlines()
    header = next(k for k, line in enumerate(lines) if line.startswith("|"))
    column = script.OVER_WATCHDOG
    lines[header] = lines[header].replace("| steal (ms) |", f"| {column} | steal (ms) |")
    lines[header + 1] += "---|"
    rows = [k for k, line in enumerate(lines) if line.startswith("|")][2:]
    for n, k in enumerate(rows):
        cells = lines[k].split("|")
        cells.insert(-3, f" {n} / {n + 2} ")
        lines[k] = "|".join(cells)
    verdicts = script.verdicts("\n".join(lines))
    for n, line in enumerate(verdicts[:-1]):
        assert f", {n} later than the drives' watchdog ({n + 2} over the whole run); steal" in line
    assert "later than the drives' watchdog" not in " ".join(script.verdicts(text))
