"""Marks: pg-chronicle mark records an event (chronicle.mark) and the
report draws it on every time chart of the run that holds it, with its
text, and lists it; bad input is a clear error that records nothing."""

from __future__ import annotations

import pathlib
from datetime import timedelta

import pytest

from conftest import Server, cli
from report_runs import UNTRUSTED, page_json, report_data

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
