"""Text from the database is data wherever the client shows it.  Runs whose
label, meta, settings, environment and top statement hold markup, the
page's placeholders, mathtext and terminal control sequences
(report_runs.UNTRUSTED) are reported whole: every panel with its pictures,
the page's JSON intact, nothing in the terminal it would act on.  A run
whose bounds Python cannot hold (infinity, BC, after year 9999) does not
break the list of runs.  A panel whose picture fails leaves the rest of the
report."""

from __future__ import annotations

import html
import pathlib
import xml.etree.ElementTree as ET

import pytest

from pg_chronicle import cli as pg_chronicle_cli
from pg_chronicle import report

import report_runs
from conftest import Server, cli
from report_runs import UNTRUSTED

# UNTRUSTED as the terminal shows it: its control characters escaped
SHOWN = UNTRUSTED.replace("\x1b", "\\x1b").replace("\x07", "\\x07").replace("\x9b", "\\x9b")


def assert_terminal_safe(out: str) -> None:
    """No character a terminal acts on but newline and tab: C0, DEL, C1."""
    bad = sorted({f"{ord(c):#04x}" for c in out
                  if (ord(c) < 0x20 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f})
    assert not bad, (bad, out)


@pytest.fixture(scope="module")
def runs(server: Server, tmp_path_factory: pytest.TempPathFactory) -> report_runs.UntrustedRuns:
    return report_runs.untrusted(server, tmp_path_factory.mktemp("untrusted"))


def test_reports_of_untrusted_text(runs: report_runs.UntrustedRuns) -> None:
    for proc, d in zip(runs.reports, (runs.report, runs.report_vs), strict=True):
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == "" and proc.stdout == f"{d / 'index.html'}\n"
        index = d / "index.html"
        page = index.read_text("utf-8")
        assert f"<title>pg_chronicle report: {html.escape(runs.a)}" in page
        # the page's JSON holds no character HTML acts on, and gives back
        # every string as the database has it
        (text,) = report_runs.page_json(index)
        assert not set("<>&") & set(text)
        data = report_runs.report_data(index)
        assert data["meta"]["run"] == runs.a
        tables = {t["id"]: t for p in data["panels"] for t in p["tables"]}
        for p in data["panels"]:
            assert "picture_error" not in p, p["picture_error"]
            assert (d / f"{p['id']}.png").stat().st_size > 0
            ET.parse(d / f"{p['id']}.svg")      # well-formed: no control character
        if data["meta"]["vs"] is None:
            assert any(UNTRUSTED in r[0] for r in tables["statements.top"]["rows"])
            run = dict(tables["settings.run"]["rows"])
            assert run["label"] == runs.a and run["meta: note"] == UNTRUSTED
            assert ["search_path", UNTRUSTED] in tables["settings.settings"]["rows"]
            assert ["untrusted", UNTRUSTED] in tables["settings.environment"]["rows"]
        else:
            assert data["meta"]["vs"] == runs.b
            assert ["search_path", UNTRUSTED, None] in tables["compare.settings"]["rows"]
            assert ["untrusted", UNTRUSTED] in [r[:2] for r in tables["compare.environment"]["rows"]]
            labels = [s["label"] for p in data["panels"] for c in p["charts"] for s in c["series"]]
            assert f"{runs.a}: commits/s (pg_stat_database)" in labels


def test_terminal_output_of_untrusted_text(server: Server, runs: report_runs.UntrustedRuns,
                                           tmp_path: pathlib.Path) -> None:
    # bench's summary (its stderr is pgbench's too: only its own lines here)
    assert_terminal_safe(runs.bench.stdout)
    assert f"run {runs.a.replace(UNTRUSTED, SHOWN)}: " in runs.bench.stdout
    ours = [ln for ln in runs.bench.stderr.splitlines() if ln.startswith("pg-chronicle:")]
    assert SHOWN in ours[0]
    assert_terminal_safe("\n".join(ours))
    p = cli(server, "runs")
    assert p.returncode == 0 and p.stderr == ""
    assert_terminal_safe(p.stdout)
    row = next(ln for ln in p.stdout.splitlines() if ln.startswith("_u-a "))
    assert row.startswith(runs.a.replace(UNTRUSTED, SHOWN)) and "note=<!--<script>" in row
    p = cli(server, "compare", runs.a, runs.b)
    assert p.returncode == 0 and p.stderr == ""
    assert_terminal_safe(p.stdout)
    (row,) = [ln for ln in p.stdout.splitlines() if ln.startswith("search_path ")]
    assert SHOWN in row and row.endswith("  -")
    # the hint of an unknown run names every run: still one line
    p = cli(server, "report", "no-such-run", "-o", str(tmp_path / "never"))
    assert p.returncode == 2 and p.stdout == ""
    assert_terminal_safe(p.stderr)
    assert len(p.stderr.splitlines()) == 1 and SHOWN in p.stderr


def test_a_panel_that_cannot_be_drawn(server: Server, runs: report_runs.UntrustedRuns,
                                      tmp_path: pathlib.Path, capfd: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r"
    with report_runs.failing_picture("waits"):
        assert pg_chronicle_cli.main(["-d", server.conninfo, "report", runs.a, "-o", str(out)]) == 0
    cap = capfd.readouterr()
    assert cap.out == f"{out / 'index.html'}\n"
    assert cap.err.splitlines() == [
        "pg-chronicle: warning: the picture of panel waits could not be drawn "
        f"({report_runs.PICTURE_FAILURE}); the rest of the report is written"]
    data = report_runs.report_data(out / "index.html")
    assert [p["id"] for p in data["panels"]] == report.PANELS
    for p in data["panels"]:
        if p["id"] == "waits":
            assert p["picture_error"] == report_runs.PICTURE_FAILURE
            assert not (out / "waits.png").exists() and not (out / "waits.svg").exists()
        else:
            assert "picture_error" not in p
            assert (out / f"{p['id']}.png").stat().st_size > 0
            assert (out / f"{p['id']}.svg").stat().st_size > 0


# bounds Python's datetime cannot hold, as a superuser can still store them
# (chronicle.run_label() refuses infinite ones)
UNBOUNDED = {"u-inf": ("-infinity", "infinity"), "u-open-inf": ("infinity", None),
             "u-bc": ("0044-03-15 12:00+00 BC", "0044-03-15 13:00+00 BC"),
             "u-10k": ("10000-01-01 00:00+00", "10000-01-02 00:00+00")}


def test_runs_whose_bounds_python_cannot_hold(server: Server, tmp_path: pathlib.Path) -> None:
    with server.connect() as conn:
        conn.execute("SELECT chronicle.run_label('u-finite', now() - interval '1 min', now())")
        conn.execute("SET session_replication_role = replica")    # past any trigger
        for label, (f, t) in UNBOUNDED.items():
            conn.execute("INSERT INTO chronicle.run (label, started, ended) "
                         "VALUES (%s, %s::timestamptz, %s::timestamptz)", (label, f, t))
    try:
        p = cli(server, "runs")
        assert p.returncode == 0 and p.stderr == "", p
        rows = {ln.split()[0]: ln for ln in p.stdout.splitlines()[2:]}
        assert "u-finite" in rows
        # label, server, (version: none), started, ended, duration
        assert rows["u-inf"].split()[-3:] == ["-infinity", "infinity", "-"]
        assert rows["u-open-inf"].split()[-3:] == ["infinity", "(open)", "-"]
        assert "BC" in rows["u-bc"] and "10000-01-01" in rows["u-10k"].split()
        # a report or a comparison of such a run: a one-line error
        for args in (["compare", "u-inf", "u-finite"], ["report", "u-10k", "-o", str(tmp_path)]):
            p = cli(server, *args)
            assert p.returncode == 2 and "Traceback" not in p.stderr, p
            assert "is not a finite time range" in p.stderr and len(p.stderr.splitlines()) == 1
    finally:
        server.psql("DELETE FROM chronicle.run WHERE label LIKE 'u-%'")
