"""The client's functions that need no server: terminal formatting, the
summary and comparison text, the report's panels built from rows, the
comparison's merge, the page's data and the pictures' helpers, bench's and
the command line's argument handling.  Every expected value is written out
here (computed by hand from the inputs), not taken from the code under
test.  No server: these run without PG_CONFIG."""

from __future__ import annotations

import argparse
import dataclasses
import fractions
import json
import math
import pathlib
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from pg_chronicle import bench, cli, compare, db, drawing, html, panels, plots, report, summary, text, trials
from pg_chronicle.model import Chart, Meta, Panel

T0 = datetime(2026, 11, 24, 4, 11, 4, tzinfo=UTC)


def window(run: str = "r", n: int = 4, start: datetime = T0, step: float = 1.0,
           **kw: Any) -> panels.Window:
    """A window of n intervals of step seconds, the first ending 1 step after start."""
    ends = [start + timedelta(seconds=step * (i + 1)) for i in range(n)]
    args: dict[str, Any] = {"run": run, "run_id": 1, "from_ts": start, "to_ts": ends[-1],
                            "started": start, "ended": ends[-1], "server_version": "17.11",
                            "meta": {}, "settings": {}, "environment": {}}
    args.update(kw)
    return panels.Window(**args, ends=ends, starts=[e - timedelta(seconds=step) for e in ends])


# ---------------------------------------------------------------------------
# text: the terminal

def test_visible_escapes_control_characters() -> None:
    assert text.visible("a\x1b]0;t\x07b\tc\nd\x7f\x9b1m é€") == \
        "a\\x1b]0;t\\x07b\\x09c\\x0ad\\x7f\\x9b1m é€"
    assert text.visible("plain") == "plain"


def test_echo_escapes_every_line(capsys: pytest.CaptureFixture[str]) -> None:
    text.echo("one\x1b[2J\ntwo\x07")
    assert capsys.readouterr().out == "one\\x1b[2J\ntwo\\x07\n"


@pytest.mark.parametrize(("value", "shown"), [
    (None, "-"), (0, "0"), (0.0, "0"), (2731.4, "2,731"), (12345.6, "12,346"),
    (273.14, "273"), (27.314, "27.3"), (2.7314, "2.73"), (0.027314, "0.0273"),
    (-1.5, "-1.50"), (1000, "1,000"), (999, "999"),
])
def test_num(value: float | None, shown: str) -> None:
    assert text.num(value) == shown


@pytest.mark.parametrize(("value", "shown"), [
    (None, "-"), (0, "0 B"), (512, "512 B"), (1023, "1,023 B"), (1024, "1.00 kB"),
    (7.74 * 1024, "7.74 kB"), (20.7 * 1024 ** 2, "20.7 MB"), (3 * 1024 ** 3, "3.00 GB"),
    (2048 * 1024 ** 4, "2,048 TB"),
])
def test_nbytes(value: float | None, shown: str) -> None:
    assert text.nbytes(value) == shown


def test_nbytes_suffix_pct_duration() -> None:
    assert text.nbytes(336 * 1024, "/s") == "336 kB/s"
    assert text.pct(0.961) == "96.1 %" and text.pct(1.0) == "100.0 %" and text.pct(None) == "-"
    assert text.duration(3.7) == "3.7 s" and text.duration(None) == "-"
    assert text.duration(125) == "2:05 min"          # 2 min 5 s
    assert text.duration(3725.4) == "1:02:05"       # 1 h 2 min 5 s


def test_when() -> None:
    assert text.when(T0) == "2026-11-24 04:11:04"
    assert text.when(T0, "%H:%M") == "04:11"
    # a bound Python cannot hold comes as the server's text
    assert text.when("infinity") == "infinity"


def test_table_aligns_and_escapes() -> None:
    out = text.table(["name", "n", "x"], [["a\x1b", 1, None], ["bbbb", 22.5, "y"]])
    assert out.splitlines() == [
        "name      n  x",           # "a\x1b" is 5 characters wide: "a\x1b" shown as a\x1b
        "-----  ----  -",
        "a\\x1b     1",
        "bbbb   22.5  y",
    ]
    out = text.table(["a", "b"], [["1", "2"]], right=[True, False])
    assert out.splitlines() == ["a  b", "-  -", "1  2"]


# ---------------------------------------------------------------------------
# summary: bench's one screen, the list of runs

def run_summary(**kw: Any) -> summary.RunSummary:
    base = summary.RunSummary(
        label="m2", started=T0, ended=T0 + timedelta(seconds=3.7), seconds=3.7, meta={},
        transactions=8196, basis="transactions", tps=2731.0, latency_mean_ms=1.46,
        latency_p50_ms=1.34, latency_p99_ms=4.21, latency_max_ms=13.8, failures=0, skipped=0,
        server={"seconds": 3.7, "commits_per_s": 2735.0, "hit_ratio": 0.961, "checkpoints": 0.0,
                "wal_bytes_per_s": 16_000.0, "wal_fpi_per_s": 2000.0, "read_bytes_per_s": 20.1 * 1024 ** 2,
                "write_bytes_per_s": 0.0, "checkpointer_write_bytes_per_s": 0.0,
                "client_write_bytes_per_s": 0.0, "extend_bytes_per_s": 336 * 1024.0,
                "fsyncs_per_s": 0.0, "active_processes": 2.99, "wal_bytes_per_commit": 5.0,
                "wal_fpi_per_commit": 0.5},
        waits=[summary.Wait("Client:ClientRead", "client backend", 0.41, 1.2),
               summary.Wait("CPU", "client backend", 0.305, 0.9)],
        wait_coverage=1.0)
    return dataclasses.replace(base, **kw)


def test_wal_per_transaction() -> None:
    s = run_summary()
    # 16,000 B/s over 3.7 s = 59,200 B over 8,196 transactions
    assert s.wal_bytes_total == pytest.approx(59_200.0)
    assert s.wal_bytes_per_transaction == pytest.approx(59_200 / 8196)
    assert s.wal_fpi_per_transaction == pytest.approx(7400 / 8196)
    # no pgbench log: per commit of the server, as run_summary() has it
    s = run_summary(transactions=0)
    assert s.wal_bytes_per_transaction == 5.0 and s.wal_fpi_per_transaction == 0.5


def test_format_summary() -> None:
    lines = summary.format_summary(run_summary()).splitlines()
    assert lines[0] == "run m2: 2026-11-24 04:11:04+0000 .. 04:11:07 (3.7 s)"
    assert lines[1] == "  pgbench     8,196 transactions, 2,731 tps"
    assert lines[2] == "  latency     p50 1.34 ms, p99 4.21 ms, max 13.8 ms (mean 1.46 ms)"
    assert lines[3] == "  server      2,735 commits/s, hit ratio 96.1 %, 0 checkpoints"
    # 59,200 / 8,196 = 7.22 B; 7,400 / 8,196 = 0.903 images; 16,000 B/s = 15.6 kB/s
    assert lines[4] == ("  WAL         7.22 B per pgbench transaction, 0.903 full-page images per pgbench "
                        "transaction, "
                        "15.6 kB/s")
    assert lines[5] == ("  I/O         read 20.1 MB/s, write 0 B/s (checkpointer 0 B/s, backends 0 B/s), "
                        "extend 336 kB/s, 0 fsyncs/s")
    assert lines[6] == ("  top waits   (share of database time; 2.99 active sessions on average; "
                        "sampler coverage 100.0 %)")
    assert lines[7:] == ["     41.0 %  Client:ClientRead  (client backend)",
                         "     30.5 %  CPU  (client backend)"]


def test_format_summary_without_log_aggregates_and_failures() -> None:
    lines = summary.format_summary(run_summary(transactions=0, waits=[], ended=None)).splitlines()
    assert lines[0].endswith(".. (open) (3.7 s)")
    assert lines[1] == "  pgbench     no log loaded"
    assert "per server commit" in lines[3] and lines[-1] == "  top waits   no active session sampled"
    lines = summary.format_summary(run_summary(basis="aggregates", failures=3, skipped=1200)).splitlines()
    assert lines[1] == "  pgbench     8,196 transactions, 2,731 tps, 3 failed, 1,200 skipped"
    assert lines[2] == "  latency     mean 1.46 ms, max 13.8 ms (aggregate log: no percentiles)"


