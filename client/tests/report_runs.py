"""The runs the report tests read, recorded once per test session (shared by
test_report.py and test_browser.py): two short pgbench runs through
pg-chronicle bench (per-transaction logs kept as the reference), one run
without a pgbench log (run_begin, pgbench without -l, run_end), and their
reports written by pg-chronicle report."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re
import subprocess

from conftest import Server, cli, wait_for

_CACHE: dict[str, "ReportRuns"] = {}
MARKUP = "</script><img src=x onerror=window.__pwned=1>"


@dataclasses.dataclass
class ReportRuns:
    a: str                      # labels
    b: str
    nolog: str
    logdir_a: pathlib.Path      # pgbench's per-transaction logs of run a
    report_a: pathlib.Path      # the folders pg-chronicle report wrote
    report_b: pathlib.Path
    report_nolog: pathlib.Path
    report_vs: pathlib.Path


def intervals_of(srv: Server, label: str) -> int:
    """The snapshot intervals of a run counted from chronicle.snapshot (the
    reference for the report's points): snapshots in (started, ended] that
    have an earlier snapshot of the same recording."""
    return int(srv.psql(f"""
        SELECT count(*) FROM chronicle.run r, chronicle.snapshot s
         WHERE r.label = '{label}' AND s.ts > r.started AND s.ts <= r.ended
           AND EXISTS (SELECT FROM chronicle.snapshot p WHERE p.segment = s.segment AND p.ts < s.ts)"""))


def report_data(index: pathlib.Path) -> dict:
    """The JSON the page embeds (what its charts draw)."""
    text = index.read_text("utf-8")
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', text, re.S)
    assert m, "index.html embeds its data"
    data = json.loads(m.group(1))
    # as the page does: each chart's x values from the shared arrays
    for p in data["panels"]:
        for c in p["charts"]:
            c["x"] = data["xs"][c["xref"]]
    return data


def get(srv: Server, tmp: pathlib.Path) -> ReportRuns:
    if "runs" in _CACHE:
        return _CACHE["runs"]
    a, b, nolog = "rep-a", "rep-b", "rep-nolog"
    logdir = tmp / "logs-a"
    logdir.mkdir()
    cli(srv, "bench", "--label", a, "--keep-logs", str(logdir), "--",
        "-c", "2", "-j", "2", "-T", "6", check=True)
    cli(srv, "bench", "--label", b, "--", "-c", "4", "-j", "2", "-T", "6", check=True)
    srv.psql(f"SELECT chronicle.run_begin('{nolog}')")
    subprocess.run([str(srv.bindir / "pgbench"), "-c", "2", "-T", "4", "-n"], env=srv.env(),
                   check=True, capture_output=True)
    # a statement whose text is markup: the page must show it as text
    srv.psql(f'SELECT count(*) AS "{MARKUP}" FROM pgbench_accounts')
    # a snapshot after it, inside the run
    t = srv.psql("SELECT now()")
    wait_for(lambda: srv.psql(f"SELECT count(*) FROM chronicle.snapshot WHERE ts > '{t}'") != "0",
             "a snapshot after the statement")
    srv.psql(f"SELECT chronicle.run_end('{nolog}')")
    out = {}
    for name, args in (("a", [a]), ("b", [b]), ("nolog", [nolog]), ("vs", [a, "--vs", b])):
        d = tmp / f"report-{name}"
        p = cli(srv, "report", *args, "-o", str(d), check=True)
        assert p.stdout.strip() == str(d / "index.html")
        out[name] = d
    runs = ReportRuns(a, b, nolog, logdir, out["a"], out["b"], out["nolog"], out["vs"])
    _CACHE["runs"] = runs
    return runs
