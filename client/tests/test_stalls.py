"""Stalls: the snapshot intervals in which no pgbench transaction ended
while the run was active (chronicle.run_stalls, and as marks on every time
chart), against the pgbench log read here.  A session holds a lock the
benchmark's every transaction needs for 2.5 s in the middle of a 7 s run."""

from __future__ import annotations

import pathlib
import threading
import time
from datetime import UTC, datetime

import pytest

from conftest import Server, cli
from report_runs import report_data

# What this checks does not depend on the server's version: tools/test.sh
# runs it against the newest one only.
pytestmark = pytest.mark.one_version


def _us(t: datetime) -> int:
    """A timestamptz as integer microseconds since the epoch (exact)."""
    d = t - datetime(1970, 1, 1, tzinfo=UTC)
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


def _log_ends(logdir: pathlib.Path) -> list[int]:
    """The end of every transaction of pgbench's per-transaction logs, in
    microseconds since the epoch (fields 5 and 6), as the log has them."""
    ends = []
    for f in sorted(logdir.glob("pgbench_log.*")):
        for line in f.read_text().splitlines(keepends=True):
            fields = line.split()
            if line.endswith("\n") and fields[2] not in ("skipped", "failed", "serialization",
                                                         "deadlock", "other"):
                ends.append(int(fields[4]) * 1_000_000 + int(fields[5]))
    return sorted(ends)


def test_stalls_are_the_logs_empty_intervals(server: Server, tmp_path: pathlib.Path) -> None:
    script = tmp_path / "branch.sql"
    script.write_text("UPDATE pgbench_branches SET bbalance = bbalance WHERE bid = 1;\n")

    def hold_lock() -> None:
        time.sleep(2.5)
        with server.connect() as conn, conn.transaction():
            conn.execute("LOCK TABLE pgbench_branches IN EXCLUSIVE MODE")
            time.sleep(2.5)

    holder = threading.Thread(target=hold_lock)
    holder.start()
    logdir = tmp_path / "logs"
    p = cli(server, "bench", "--label", "stall-run", "--keep-logs", str(logdir), "--",
            "-n", "-c", "2", "-T", "7", "-f", str(script))
    holder.join()
    assert p.returncode == 0, p.stderr

    # the reference: the run's snapshot intervals in which the log has no
    # end while the run had ends before the interval and after it
    ends = _log_ends(logdir)
    with server.connect() as conn:
        intervals = conn.execute(
            "SELECT i.interval_start, i.interval_end FROM chronicle.run_window('stall-run') w, "
            "chronicle.intervals(w.run_from, w.run_to) i ORDER BY 2").fetchall()
        got = conn.execute("SELECT interval_start, interval_end, run_label"
                           "  FROM chronicle.run_stalls('stall-run') ORDER BY 2").fetchall()
        marks = conn.execute("SELECT ts, event FROM chronicle.run_marks('stall-run') WHERE kind = 'stall'"
                             " ORDER BY ts").fetchall()
    want = [(s, e) for s, e in intervals
            if ends[0] <= _us(s) and ends[-1] > _us(e) and not any(_us(s) < t <= _us(e) for t in ends)]
    assert len(want) >= 1, "the lock of 2.5 s stalled the run for at least one whole interval"
    assert [(s, e) for s, e, _ in got] == want
    assert {r for _, _, r in got} == {"stall-run"}
    # the same intervals are marks, saying which run stood still
    assert [t for t, _ in marks] == [e for _, e in want]
    assert all(ev.startswith('stall: no pgbench transaction of run "stall-run" ended in ') for _, ev in marks)

    # and the report lists and draws them
    out = tmp_path / "report"
    assert cli(server, "report", "stall-run", "-o", str(out)).returncode == 0
    data = report_data(out / "index.html")
    (table,) = [t for p in data["panels"] for t in p["tables"] if t["id"] == "throughput.marks"]
    assert sum(1 for r in table["rows"] if r[2] == "stall") == len(want)
    (tps,) = [c for p in data["panels"] for c in p["charts"] if c["id"] == "throughput.tps"]
    assert [m["x"] for m in tps["marks"] if m["kind"] == "stall"] == [e.timestamp() for _, e in want]


def test_stalls_bad_input(server: Server) -> None:
    with server.connect() as conn:
        for sql, state in (("SELECT * FROM chronicle.run_stalls('no such run')", "42704"),
                           ("SELECT * FROM chronicle.app_stalls(now(), now() - interval '1 s')", "22000")):
            with pytest.raises(Exception) as e, conn.transaction():
                conn.execute(sql)
            assert getattr(e.value, "sqlstate", None) == state, (sql, e.value)