def test_meta_text() -> None:
    meta = {"pgbench": "pgbench -c 4", "clients": 4, "tool": "pg-chronicle", "argv": ["-c", "4"],
            "zz": "user's", "scale": 5, "a": {"b": 1}}
    assert summary._meta_text(meta) == 'zz=user\'s a={"b": 1} clients=4 scale=5 pgbench=pgbench -c 4'
    long = summary._meta_text({"k": "x" * 100})
    assert len(long) == 80 and long == "k=" + "x" * 75 + "..."


# ---------------------------------------------------------------------------
# compare: the load profile in the terminal

def test_load_profile_table() -> None:
    rows = [{"metric": "WAL", "unit": "bytes", "a_per_second": 3.15 * 1024 ** 2,
             "b_per_second": 1.93 * 1024 ** 2, "a_per_transaction": 2.19 * 1024,
             "b_per_transaction": 1.55 * 1024, "ratio": 0.7078, "marked": True},
            {"metric": "commits", "unit": "transactions", "a_per_second": 1475.2, "b_per_second": 1270.0,
             "a_per_transaction": None, "b_per_transaction": None, "ratio": 0.861, "marked": True},
            {"metric": "rollbacks", "unit": None, "a_per_second": 0, "b_per_second": 0,
             "a_per_transaction": 0, "b_per_transaction": 0, "ratio": None, "marked": False}]
    out = compare.load_profile_table(rows).splitlines()
    assert out[0].split() == ["metric", "unit", "A", "per", "s", "B", "per", "s", "A", "per", "tx",
                              "B", "per", "tx", "B/A"]
    assert out[2].split() == ["WAL", "bytes", "3.15", "MB", "1.93", "MB", "2.19", "kB", "1.55", "kB",
                              "0.71", "*"]
    assert out[3].split() == ["commits", "transactions", "1,475", "1,270", "-", "-", "0.86", "*"]
    assert out[4].split() == ["rollbacks", "0", "0", "0", "0", "-"]


# ---------------------------------------------------------------------------
# trials: the statistics of a configuration's runs (values computed by hand)

def test_trial_labels() -> None:
    assert trials.trial_label("off", 3) == "off#3"
    assert trials.parse_trial("off#3") == ("off", 3)
    assert trials.parse_trial("wal=lz4 #2#12") == ("wal=lz4 #2", 12)
    for not_a_trial in ("off", "off#", "#2", "off#0", "off#03", "off#2a", "off#-1"):
        assert trials.parse_trial(not_a_trial) is None, not_a_trial


def test_trial_spread() -> None:
    assert trials.spread([]) is None
    s = trials.spread([104.0, 98.0, 100.0])
    assert s == trials.Spread(n=3, median=100.0, low=98.0, high=104.0)
    assert s is not None and s.relative == pytest.approx(0.06)       # (104 - 98) / 100
    # an even count: the mean of the middle two
    assert trials.spread([4.0, 1.0, 3.0, 2.0]) == trials.Spread(n=4, median=2.5, low=1.0, high=4.0)
    z = trials.spread([0.0, 0.0])
    assert z is not None and z.relative is None


def test_trial_comparison_beyond_the_spread() -> None:
    # A 98, 100, 104; B 105, 106, 110: medians 100 and 106, ratio 1.06; the
    # pairwise ratios b/a range from 105/104 = 1.00962 to 110/98 = 1.12245
    c = trials.compare_values([100.0, 98.0, 104.0], [106.0, 110.0, 105.0])
    assert c.ratio == pytest.approx(1.06)
    assert c.low == pytest.approx(1.009615, abs=1e-6) and c.high == pytest.approx(1.122449, abs=1e-6)
    assert c.verdict == "beyond"
    assert trials.verdict_text(c, faster=True) == "B is 6.0 % faster, beyond the trials' spread"
    assert trials.verdict_text(c) == "B is 6.0 % higher, beyond the trials' spread"
    # lower: latency 2.0, 2.1, 2.2 against 1.9, 1.8, 1.95: ratio 1.9 / 2.1
    c = trials.compare_values([2.0, 2.1, 2.2], [1.9, 1.8, 1.95])
    assert c.ratio == pytest.approx(0.904762, abs=1e-6)
    assert c.low == pytest.approx(1.8 / 2.2) and c.high == pytest.approx(1.95 / 2.0)
    assert trials.verdict_text(c) == "B is 9.5 % lower, beyond the trials' spread"
    assert trials.verdict_text(trials.compare_values([3.0, 2.0], [1.0, 1.5]), faster=True) == \
        "B is 50.0 % slower, beyond the trials' spread"
    # twice or more: times A
    c = trials.compare_values([1.0, 1.1], [3.5, 3.6])
    assert trials.verdict_text(c) == "B is 3.38 times A, beyond the trials' spread"   # 3.55 / 1.05


def test_trial_verdict_boundary() -> None:
    """The interval must exclude 1: B's lowest trial equal to A's highest
    (interval 1.000 .. x) is within noise, a hair above is beyond; the same
    below."""
    a = [100.0, 98.0, 104.0]
    c = trials.compare_values(a, [104.0, 110.0, 105.0])
    assert c.low == 1.0 and c.verdict == "within"
    assert trials.verdict_text(c, faster=True) == "within noise"
    c = trials.compare_values(a, [104.01, 110.0, 105.0])
    assert c.low is not None and c.low > 1.0 and c.verdict == "beyond"
    c = trials.compare_values(a, [98.0, 90.0, 95.0])
    assert c.high == 1.0 and c.verdict == "within"
    c = trials.compare_values(a, [97.99, 90.0, 95.0])
    assert c.high is not None and c.high < 1.0 and c.verdict == "beyond"
    assert trials.verdict_text(c, faster=True) == "B is 5.0 % slower, beyond the trials' spread"
    # the same trials on both sides: ratio exactly 1, within noise
    c = trials.compare_values(a, a)
    assert (c.ratio, c.low, c.high, c.verdict) == (1.0, 98 / 104, 104 / 98, "within")


def test_trial_comparison_edge_cases() -> None:
    # one trial each: the ratio of the two, no spread known
    c = trials.compare_values([100.0], [104.0])
    assert (c.ratio, c.low, c.high, c.verdict) == (1.04, None, None, "no spread")
    assert trials.verdict_text(c) == "no spread known (one trial each)"
    # one against three: B's range against A's one value
    c = trials.compare_values([100.0], [101.0, 102.0, 103.0])
    assert (c.low, c.high, c.verdict) == (1.01, 1.03, "beyond")
    # zeros: no ratio; nothing against nothing is within noise
    c = trials.compare_values([0.0, 0.0, 0.0], [0.0, 0.0, 0.0])
    assert (c.ratio, c.low, c.high, c.verdict) == (None, None, None, "within")
    # an A trial of 0: no interval (no ratio to it), the verdict from the ranges
    c = trials.compare_values([0.0, 0.0, 1.0], [3.0, 4.0, 5.0])
    assert (c.ratio, c.low, c.high, c.verdict) == (None, None, None, "beyond")
    assert trials.verdict_text(c) == "B is higher (A's median is 0), beyond the trials' spread"
    c = trials.compare_values([0.0, 2.0, 1.0], [0.5, 1.5, 1.0])
    assert (c.ratio, c.low, c.high, c.verdict) == (1.0, None, None, "within")
    c = trials.compare_values([], [1.0])
    assert c.verdict == "no values" and trials.verdict_text(c) == "no values"


