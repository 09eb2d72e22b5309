"""The report's relation sizes and table activity against what psql saw: a
table grows by one INSERT of a known number of rows in the middle of a
recorded run (the relations source reading every second); its size before
and after comes from pg_total_relation_size(), its rows from the INSERT."""

from __future__ import annotations

import pathlib
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from pg_chronicle import panels

from conftest import Server, cli, wait_for
from report_runs import report_data

# What this checks does not depend on the server's version: tools/test.sh
# runs it against the newest one only.
pytestmark = pytest.mark.one_version

ROWS = 50_000


def test_sizes_and_activity_of_a_growing_table(server: Server, tmp_path: pathlib.Path) -> None:
    server.psql("ALTER SYSTEM SET chronicle.relations_interval = '1s'")
    server.psql("SELECT pg_reload_conf()")
    # no autovacuum of it: a vacuum right after the INSERT truncates the
    # empty pages its bulk extension left at the end, after psql read the
    # size the test compares with
    server.psql("DROP TABLE IF EXISTS grow; CREATE TABLE grow (i int, pad text)"
                " WITH (autovacuum_enabled = off, toast.autovacuum_enabled = off)")
    # the reader has seen the new table before the run starts
    wait_for(lambda: server.psql("SELECT count(*) FROM chronicle.relations_history "
                                 "WHERE relation = 'public.grow'") != "0", "a reading of the new table")
    sizes: dict[str, int] = {}

    def grow() -> None:
        time.sleep(3)
        sizes["before"] = int(server.psql("SELECT pg_total_relation_size('grow')"))
        server.psql(f"INSERT INTO grow SELECT i, repeat('x', 100) FROM generate_series(1, {ROWS}) i")
        sizes["after"] = int(server.psql("SELECT pg_total_relation_size('grow')"))

    t = threading.Thread(target=grow)
    t.start()
    try:
        cli(server, "bench", "--label", "rel-run", "--", "-n", "-S", "-c", "1", "-T", "9", check=True)
    finally:
        t.join()
        server.psql("ALTER SYSTEM RESET chronicle.relations_interval")
        server.psql("SELECT pg_reload_conf()")
    assert sizes["after"] > sizes["before"]
    out = tmp_path / "report"
    cli(server, "report", "rel-run", "-o", str(out), check=True)
    data = report_data(out / "index.html")
    by_id = {p["id"]: p for p in data["panels"]}
    name = "postgres: public.grow"

    rel = by_id["relations"]
    charts = {c["id"]: c for c in rel["charts"]}
    size = next(s for s in charts["relations.size"]["series"] if s["label"] == name)["values"]
    known = [v for v in size if v is not None]
    # the size steps from what psql saw before the INSERT to what it saw after
    assert known[0] == sizes["before"] and known[-1] == sizes["after"], known
    assert known == sorted(known)
    # the growth per second, over the intervals, adds up to that step
    growth = next(s for s in charts["relations.growth"]["series"] if s["label"] == name)["values"]
    x = charts["relations.growth"]["x"]
    secs = [b - a for a, b in zip([x[0] - (x[1] - x[0]), *x[:-1]], x, strict=True)]
    assert sum((g or 0.0) * s for g, s in zip(growth, secs, strict=True)) == \
        pytest.approx(sizes["after"] - sizes["before"], rel=0.02)
    row = next(r for r in rel["tables"][0]["rows"] if r[0] == name)
    assert row[1] == sizes["after"] and row[5] == sizes["after"] - sizes["before"]

    # the rows the INSERT wrote, as a rate over the reading's period in the
    # chart, and in the table per second of the time the readings cover
    # (the intervals the chart has a value for: up to the last reading of
    # the database, which pgbench -S's index scans of pgbench_accounts
    # show every second)
    tab = by_id["tables"]
    trow = next(r for r in tab["tables"][0]["rows"] if r[0] == name)
    written = next(s for s in {c["id"]: c for c in tab["charts"]}["tables.written"]["series"]
                   if s["label"] == name)["values"]
    assert sum((v or 0.0) * s for v, s in zip(written, secs, strict=True)) == pytest.approx(ROWS, rel=0.02)
    # (whole intervals: the window's first starts at the snapshot before the run)
    seconds = float(server.psql("SELECT extract(epoch FROM run_to - run_from) "
                                "FROM chronicle.run_window('rel-run')"))
    covered = sum(s for v, s in zip(written, secs, strict=True) if v is not None)
    assert seconds - 3 <= covered <= seconds + 1.01
    assert trow[1] * covered == pytest.approx(ROWS, rel=0.02)
    # and the size's growth per second over the same time
    assert row[6] * covered == pytest.approx(sizes["after"] - sizes["before"], rel=0.02)


