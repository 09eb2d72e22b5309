"""The runs the report tests read, recorded once per test session (shared by
test_report.py and test_browser.py): two short pgbench runs through
pg-chronicle bench (per-transaction logs kept as the reference), one run
without a pgbench log (run_begin, pgbench without -l, run_end), two runs
whose text is hostile (untrusted()), and their reports written by
pg-chronicle report."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import pathlib
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import Server, cli, wait_for

_CACHE: dict[str, Any] = {}
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


def page_json(index: pathlib.Path) -> list[str]:
    """The text of every JSON script element of a page, as written."""
    return re.findall(r'<script type="application/json"[^>]*>(.*?)</script>',
                      index.read_text("utf-8"), re.S)


# Text a monitoring role can put where the client shows it (a run label,
# meta, settings, the environment, a statement): markup, a comment opened
# before a script tag (the HTML parser then skips past the next
# "</script>"), the page's own placeholders, mathtext between two "$",
# a legend label's leading "_", terminal control sequences (the window
# title, clear screen, a C1 CSI).
UNTRUSTED = "<!--<script> </script><b>&amp; @@APP_JS@@ $\\foo$ $a_b_c$ _x \x1b]0;pwned\x07\x1b[2J\x9b1m"


@dataclasses.dataclass
class UntrustedRuns:
    a: str                      # recorded by pg-chronicle bench
    b: str                      # chronicle.run_label() over a's range
    bench: subprocess.CompletedProcess[str]
    report: pathlib.Path        # the folders pg-chronicle report wrote, and its runs
    report_vs: pathlib.Path
    reports: list[subprocess.CompletedProcess[str]]


def untrusted(srv: Server, tmp: pathlib.Path) -> UntrustedRuns:
    """Two runs whose label, meta, settings, environment, top statement and
    a mark hold UNTRUSTED, and their reports (alone and --vs)."""
    if "untrusted" in _CACHE:
        return _CACHE["untrusted"]
    a, b = "_u-a " + UNTRUSTED, "_u-b " + UNTRUSTED
    script = tmp / "untrusted.sql"
    # pg_stat_statements keeps the text, its comments too, with the
    # constants as $1, $2, $3
    script.write_text(f"SELECT pg_sleep(0.05), 1 AS a_b_c, /* {UNTRUSTED} */ 2;\n")
    bench = cli(srv, "bench", "--label", a, "--meta", f"note={UNTRUSTED}", "--",
                "-n", "-c", "1", "-T", "2", "-f", str(script))
    assert bench.returncode == 0, bench
    with srv.connect() as conn:
        # what a role's own settings (ALTER ROLE ... SET) and the server's
        # environment can hold, set here directly
        conn.execute("UPDATE chronicle.run"
                     "   SET settings = settings || jsonb_build_object('search_path', %s::text),"
                     "       environment = environment || jsonb_build_object('untrusted', %s::text)"
                     " WHERE label = %s", (UNTRUSTED, UNTRUSTED, a))
        conn.execute("SELECT chronicle.run_label(%s, r.started, r.ended) FROM chronicle.run r"
                     " WHERE r.label = %s", (b, a))
        # a mark in the middle of the run, drawn on every time chart
        conn.execute("SELECT chronicle.mark(%s, r.started + (r.ended - r.started) / 2)"
                     "  FROM chronicle.run r WHERE r.label = %s", (UNTRUSTED, a))
    out = {}
    reports = []
    for name, args in (("a", [a]), ("vs", [a, "--vs", b])):
        d = tmp / f"report-untrusted-{name}"
        reports.append(cli(srv, "report", *args, "-o", str(d)))
        out[name] = d
    runs = UntrustedRuns(a, b, bench, out["a"], out["vs"], reports)
    _CACHE["untrusted"] = runs
    return runs


PICTURE_FAILURE = "RuntimeError: no picture today (a second line)"


@contextlib.contextmanager
def failing_picture(panel_id: str) -> Iterator[None]:
    """Drawing the picture of panel_id raises, with a message of two lines
    (plots.figure() replaced in this process and the drawing processes it
    forks); the other panels are drawn as usual."""
    from pg_chronicle import plots
    real = plots.figure

    def figure(panel: dict, meta: dict) -> Any:
        if panel["id"] == panel_id:
            raise RuntimeError("no picture today\n(a second line)")
        return real(panel, meta)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(plots, "figure", figure)
        yield


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