def test_trial_chance() -> None:
    """2 / C(n + m, n): the chance that exchangeable trials fall apart."""
    assert trials.chance(3, 3) == pytest.approx(0.1)           # 2 / 20
    assert trials.chance(4, 4) == pytest.approx(2 / 70)
    assert trials.chance(5, 5) == pytest.approx(2 / 252)
    assert trials.chance(2, 2) == pytest.approx(1 / 3)         # 2 / 6
    assert trials.chance(1, 3) == pytest.approx(0.5)           # 2 / 4
    assert trials.chance(1, 1) == 1.0


def _profile(tps: float | None, p99: float, wal: float, commits: float = 1000.0) -> list[dict[str, Any]]:
    """load_profile() rows of one trial, as the server gives them (in its order)."""
    return [{"metric": "commits", "unit": "transactions", "per_second": commits, "per_transaction": None},
            {"metric": "rollbacks", "unit": "transactions", "per_second": 0.0, "per_transaction": 0.0},
            {"metric": "WAL", "unit": "bytes", "per_second": wal * commits, "per_transaction": wal},
            {"metric": "Lock waits", "unit": "session-seconds", "per_second": None,
             "per_transaction": None},
            {"metric": "pgbench tps", "unit": "transactions", "per_second": tps, "per_transaction": None},
            {"metric": "latency p99", "unit": "ms", "per_second": None, "per_transaction": p99}]


def _set(name: str, profiles: list[list[dict[str, Any]]]) -> trials.TrialSet:
    labels = [f"{name}#{k}" for k in range(1, len(profiles) + 1)]
    return trials.TrialSet(trials.Config(name, labels, trials=True), profiles)


def test_trial_set_metrics_and_representative() -> None:
    a = _set("a", [_profile(100, 4.0, 2048), _profile(120, 3.0, 2100), _profile(110, 5.0, 2000)])
    ms = a.metrics()
    # tps and latency first, then the per-transaction figures; commits (no
    # per-transaction value) and Lock waits (none recorded) left out
    assert [(m.metric, m.shown_unit, m.values) for m in ms] == [
        ("pgbench tps", "transactions/s", [100, 120, 110]),
        ("latency p99", "ms", [4.0, 3.0, 5.0]),
        ("rollbacks", "transactions/tx", [0.0, 0.0, 0.0]),
        ("WAL", "bytes/tx", [2048, 2100, 2000])]
    assert a.representative() == "a#3"           # tps 100, 120, 110: the median is #3's
    b = _set("b", [_profile(100, 1, 1), _profile(120, 1, 1), _profile(110, 1, 1), _profile(90, 1, 1)])
    assert b.representative() == "b#1"           # 90, 100, 110, 120: the lower middle, #1's
    c = _set("c", [_profile(None, 1, 1, 50), _profile(None, 1, 1, 70), _profile(None, 1, 1, 60)])
    assert c.representative() == "c#3"           # no pgbench log: by commits per second
    assert trials.Config("x", ["x"], trials=False).describe() == "x (one run)"
    assert a.config.describe() == "a (3 trials: a#1, a#2, a#3)"
    assert _set("d", [_profile(1, 1, 1)] * 6).config.describe() == "d (6 trials: d#1 .. d#6)"


def test_trials_table_and_panel() -> None:
    a = _set("a", [_profile(100, 4.0, 2048), _profile(98, 4.2, 2048), _profile(104, 4.1, 2048)])
    b = _set("b", [_profile(106, 3.9, 2048), _profile(110, 3.0, 2048), _profile(105, 5.0, 2048)])
    rows = trials.compare_sets(a, b)
    assert [(r.metric, r.comparison.verdict, r.zero) for r in rows] == [
        ("pgbench tps", "beyond", False), ("latency p99", "within", False),
        ("rollbacks", "within", True), ("WAL", "within", False)]
    assert trials.zero_note(rows) == "0 in every trial of both (left out): rollbacks."
    assert trials.zero_note(rows[:2]) is None
    out = trials.trials_table([r for r in rows if not r.zero]).splitlines()
    assert out[0].split() == ["metric", "unit", "A", "median", "A", "min", "..", "max", "B", "median",
                              "B", "min", "..", "max", "B/A", "interval", "verdict"]
    assert out[2].split() == ["pgbench", "tps", "transactions/s", "100", "98.0", "..", "104", "106",
                              "105", "..", "110", "1.060", "1.010", "..", "1.122", "B", "is", "6.0",
                              "%", "faster,", "beyond", "the", "trials'", "spread"]
    # latency 4.0 .. 4.2 against 3.0 .. 5.0: 3.0 / 4.2 = 0.714, 5.0 / 4.0 = 1.25
    assert out[3].split() == ["latency", "p99", "ms", "4.10", "4.00", "..", "4.20", "3.90", "3.00",
                              "..", "5.00", "0.951", "0.714", "..", "1.250", "within", "noise"]
    assert out[4].split() == ["WAL", "bytes/tx", "2.00", "kB", "2.00", "kB", "..", "2.00", "kB",
                              "2.00", "kB", "2.00", "kB", "..", "2.00", "kB", "1.000", "1.000", "..",
                              "1.000", "within", "noise"]
    note = trials.method_note(a, b)
    assert "With 3 and 3 trials" in note and "10.0 %" in note
    one = _set("o", [_profile(1, 1, 1)])
    assert trials.method_note(one, one).startswith("One trial on each side: no spread is known")
    text_ = trials.config_text(a).splitlines()
    assert text_[0] == "configuration a (3 trials: a#1, a#2, a#3): median and range of the trials"
    assert text_[3].split() == ["pgbench", "tps", "transactions/s", "100", "98.0", "..", "104", "6.0", "%"]


def test_trials_report_panel() -> None:
    a = _set("a", [_profile(100, 4.0, 2048), _profile(98, 4.2, 2048), _profile(104, 4.1, 2048)])
    b = _set("b<i>", [_profile(106, 3.9, 2048), _profile(110, 3.0, 2048), _profile(105, 5.0, 2048)])
    p = trials.report_panel(a, b, "a#1", "b<i>#1", note="warning: x")
    assert p["id"] == "trials" and p["charts"] == [] and p.get("note") == "warning: x"
    assert [t["id"] for t in p["tables"]] == ["trials.compare", "trials.a", "trials.b"]
    cmp_, ta, tb = p["tables"]
    assert cmp_["rows"][0] == ["pgbench tps", "transactions/s", 100.0, "98.0 .. 104", 106.0,
                               "105 .. 110", 1.06, "1.010 .. 1.122",
                               "B is 6.0 % faster, beyond the trials' spread"]
    assert cmp_["marked"] == [0]
    assert [r[0] for r in cmp_["rows"]] == ["pgbench tps", "latency p99", "WAL"]
    assert cmp_["note"] is not None and cmp_["note"].endswith(
        "0 in every trial of both (left out): rollbacks.")
    assert ta["columns"] == ["trial", "tps", "p99 ms", "WAL bytes/tx", "panels"]
    assert ta["rows"] == [["a#1", 100.0, 4.0, 2048.0, "shown"], ["a#2", 98.0, 4.2, 2048.0, ""],
                          ["a#3", 104.0, 4.1, 2048.0, ""]]
    assert tb["title"] == "B: the trials of b<i>"
    # the page: the label is data, never markup
    page = html.render({"run": "a#1", "vs": "b<i>#1", "from": "", "to": "", "intervals": 0,
                        "server_version": None, "generated": "", "headline": []}, [p])
    assert "b<i>" not in page and "b\\u003ci\\u003e" in page
    alone = trials.report_panel(a, None, "a#1", None)
    assert [t["id"] for t in alone["tables"]] == ["trials.spread", "trials.a"]
    assert alone["tables"][0]["rows"][0] == ["pgbench tps", "transactions/s", 100.0, "98.0 .. 104", 0.06]
    assert [r[0] for r in alone["tables"][0]["rows"]] == ["pgbench tps", "latency p99", "WAL"]
    assert alone["tables"][0]["note"] == "0 in every trial (left out): rollbacks."
    assert alone["tables"][1]["title"] == "the trials of a"
    assert "note" not in alone


# ---------------------------------------------------------------------------
# db: errors in one line

