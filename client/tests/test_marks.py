"""Marks: pg-chronicle mark records an event (chronicle.mark) and the
report draws it on every time chart of the run that holds it, with its
text, and lists it; bad input is a clear error that records nothing."""

from __future__ import annotations

import pathlib
import re
from datetime import timedelta
from typing import get_args

import pytest

from pg_chronicle import panels, plots
from pg_chronicle.model import MarkKind

from conftest import Server, cli, wait_for
from report_runs import MARKUP, UNTRUSTED, page_json, report_data

# What this checks does not depend on the server's version (chronicle.mark()
# is tested on every version by the regression test marks): tools/test.sh
# runs it against the newest one only.
pytestmark = pytest.mark.one_version

EVENT = "COPY started " + UNTRUSTED


def _marks(server: Server) -> int:
    return int(server.psql("SELECT count(*) FROM chronicle.mark"))


def test_mark_on_every_time_chart(server: Server, tmp_path: pathlib.Path) -> None:
    bench = cli(server, "bench", "--label", "marks-run", "--", "-n", "-S", "-c", "1", "-T", "3")
    assert bench.returncode == 0, bench.stderr
    with server.connect() as conn:
        started, ended = conn.execute(
            "SELECT started, ended FROM chronicle.run WHERE label = 'marks-run'").fetchone()
    at = started + timedelta(seconds=1.5)
    p = cli(server, "mark", EVENT, "--at", at.isoformat())
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("mark ") and at.isoformat() in p.stdout
    # the table holds it as given, owned by the login role
    with server.connect() as conn:
        row = conn.execute("SELECT event, ts, owner = session_user FROM chronicle.mark"
                           " WHERE event = %s", (EVENT,)).fetchone()
    assert row == (EVENT, at, True)
    # a mark after the run is not the run's
    after = (ended + timedelta(seconds=5)).isoformat()
    assert cli(server, "mark", "after the run", "--at", after).returncode == 0

    out = tmp_path / "report"
    r = cli(server, "report", "marks-run", "-o", str(out))
    assert r.returncode == 0, r.stderr
    data = report_data(out / "index.html")
    time_charts = [c for p in data["panels"] for c in p["charts"] if c["kind"] == "time"]
    assert len(time_charts) >= 5
    for c in time_charts:
        mine = [m for m in c["marks"] if m["kind"] == "mark"]
        assert [(m["label"], m["x"]) for m in mine] == [(EVENT, at.timestamp())], c["id"]
    # a distribution has its percentiles marked, not the window's events
    for c in (c for p in data["panels"] for c in p["charts"] if c["kind"] != "time"):
        assert {m["kind"] for m in c["marks"]} <= {"p50", "p99"}, c["id"]
    # listed with the window's other events, the script's own marked
    (table,) = [t for p in data["panels"] for t in p["tables"] if t["id"] == "throughput.marks"]
    rows = [r for r in table["rows"] if r[2] == "mark"]
    assert [(r[3], r[1]) for r in rows] == [(EVENT, round(at.timestamp() - started.timestamp(), 3))]
    assert [table["rows"][i][2] for i in table["marked"]] == ["mark"]
    # the text is data in the page: its markup never reaches the HTML raw
    html = (out / "index.html").read_text("utf-8")
    assert "<script> </script><b>" not in html
    assert all("</script" not in j.lower() for j in page_json(out / "index.html"))
    # and the pictures are drawn
    assert (out / "throughput.png").stat().st_size > 0


def test_mark_bad_input(server: Server) -> None:
    before = _marks(server)
    for args, message in ((["  "], "a mark needs an event"),
                          (["x" * 201], "at most 200 characters"),
                          (["x", "--at", "not a time"], "invalid input syntax"),
                          (["x", "--at", "infinity"], "must be a finite time")):
        p = cli(server, "mark", *args)
        assert p.returncode == 2, (args, p)
        assert message in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)
    assert _marks(server) == before


def test_every_kind_is_drawn_and_named() -> None:
    """Each kind of mark has a style in the page and in the pictures; each
    kind chronicle.marks() returns (all but the latency distribution's
    percentiles) a name in the Events table."""
    js = (pathlib.Path(plots.__file__).parent / "report_assets" / "report.js").read_text("utf-8")
    (block,) = re.findall(r"var MARK_STYLE = \{(.*?)\n\};", js, re.S)
    in_js = set(re.findall(r"^\s*(\w+):", block, re.M))
    kinds = set(get_args(MarkKind))
    assert in_js == kinds
    assert set(plots.MARK_STYLE) == kinds
    assert set(panels.MARK_KINDS) == kinds - {"p50", "p99"}


def test_vacuum_marks(server: Server, tmp_path: pathlib.Path) -> None:
    """A slow manual VACUUM of a table whose name is markup: its start and end
    are marks on every time chart of a run around it and rows of the Events
    table, the name as text."""
    ident = '"' + MARKUP.replace('"', '""') + '"'
    event = f"VACUUM public.{MARKUP} (database postgres)"
    with server.connect() as conn:
        conn.execute(f"CREATE TABLE {ident} (i int, j int) WITH (autovacuum_enabled = false)")
        conn.execute(f"INSERT INTO {ident} SELECT i, i FROM generate_series(1, 60000) i")
        conn.execute(f"DELETE FROM {ident} WHERE i % 2 = 0")
        (t0,) = conn.execute("SELECT clock_timestamp()").fetchone()
        conn.execute("SET vacuum_cost_limit = 1")
        conn.execute("SET vacuum_cost_delay = 10")
        conn.execute(f"VACUUM {ident}")

    def ended() -> bool:
        with server.connect() as conn:
            return bool(conn.execute("SELECT count(*) FROM chronicle.marks(%s, now())"
                                     " WHERE kind = 'vacuum_end' AND event LIKE %s",
                                     (t0, event + "%")).fetchone()[0])
    wait_for(ended, "the VACUUM's end mark")
    try:
        with server.connect() as conn:
            conn.execute("SELECT chronicle.run_label('vacuum-marks', %s, now())", (t0,))
        out = tmp_path / "report"
        r = cli(server, "report", "vacuum-marks", "-o", str(out))
        assert r.returncode == 0, r.stderr
        data = report_data(out / "index.html")
        time_charts = [c for p in data["panels"] for c in p["charts"] if c["kind"] == "time"]
        assert time_charts
        for c in time_charts:
            mine = sorted((m["kind"], m["label"]) for m in c["marks"] if m["kind"].startswith("vacuum")
                          and MARKUP in m["label"])
            assert [k for k, _ in mine] == ["vacuum_end", "vacuum_start"], c["id"]
            assert mine[1][1] == event
            assert re.fullmatch(re.escape(event) + r" ended after \d+\.\d s", mine[0][1])
        (table,) = [t for p in data["panels"] for t in p["tables"] if t["id"] == "throughput.marks"]
        assert {r[2] for r in table["rows"] if MARKUP in r[3]} == {"vacuum start", "vacuum end"}
        # the name is data in the page: never markup
        html = (out / "index.html").read_text("utf-8")
        assert MARKUP not in html
        assert all("</script" not in j.lower() for j in page_json(out / "index.html"))
    finally:
        server.psql("SELECT chronicle.run_delete('vacuum-marks')")
        with server.connect() as conn:
            conn.execute(f"DROP TABLE {ident}")