def _window() -> panels.Window:
    """A window of 6 intervals of 1 s."""
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    ends = [t0 + timedelta(seconds=i + 1) for i in range(6)]
    return panels.Window(run="r", run_id=1, from_ts=t0, to_ts=ends[-1], started=t0, ended=ends[-1],
                         server_version="17", meta={}, settings={}, environment={}, ends=ends,
                         starts=[e - timedelta(seconds=1) for e in ends])


def test_per_reading_spreads_a_periods_count() -> None:
    w = _window()
    # readings at intervals 2 and 5: 30 over the first three seconds, 6 over the next three
    assert panels.per_reading(w, [0.0, 0.0, 30.0, 0.0, 0.0, 6.0]) == [10.0, 10.0, 10.0, 2.0, 2.0, 2.0]
    # after the last reading: not known yet; a reset starts a new period
    assert panels.per_reading(w, [4.0, 0.0, None, 0.0, 3.0, 0.0]) == [4.0, None, None, 1.5, 1.5, None]


def test_table_activity_per_second_of_what_the_readings_cover() -> None:
    w = _window()
    ends = w.ends

    def row(i: int, name: str, ins: float, dead: int = 0, size: int = 8192) -> dict:
        r: dict = dict.fromkeys(panels.RELATION_COUNTERS, 0)
        r.update(interval_end=ends[i], datname="db", relation=name, n_tup_ins=ins, total_bytes=size,
                 main_bytes=size, index_bytes=0, toast_bytes=0, n_live_tup=0, n_dead_tup=dead)
        return r

    # the database read at intervals 1 and 3 (t moves then: 30 rows, then
    # 20, 2 a second), then nothing moves: its readings show up to
    # interval 3, the rest of the window no reading has seen
    rows = [row(i, "t", {1: 30.0, 3: 20.0}.get(i, 0.0)) for i in range(6)]
    # u is idle at interval 1 but a dead tuple shows at 3 (a reading): its
    # count there is over that period (2 s), not since the window's start
    # (and grows by a page: 8192 bytes over the 4 s read, 2048 a second)
    rows += [row(i, "u", {3: 8.0}.get(i, 0.0), dead=1 if i >= 3 else 0, size=16384 if i >= 3 else 8192)
             for i in range(6)]
    assert panels.readings(w, rows) == {"db": [False, True, False, True, False, False]}
    totals = [{"datname": "db", "relation": n, **dict.fromkeys(panels.RELATION_COUNTERS, 0),
               "n_tup_ins": v} for n, v in (("t", 50), ("u", 8))]
    p = panels.tables_panel(w, rows, totals)
    table = {r[0]: r for r in p["tables"][0]["rows"]}
    # t: 50 rows over the 4 s the readings cover, not the window's 6
    assert table["db: t"][1] == 12.5
    # u: 8 rows in the period (1, 3], 0 before: 8 over 4 s
    assert table["db: u"][1] == 2.0
    written = {s["label"]: s["values"] for s in p["charts"][0]["series"]}
    assert written["db: t"] == [15.0, 15.0, 10.0, 10.0, None, None]
    assert written["db: u"] == [0.0, 0.0, 4.0, 4.0, None, None]
    sizes = {r[0]: r for r in panels.relations_panel(w, rows)["tables"][0]["rows"]}
    assert sizes["db: u"][5:] == [8192, 2048.0] and sizes["db: t"][5:] == [0, 0.0]