def test_translate_libpq_errors() -> None:
    e = db.translate(psycopg.OperationalError("connection refused\n\tIs the server running?"))
    assert str(e) == "cannot connect to the server: connection refused" and e.exit_code == 2
    e = db.translate(psycopg.ProgrammingError("  \nsecond"))
    assert str(e) == "second"
    e = db.translate(psycopg.errors.InvalidSchemaName('schema "chronicle" does not exist'))
    assert str(e).startswith('this database has no pg_chronicle extension: schema "chronicle" '
                             "does not exist; connect to the database named by chronicle.database")
    assert db.ClientError("x", 130).exit_code == 130


# ---------------------------------------------------------------------------
# cli and bench: arguments

def test_split_pgbench_and_meta() -> None:
    assert cli._split_pgbench(["bench", "-l", "x", "--", "-c", "4", "--"]) == \
        (["bench", "-l", "x"], ["-c", "4", "--"])
    assert cli._split_pgbench(["runs"]) == (["runs"], [])
    assert cli._meta_pair("k=a=b") == ("k", "a=b")
    assert cli._meta_pair("k=") == ("k", "")
    for bad in ("k", "=v"):
        with pytest.raises(argparse.ArgumentTypeError):
            cli._meta_pair(bad)
    assert cli._report_dir("wal lz4/2 ü") == pathlib.Path("report-wal_lz4_2_ü")


def test_cli_refuses_pgbench_arguments_elsewhere(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["runs", "--", "-c", "4"]) == 2
    assert capsys.readouterr().err == \
        "pg-chronicle: '--' and arguments after it belong to bench and sweep only\n"


def test_cli_version(capsys: pytest.CaptureFixture[str]) -> None:
    import pg_chronicle
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"pg-chronicle {pg_chronicle.__version__}\n"
    assert pg_chronicle.__version__ == "0.3.0"


@pytest.mark.parametrize(("args", "clients"), [
    ([], 1), (["-j", "2"], 1), (["-c", "8"], 8), (["-c8"], 8), (["--client=4"], 4),
    (["--client", "6"], 6), (["-c", "4", "-T", "3", "-c", "16"], 16), (["-c"], 1),
])
def test_client_count(args: list[str], clients: int) -> None:
    assert bench.client_count(args) == clients


def test_check_args() -> None:
    bench.check_args(["-c", "4", "-T", "60", "-P", "5", "--rate=100"])
    for bad in (["--log-prefix=x"], ["--log-prefix", "x"], ["-i"], ["--initialize"], ["-is", "10"]):
        with pytest.raises(db.ClientError):
            bench.check_args(bad)


def test_pgbench_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PGHOST", raising=False)
    env = bench.pgbench_env("host=/tmp port=5433 dbname=bench user=u sslmode=disable application_name=x")
    assert (env["PGHOST"], env["PGPORT"], env["PGDATABASE"], env["PGUSER"], env["PGSSLMODE"]) == \
        ("/tmp", "5433", "bench", "u", "disable")
    assert "PGAPPNAME" not in env or env["PGAPPNAME"] != "x"
    assert "PGHOST" not in bench.pgbench_env(None)
    with pytest.raises(db.ClientError, match="invalid conninfo"):
        bench.pgbench_env("host")


def test_quiet_time() -> None:
    # the interval, and half of it more: at least 0.25 s, at most 5 s
    assert bench.quiet_time(1.0) == 1.5
    assert bench.quiet_time(0.1) == pytest.approx(0.35)
    assert bench.quiet_time(60.0) == 65.0


def test_log_files_and_lines(tmp_path: pathlib.Path) -> None:
    for name in ("pgbench_log.123", "pgbench_log.123.1", "pgbench_log.x", "pgbench_log.123.tmp",
                 "other.1", "pgbench_log.99"):
        (tmp_path / name).write_bytes(b"")
    assert [p.name for p in bench.log_files(tmp_path)] == \
        ["pgbench_log.123", "pgbench_log.123.1", "pgbench_log.99"]
    f = tmp_path / "pgbench_log.123"
    f.write_bytes(b"0 1 2\n0 2 3\n0 3 cut")
    assert list(bench._complete_lines(f)) == [b"0 1 2", b"0 2 3"]
    f.write_bytes(b"no newline")
    assert list(bench._complete_lines(f)) == []
    assert bench._copy_escape(b"a\\b\tc\rd") == b"a\\\\b\\tc\\rd"
    assert re.fullmatch(r"bench-\d{8}-\d{6}", bench.default_label())


# ---------------------------------------------------------------------------
# panels: the report's data from rows

def test_series_one_value_per_interval() -> None:
    w = window(n=4)
    rows = [{"interval_end": w.ends[2], "v": 3}, {"interval_end": w.ends[0], "v": None},
            {"interval_end": w.ends[1], "v": 2.5},
            {"interval_end": T0 - timedelta(seconds=5), "v": 9}]       # not an interval of w
    assert panels._series(w, rows, "v") == [None, 2.5, 3.0, None]
    assert panels._series(w, rows, "v", 1024.0) == [None, 2560.0, 3072.0, None]
    assert w.x == [T0.timestamp() + i for i in (1, 2, 3, 4)]


def test_timeline_series_and_marks() -> None:
    w = window(n=3)
    rows = [{"interval_end": w.ends[0], "commits_per_s": 100.0, "hit_ratio": 0.5,
             **dict.fromkeys(panels.TIMELINE_COLUMNS[2:], 0.25)},
            {"interval_end": w.ends[2], "commits_per_s": 0.0, "hit_ratio": None,
             **dict.fromkeys(panels.TIMELINE_COLUMNS[2:])}]
    tl = panels.timeline_series(w, rows)
    assert set(tl) == set(panels.TIMELINE_COLUMNS)
    assert tl["commits_per_s"] == [100.0, None, 0.0]
    assert tl["hit_ratio"] == [0.5, None, None]
    assert tl["active_lock"] == [0.25, None, None]
    marks = panels.marks_of([
        {"ts": w.ends[0], "kind": "checkpoint_start", "event": "checkpoint started (timed)"},
        {"ts": w.ends[1], "kind": "mark", "event": "COPY <started>"},
        {"ts": w.ends[2], "kind": "recording_start", "event": "recording starts"},
    ])
    assert [(m["x"] - T0.timestamp(), m["kind"], m["label"]) for m in marks] == \
        [(1.0, "checkpoint_start", "checkpoint started (timed)"), (2.0, "mark", "COPY <started>"),
         (3.0, "recording_start", "recording starts")]
    # every time chart gets them, a distribution chart none; the table lists
    # them, the script's own marked
    p = panels.throughput_panel(w, [], _tl(w, [1.0, 2.0, 3.0]))
    hist, _ = panels.distribution_charts([("a", [{"b": 120, "n": 3}], (None, None))])
    panels.with_marks([p, {**p, "charts": [hist]}], marks)
    assert p["charts"][0]["marks"] == marks and hist["marks"] == []
    t = panels.marks_table(w, marks)
    assert t is not None and t["rows"][1] == [
        datetime.fromtimestamp(marks[1]["x"], UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3], 2.0, "mark",
        "COPY <started>"]
    assert t["marked"] == [1] and panels.marks_table(w, []) is None


def _tl(w: panels.Window, commits: list[float | None] | None = None) -> panels.Timeline:
    tl: panels.Timeline = {c: [None] * len(w.ends) for c in panels.TIMELINE_COLUMNS}
    if commits is not None:
        tl["commits_per_s"] = list(commits)
    return tl


def test_throughput_panel() -> None:
    w = window(n=3)
    app = [{"interval_end": w.ends[0], "transactions": 10, "tps": None, "latency_p50_ms": 1.0,
            "latency_p99_ms": 2.0, "latency_max_ms": 3.0},
           {"interval_end": w.ends[1], "transactions": 20, "tps": 20.0, "latency_p50_ms": 1.5,
            "latency_p99_ms": 2.5, "latency_max_ms": 9.0}]
    p = panels.throughput_panel(w, app, _tl(w, [11.0, 21.0, 1.0]))
    tps, lat = p["charts"]
    assert [s["label"] for s in tps["series"]] == ["tps (pgbench)", "commits/s (pg_stat_database)"]
    assert tps["series"][0]["values"] == [None, 20.0, None]
    assert tps["series"][1]["values"] == [11.0, 21.0, 1.0]
    assert [s["values"] for s in lat["series"]] == [[1.0, 1.5, None], [2.0, 2.5, None], [3.0, 9.0, None]]
    assert lat["log_y"] and p["note"] is None and p["empty"] is None
    p = panels.throughput_panel(w, [], _tl(w, [1.0, 2.0, 3.0]))
    assert [c["id"] for c in p["charts"]] == ["throughput.tps"]
    assert p["note"] is not None and p["note"].startswith("No pgbench log")


def test_waits_panel() -> None:
    w = window(n=2)
    tl = _tl(w)
    tl["active_cpu"] = [1.0, 2.0]
    prof = [{"backend_type": "client backend", "wait_event_type": "Lock", "wait_event": "tuple",
             "samples": 300, "avg_processes": 1.5, "coverage": 0.98, "ticks_due": 200, "ticks_taken": 196,
             "activity": "database"},
            {"backend_type": "checkpointer", "wait_event_type": "IO", "wait_event": "DataFileSync",
             "samples": 50, "avg_processes": 0.25, "coverage": 0.98, "ticks_due": 200,
             "ticks_taken": 196, "activity": "background"},
            {"backend_type": "client backend", "wait_event_type": None, "wait_event": None,
             "samples": 100, "avg_processes": 0.5, "coverage": 0.98, "ticks_due": 200,
             "ticks_taken": 196, "activity": "database"}]
    p = panels.waits_panel(w, tl, prof)
    (aas,) = p["charts"]
    assert aas["stack"] and [s["label"] for s in aas["series"]] == [n for n, _ in panels.WAIT_CLASSES]
    assert aas["series"][0]["values"] == [1.0, 2.0]
    (t,) = p["tables"]
    # 300 and 100 of the 400 database samples
    assert t["rows"] == [["client backend", "Lock", "tuple", "75.0%", "1.50", 300],
                         ["client backend", None, None, "25.0%", "0.50", 100]]
    assert t["note"] == ("Sampler coverage 98.0% (196 of 200 ticks taken); background processes at "
                         "work: 0.25 on average (not DB time).")
    # nothing sampled: the panel says there is no data
    assert panels.waits_panel(w, _tl(w), [])["empty"] == "No data recorded for this panel in the window."


def test_io_panel() -> None:
    w = window(n=3)
    e = w.ends
    rows = [{"interval_end": e[0], "backend_type": "client backend", "object": "relation",
             "context": "normal", "reset": False, "read_bytes_per_s": 8192.0, "write_bytes_per_s": 0.0,
             "extend_bytes_per_s": None, "fsyncs_per_s": 0.0},
            {"interval_end": e[2], "backend_type": "client backend", "object": "relation",
             "context": "normal", "reset": True, "read_bytes_per_s": 99.0, "write_bytes_per_s": 0.0,
             "extend_bytes_per_s": None, "fsyncs_per_s": 0.0},
            {"interval_end": e[1], "backend_type": "walwriter", "object": "wal", "context": "normal",
             "reset": False, "read_bytes_per_s": 0.0, "write_bytes_per_s": 4096.0,
             "extend_bytes_per_s": None, "fsyncs_per_s": 2.0}]
    tl = _tl(w)
    tl["hit_ratio"] = [0.5, None, 0.99]
    charts = {c["id"]: c for c in panels.io_panel(w, rows, tl)["charts"]}
    assert list(charts) == ["io.read_bytes_per_s", "io.write_bytes_per_s", "io.fsyncs_per_s",
                            "io.hit_ratio"]
    # a key without a row in an interval: 0; the interval of a reset: not counted
    assert [(s["label"], s["values"]) for s in charts["io.read_bytes_per_s"]["series"]] == \
        [("client backend normal", [8192.0, 0.0, 0.0])]
    assert [(s["label"], s["values"]) for s in charts["io.write_bytes_per_s"]["series"]] == \
        [("walwriter wal/normal", [0.0, 4096.0, 0.0])]
    assert charts["io.hit_ratio"]["series"][0]["values"] == [50.0, None, 99.0]
    assert panels.io_panel(w, [], _tl(w))["empty"] == "pg_stat_io was not recorded in this window."


def test_cpu_panel() -> None:
    w = window(n=3)
    e = w.ends
    rows = [{"interval_end": e[0], "backend_type": "client backend", "reset": False, "user_ms_per_s": 600.0,
             "system_ms_per_s": 150.0, "run_delay_ms_per_s": 200.0},
            {"interval_end": e[1], "backend_type": "checkpointer", "reset": False, "user_ms_per_s": 10.0,
             "system_ms_per_s": None, "run_delay_ms_per_s": None},
            {"interval_end": e[2], "backend_type": "client backend", "reset": True, "user_ms_per_s": 9e9,
             "system_ms_per_s": 9e9, "run_delay_ms_per_s": 9e9}]
    totals = [{"backend_type": "client backend", "user_ms": 600.0, "system_ms": 150.0, "run_delay_ms": 200.0,
               "exited": 1},
              {"backend_type": "checkpointer", "user_ms": 250.0, "system_ms": 0.0, "run_delay_ms": 0.0,
               "exited": 0},
              {"backend_type": "walwriter", "user_ms": 0.0, "system_ms": 0.0, "run_delay_ms": 0.0,
               "exited": 0}]
    tl = _tl(w)
    tl["cpu_user"] = [0.5, 0.25, None]
    tl["cpu_system"] = [0.125, 0.0, None]
    tl["procs_running"] = [3.0, 1.0, None]
    p = panels.cpu_panel(w, rows, totals, tl)
    charts = {c["id"]: c for c in p["charts"]}
    assert list(charts) == ["cpu.modes", "cpu.by_type", "cpu.waiting"]
    assert [(s["label"], s["values"]) for s in charts["cpu.modes"]["series"]] == [
        ("user", [50.0, 25.0, None]), ("system", [12.5, 0.0, None]), ("iowait", [None, None, None]),
        ("steal", [None, None, None])]
    # ms per second / 1000: CPUs busy; no row: 0; a reset: not counted
    assert [(s["label"], s["values"]) for s in charts["cpu.by_type"]["series"]] == [
        ("checkpointer", [0.0, 0.01, 0.0]), ("client backend", [0.75, 0.0, 0.0])]
    assert [(s["label"], s["values"]) for s in charts["cpu.waiting"]["series"]] == [
        ("client backend", [0.2, 0.0, 0.0]), ("runnable processes (machine)", [3.0, 1.0, None])]
    (t,) = p["tables"]
    # the busiest first, shares of the server's CPU, a type that did nothing left out
    assert t["rows"] == [["client backend", 0.75, 75.0, 0.6, 0.15, 0.2, 1],
                         ["checkpointer", 0.25, 25.0, 0.25, 0.0, 0.0, 0]]
    assert panels.cpu_panel(w, [], [], _tl(w))["empty"].startswith("CPU was not recorded")


def test_wal_panel() -> None:
    w = window(n=2)
    rows = [{"interval_end": w.ends[1], "wal_bytes_per_s": 1024.0, "wal_records_per_s": 10.0,
             "wal_fpi_per_s": 2.0, "wal_buffers_full_per_s": 0.0}]
    p = panels.wal_panel(w, rows)
    assert [c["id"] for c in p["charts"]] == ["wal.bytes", "wal.records", "wal.buffers_full"]
    assert [(s["label"], s["values"]) for c in p["charts"] for s in c["series"]] == [
        ("WAL bytes/s", [None, 1024.0]), ("records/s", [None, 10.0]),
        ("full-page images/s", [None, 2.0]), ("wal_buffers_full/s", [None, 0.0])]
    assert panels.wal_panel(w, [])["empty"] == "No data recorded for this panel in the window."


def test_distribution_charts() -> None:
    # bins of 40 per decade of microseconds: bin b holds [10^(b/40), 10^((b+1)/40)) us
    a = [{"b": 120, "n": 3}, {"b": 122, "n": 1}]       # 1 ms .. about 1.2 ms
    b = [{"b": 121, "n": 2}]
    hist, cdf = panels.distribution_charts([("a", a, (1.01, 1.2)), ("b", b, (None, None))])
    assert hist["x"] == pytest.approx([10 ** (121 / 40) / 1000, 10 ** (122 / 40) / 1000,
                                       10 ** (123 / 40) / 1000])
    assert hist["x"][0] == pytest.approx(1.0592537, rel=1e-6)
    assert hist["x_min"] == pytest.approx(1.0)
    # shares of each run's transactions, comparable across runs of any length
    assert [s["values"] for s in hist["series"]] == [[0.75, 0, 0.25], [0, 1.0, 0]]
    assert [(m["kind"], m["x"], m["label"]) for m in hist["marks"]] == \
        [("p50", 1.01, "a: p50 1.010 ms"), ("p99", 1.2, "a: p99 1.200 ms")]
    assert cdf["marks"] == hist["marks"]
    assert [s["values"] for s in cdf["series"]] == [[0.75, 0.75, 1.0], [0.0, 1.0, 1.0]]
    assert hist["log_x"] and cdf["unit"] == "fraction" and hist["kind"] == "distribution"
    # the page keeps a bin's edges exact: 398 us is in bin 103, whose upper
    # edge (0.3981 ms) to the microsecond would be 0.398 ms, not above it
    (lowest,) = panels.distribution_charts([("a", [{"b": 103, "n": 1}], (None, None))])[:1]
    p: Panel = {"id": "p", "title": "P", "about": "", "charts": [lowest], "tables": [], "empty": None}
    (edges,) = html.page_data(_meta(), [p])["xs"]
    assert edges[0] > 0.398 and edges == lowest["x"]


def test_latency_limit_from_the_pgbench_arguments() -> None:
    for argv, want in ((["-c", "4", "-L", "20"], 20.0), (["-L5.5"], 5.5), (["--latency-limit=7"], 7.0),
                       (["--latency-limit", "3"], 3.0), (["-c", "4"], None), (["-L"], None),
                       (["-L", "x"], None), (["-L", "0"], None), (["-L", "inf"], None)):
        assert panels.latency_limit_ms({"argv": argv}) == want, argv
    assert panels.latency_limit_ms({}) is None and panels.latency_limit_ms({"argv": "-L 5"}) is None


def test_threshold_in_whole_microseconds() -> None:
    # a latency is over the threshold when latency_us > threshold_us(ms):
    # 1.001 * 1000.0 and 1.019 * 1000.0 are a hair below 1001 and 1019, which
    # counted a latency of exactly the threshold as over it
    for ms, want in ((1.001, 1001), (1.019, 1019), (0.1, 100), (1.2345, 1234), (20.0, 20000),
                     (0.0005, 0), (1e300, 2 ** 63 - 1)):
        assert panels.threshold_us(ms) == want, ms


def test_split_pair_keeps_stacks() -> None:
    a, b = window(n=3), window(run="s", n=3)
    ca = panels._chart("waits.aas", "Active sessions", "sessions", a,
                       [("CPU", [1.0, 2.0, 3.0]), ("IO", [1.0, None, 0.5])], stack=True)
    cb = panels._chart("waits.aas", "Active sessions", "sessions", b,
                       [("IO", [4.0, 1.0, 0.0]), ("CPU", [1.0, 1.0, 1.0])], stack=True)
    pa, pb = report.split_pair(ca, cb, a, b)
    assert (pa["id"], pb["id"]) == ("waits.aas", "waits.aas.vs")
    assert pa["stack"] and pb["stack"] and pa["y_max"] == pb["y_max"] == 5.0
    # B's series in A's order: a label has one colour in both
    assert [s["label"] for s in pb["series"]] == ["CPU", "IO"]
    assert pb["series"][1]["values"] == [4.0, 1.0, 0.0] and pa["x"][0] >= 0
    # a stack only B has: A's chart empty, on B's scale; nothing stacked, no scale
    ea, eb = report.split_pair({**cb, "series": []}, cb, a, b)
    assert ea["series"] == [] and ea["y_max"] == eb["y_max"] == 5.0
    (nothing,) = report.split_pair({**ca, "series": []}, None, a, b)
    assert "y_max" not in nothing


def test_settings_flatten_and_formatting() -> None:
    env = {"kernel": {"release": "6.1"}, "disks": [{"dev": "sda", "rotational": False}], "cpus": 2,
           "flags": ["a", "b"]}
    assert panels.flatten(env) == [("cpus", "2"), ("disks[0].dev", "sda"),
                                   ("disks[0].rotational", "false"), ("flags", '["a", "b"]'),
                                   ("kernel.release", "6.1")]
    w = window(meta={"clients": 4, "note": "x"}, settings={"work_mem": "4MB", "fsync": "off", "zz": "1"},
               environment=env)
    tables = {t["id"]: t for t in panels.settings_env(w)["tables"]}
    assert tables["settings.run"]["rows"][-2:] == [["meta: clients", "4"], ["meta: note", "x"]]
    # the key settings in KEY_SETTINGS' order, every setting folded
    assert tables["settings.key"]["rows"] == [["work_mem", "4MB"], ["fsync", "off"]]
    assert tables["settings.settings"]["rows"] == [["fsync", "off"], ["work_mem", "4MB"], ["zz", "1"]]
    assert tables["settings.settings"].get("fold") and tables["settings.environment"].get("fold")
    run = dict(tables["settings.run"]["rows"])
    assert run["server"] is None and "settings.imported" not in tables
    # an imported run: its server's identity, and the import in a table of its own
    w = window(meta={"note": "x", "archive": {"id": "u-1", "label": "orig", "imported": "2025-01-01"}},
               origin=2, server_name="db1", system_identifier=7)
    tables = {t["id"]: t for t in panels.settings_env(w)["tables"]}
    run = dict(tables["settings.run"]["rows"])
    assert run["server"] == "db1 (system identifier 7)" and "meta: archive" not in run
    assert tables["settings.imported"]["rows"] == [["archive", "u-1"], ["label on its server", "orig"],
                                                  ["imported", "2025-01-01"]]
    assert panels._g(1234567) == 1235000.0 and panels._g(0.000123456) == 0.0001235
    assert panels._g(None) is None and panels._g(0) == 0.0 and math.isinf(panels._g(math.inf) or 0)
    assert panels._r(2.345678) == 2.35 and panels._r(None) is None
    assert panels._short("SELECT  1\n  FROM\tt") == "SELECT 1 FROM t"
    assert panels._short("x" * 200) == "x" * 159 + "…" and panels._short(None) == "(query text not recorded)"



def test_binomial_tail() -> None:
    # by hand: 3 fair coins, 2 heads or more: (3 + 1) / 8; one of 10 at 1 %: 1 - 0.99^10
    assert panels.binomial_tail(3, 2, 0.5) == pytest.approx(0.5, rel=1e-12)
    assert panels.binomial_tail(10, 1, 0.01) == pytest.approx(1 - 0.99 ** 10, rel=1e-12)
    # every one of 100 at 1 %: 10^-200; none or more: certain; more than n: never
    assert panels.binomial_tail(100, 100, 0.01) == pytest.approx(1e-200, rel=1e-9)
    assert panels.binomial_tail(100, 0, 0.01) == 1.0 and panels.binomial_tail(5, 6, 0.01) == 0.0
    # a second of 100,000: one slow or more is certain (its chance of none, 0.99^100000,
    # is below a float's range)
    assert panels.binomial_tail(100_000, 1, 0.01) == 1.0
    assert panels.binomial_tail(3, 1, 0.5) == pytest.approx(7 / 8, rel=1e-12)
    # a second of 2,000 transactions, 40 above the p99 (20 expected): the sum,
    # exact in fractions, of the terms 40 .. 2000
    q = fractions.Fraction(1, 100)
    exact = 1 - sum(math.comb(2000, j) * q ** j * (1 - q) ** (2000 - j) for j in range(40))
    assert panels.binomial_tail(2000, 40, 0.01) == pytest.approx(float(exact), rel=1e-9)


def test_slowest_stand_out_by_chance_or_not() -> None:
    r = {"latency_p99_ms": 11.0, "tps": 2000.0}
    # 2,000 transactions, window p99 10 ms, 3,600 intervals: 30 slow ones (20
    # expected) are chance, 60 are not; the scale is p99 over the window's
    assert panels.stands_out(r, "p99", 10.0, (2000, 30), 3600) == (False, pytest.approx(1.1))
    assert panels.stands_out(r, "p99", 10.0, (2000, 60), 3600)[0]
    # the same 30 in 2,000 stand out in a window of one interval only if
    # chance gives them under 1 %: P(X >= 30) is about 2.1 %
    assert not panels.stands_out(r, "p99", 10.0, (2000, 30), 1)[0]
    assert panels.stands_out(r, "p99", 10.0, (2000, 35), 1)[0]
    # no counts (no transaction in the interval): not standing out
    assert panels.stands_out(r, "p99", 10.0, None, 1) == (False, pytest.approx(1.1))
    # by tps: below 0.9 times the median, and rare: 2,000 where 2,300 were
    # expected is 6.3 standard deviations; 85 where 100 were, 1.5 (a
    # steady run shows that every 14 intervals); a 2 s interval counts twice
    assert panels.stands_out(r, "tps", 2300.0, intervals=3600) == (True, pytest.approx(2000 / 2300))
    assert panels.stands_out({"tps": 85.0}, "tps", 100.0) == (False, pytest.approx(0.85))
    two = {"tps": 85.0, "interval_start": T0, "interval_end": T0 + timedelta(seconds=2)}
    assert not panels.stands_out(two, "tps", 100.0)[0]
    assert panels.stands_out({**two, "tps": 60.0}, "tps", 100.0, intervals=3600)[0]
    assert not panels.stands_out({"tps": 2200.0}, "tps", 2300.0)[0]  # not below 0.9 times


def test_poisson_head() -> None:
    # by hand: P(X <= 0) = e^-lam; P(X <= 1) = e^-lam (1 + lam); no fewer than 0
    assert panels.poisson_head(0, 3.0) == pytest.approx(math.exp(-3.0), rel=1e-12)
    assert panels.poisson_head(1, 3.0) == pytest.approx(4 * math.exp(-3.0), rel=1e-12)
    assert panels.poisson_head(-1, 3.0) == 0.0 and panels.poisson_head(5, 0.0) == 1.0
    # 60 where 100 were expected: the sum, exact in fractions of the terms
    # 100^j / j! (times e^-100), j = 0 .. 60
    exact = sum(fractions.Fraction(100 ** j, math.factorial(j)) for j in range(61))
    assert panels.poisson_head(60, 100.0) == pytest.approx(float(exact) * math.exp(-100.0), rel=1e-9)
    # the whole distribution
    assert panels.poisson_head(1000, 100.0) == pytest.approx(1.0)


def test_pictures_shade_the_slowest_that_stand_out() -> None:
    w = window(n=4)
    table = {"id": "slowest.table", "title": "S", "columns": ["rank"], "rows": [[1], [2], [3]],
             "marked": [0, 2], "note": None, "x": w.x[1:4],
             "x_start": [x - 1.0 for x in w.x[1:4]]}
    p: Panel = {"id": "slowest", "title": "S", "about": "", "charts": [_chart(w, [1.0] * 4)],
                "tables": [table], "empty": None}  # type: ignore[list-item]
    drawn = drawing.shaded(_meta(), [p])
    assert drawn[0]["charts"][0]["slow"] == [(w.x[1] - 1.0, w.x[1]), (w.x[3] - 1.0, w.x[3])]
    # a comparison shades none
    assert "slow" not in drawing.shaded(_meta(vs="b"), [p])[0]["charts"][0]


# ---------------------------------------------------------------------------
# report: the header, the comparison's merge

def test_byte_axis_ticks_at_powers_of_two() -> None:
    # 0 .. 20 MB: steps of 4 MB (2^22), labelled 4.0 MB, 8.0 MB, ...; never below a byte
    assert plots.byte_step(0, 20e6) == 2 ** 22
    assert plots._fmt("bytes/s")(3 * 2 ** 22) == "12.0 MB/s"
    assert plots.byte_step(0, 3) == 1.0 and plots.byte_step(5, 5) == 1.0


def test_meta_table() -> None:
    a = {"clients": 4, "argv": ["-c", "4"], "connection": {"host": "/tmp", "port": 5432, "tls": False}}
    b = {"clients": 4, "argv": ["-c", "8"], "connection": {"host": "db1", "port": 5432, "tls": True},
         "note": "<b>x</b>"}
    t = panels.meta_table(a, b)
    assert t["rows"] == [["connection.host", "/tmp", "db1"], ["connection.tls", "false", "true"],
                         ["note", None, "<b>x</b>"]]
    assert panels.meta_table(a, a)["rows"] == [] and panels.meta_table(a, a)["note"] is not None
    # the import of an imported run is no difference of the runs
    assert panels.meta_table({**a, "archive": {"id": "1"}}, {**a, "archive": {"id": "2"}})["rows"] == []


def test_headline_rows() -> None:
    assert report.headline_rows({"hit_ratio": 0.961234, "tps": 2731.4, "latency_p50_ms": None,
                                 "wal_bytes_per_commit": 7925.6, "wait_coverage": 0.9987,
                                 "other": 1.0}) == \
        [["tps", "2731"], ["WAL/server commit", "7926 B"], ["hit ratio", "96.12%"],
         ["sampler coverage", "99.9%"]]
    # latencies to the microsecond they are measured in: 1555 us is not 1.55 ms
    assert report.headline_rows({"latency_p99_ms": 1.555, "latency_p50_ms": 0.001}) == \
        [["p50", "0.001 ms"], ["p99", "1.555 ms"]]


def _chart(w: panels.Window, values: list[float | None], label: str = "s") -> Chart:
    return {"id": "c", "title": "C", "unit": "1/s", "kind": "time", "x": w.x,
            "series": [{"label": label, "values": values, "run": w.run}], "stack": True,
            "log_y": False, "log_x": False,
            "marks": [{"x": w.x[0], "label": "checkpoint start", "kind": "checkpoint_start"}]}


def test_merge_time_on_seconds_since_start() -> None:
    a = window("A", n=3)
    # B: another day, intervals of 1.5 s ending 1.5, 3 after its start
    b = window("B", n=2, start=T0 + timedelta(days=1, seconds=0.25), step=1.5)
    m = report.merge_time(_chart(a, [1.0, 2.0, 3.0]), _chart(b, [10.0, None]), a, b)
    assert m["x"] == [1.0, 1.5, 2.0, 3.0]
    assert [(s["label"], s["run"], s["values"]) for s in m["series"]] == [
        ("A: s", "A", [1.0, None, 2.0, 3.0]),
        ("B: s", "B", [None, 10.0, None, None])]
    assert [(k["x"], k["label"]) for k in m["marks"]] == [(1.0, "A: checkpoint start"),
                                                          (1.5, "B: checkpoint start")]
    assert m["stack"] is False and m["id"] == "c"
    # a chart B does not have
    m = report.merge_time(_chart(a, [1.0, 2.0, 3.0]), None, a, b)
    assert m["x"] == [1.0, 2.0, 3.0] and len(m["series"]) == 1


def test_collected_in_page_order() -> None:
    c = report.Collected()
    for pid in reversed(report.PANELS):
        c.panels[pid] = panels._panel(pid, pid, "")
    assert [p["id"] for p in c.in_order()] == report.PANELS


# ---------------------------------------------------------------------------
# html: the page

def test_json_for_html() -> None:
    s = html.json_for_html({"k": "</script><!--<script>&\u2028\u2029", "n": 1.5})
    assert not set("<>&\u2028\u2029") & set(s)
    assert json.loads(s) == {"k": "</script><!--<script>&\u2028\u2029", "n": 1.5}


def test_fill_is_one_pass() -> None:
    assert html.fill("<t>@@TITLE@@</t>@@DATA@@", {"TITLE": "@@DATA@@", "DATA": "d"}) == "<t>@@DATA@@</t>d"


@pytest.mark.parametrize(("value", "compact"), [
    (None, None), (3, 3), (3.0, 3), (-2.0, -2), (1.234567, 1.2346), (123456.7, 123460.0),
    (0.000123456, 0.00012346), (2e20, 2e20), (math.nan, None), (math.inf, None), (-math.inf, None),
])
def test_compact(value: float | None, compact: float | None) -> None:
    out = html._compact(value)
    assert out == compact and type(out) is type(compact)


def _meta(**kw: Any) -> Meta:
    m: Meta = {"run": "a<b>", "vs": None, "from": "f", "to": "t", "intervals": 3,
               "server_version": "17.11", "generated": "g", "headline": [["tps", "1"]]}
    m.update(kw)  # type: ignore[typeddict-item]
    return m


def test_page_data_shares_x() -> None:
    w = window(n=3)
    c1 = _chart(w, [1.0, 2.0, 3.0])
    c2 = {**_chart(w, [1.23456789, None, 3.0]), "id": "d"}
    c3: Chart = {**_chart(w, [1.0]), "id": "e", "x": [0.0001]}
    p: Panel = {"id": "p", "title": "P", "about": "", "charts": [c1, c2, c3], "tables": [], "empty": None}
    data = html.page_data(_meta(), [p])
    assert data["xs"] == [[round(x, 3) for x in w.x], [0.0]]
    charts = data["panels"][0]["charts"]
    assert [c["xref"] for c in charts] == [0, 0, 1] and all("x" not in c for c in charts)
    assert charts[1]["series"][0]["values"] == [1.2346, None, 3]


def test_render() -> None:
    page = html.render(_meta(vs="b&c"), [])
    assert "<title>pg_chronicle report: a&lt;b&gt; vs b&amp;c</title>" in page
    for folder, name in (("report_assets", "report.js"), ("report_assets", "report.css"),
                         ("vendor", "uPlot.iife.min.js"), ("vendor", "uPlot.min.css")):
        assert html.asset(folder, name) in page, name
    (data,) = re.findall(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    assert json.loads(data) == {"meta": _meta(vs="b&c"), "xs": [], "panels": []}
    assert "@@" not in page.replace(html.asset("vendor", "uPlot.iife.min.js"), "")


# ---------------------------------------------------------------------------
# plots: the pictures

def test_axis_formatter() -> None:
    b = plots._fmt("bytes/s")
    assert (b(500), b(2048), b(1536 * 1024), b(-2048)) == ("500 B/s", "2.0 kB/s", "1.5 MB/s", "-2.0 kB/s")
    assert plots._fmt("bytes")(3 * 1024 ** 3) == "3.0 GB"
    n = plots._fmt("1/s")
    assert (n(0.5), n(25_000), n(2_500_000), n(120)) == ("0.5", "25k", "2.5M", "120")


def test_plain_and_cell() -> None:
    assert plots._plain("_x\x1b") == " _x\\x1b" and plots._plain("$a_b$") == "$a_b$"
    assert plots._cell(None) == "" and plots._cell(1.23456) == "1.235" and plots._cell(7) == "7"
    assert plots._cell("y" * 100) == "y" * 89 + "…"


def test_envelope_columns() -> None:
    # 10 points in 4 columns: [0,1] [2,3,4] [5,6] [7,8,9] (c * n // columns)
    y: list[float | None] = [5.0, 1.0, None, 7.0, 2.0, None, None, 3.0, 9.0, 0.0]
    env = plots.envelope(list(range(10)), y, columns=4)
    assert env is not None
    xs, lo, hi = env
    assert xs == [0, 3, 5, 8]
    assert lo[:2] == [1.0, 2.0] and hi[:2] == [5.0, 7.0] and lo[3] == 0.0 and hi[3] == 9.0
    assert math.isnan(lo[2]) and math.isnan(hi[2])


def test_write_all_draws_and_reports_failures(tmp_path: pathlib.Path) -> None:
    w = window(n=3)
    good: Panel = {"id": "good", "title": "G", "about": "", "charts": [_chart(w, [1.0, 2.0, 3.0])],
                   "tables": [{"id": "t", "title": "T", "columns": ["a", "b"], "rows": [["x", 1.5]],
                               "marked": [0], "note": None}], "empty": None}
    tables: Panel = {**good, "id": "tables", "charts": []}
    empty = panels._panel("empty", "E", "")
    # a series shorter than its x: drawing it fails
    bad: Panel = {**good, "id": "bad", "charts": [_chart(w, [1.0])]}
    failed = drawing.write_all(_meta(), [good, tables, empty, bad], tmp_path, processes=1)
    assert list(failed) == ["bad"] and failed["bad"].startswith("ValueError: ")
    assert "\n" not in failed["bad"]
    for pid in ("good", "tables", "empty"):
        assert (tmp_path / f"{pid}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (tmp_path / f"{pid}.svg").read_text("utf-8").lstrip().startswith("<?xml")
    assert not (tmp_path / "bad.png").exists() and not (tmp_path / "bad.svg").exists()


def test_table_pictures_hold_every_cell_in_its_row(tmp_path: pathlib.Path) -> None:
    t = {"id": "t", "title": "Tab $1", "columns": ["name", "value", "unit", "n"],
         "rows": [["shared_buffers", "128MB", "8kB", 5], ["work_mem", 4.5, None, 10],
                  ["x" * 120, 1.234567, "B", None]],
         "marked": [1], "note": None}
    p: Panel = {"id": "tables", "title": "T", "about": "", "charts": [],
                "tables": [t, {**t, "id": "u", "title": "none", "rows": [], "marked": []}], "empty": None}
    assert drawing.write_all(_meta(), [p], tmp_path, processes=1) == {}
    root = ET.parse(tmp_path / "tables.svg").getroot()
    # every line as drawn
    lines = ["".join(e.itertext()) for e in root.iter() if e.tag.endswith("}text")]
    assert "Tab $1" in lines and "none" in lines and "(none)" in lines
    # each row on a line of its own, in order, each cell at its column's place
    rows = [["name", "value", "unit", "n"], ["shared_buffers", "128MB", "8kB", "5"],
            ["work_mem", "4.5", "", "10"], ["x" * 89 + "…", "1.235", "B", ""]]
    drawn = [s for s in lines if s.startswith(("name", "shared_buffers", "work_mem", "x" * 89))][:4]
    assert [s.split() for s in drawn] == [[c for c in r if c] for r in rows]
    # a rule under the header; the numbers of a column right-aligned
    assert [len(d) for d in lines[lines.index(drawn[0]) + 1].split()] == [90, 5, 4, 2]
    assert len({s.index("128MB") for s in drawn[1:2]} | {s.index("4.5") for s in drawn[2:3]}
               | {s.index("value") for s in drawn[:1]} | {s.index("1.235") for s in drawn[3:]}) == 1
    assert drawn[1].endswith(" 5") and drawn[2].endswith("10") and drawn[0].endswith(" n")
    # the marked row shaded, once
    assert ET.tostring(root, encoding="unicode").count("#fde2e1") == 1


def test_archive_path() -> None:
    d = pathlib.Path("/x")
    assert bench.archive_path(d, "tr#1") == d / "tr_1.pgca"
    assert bench.archive_path(d, "s@clients=4#2") == d / "s_clients=4_2.pgca"
    assert bench.archive_path(d, "../up") == d / ".._up.pgca"
