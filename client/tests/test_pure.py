"""The client's functions that need no server: terminal formatting, the
summary and comparison text, the report's panels built from rows, the
comparison's merge, the page's data and the pictures' helpers, bench's and
the command line's argument handling.  Every expected value is written out
here (computed by hand from the inputs), not taken from the code under
test.  No server: these run without PG_CONFIG."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import pathlib
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from pg_chronicle import bench, cli, compare, db, html, panels, plots, report, summary, text
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
    assert lines[4] == ("  WAL         7.22 B per transaction, 0.903 full-page images per transaction, "
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
    assert "per commit" in lines[3] and lines[-1] == "  top waits   no active session sampled"
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
    assert capsys.readouterr().err == "pg-chronicle: '--' and arguments after it belong to bench only\n"


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
        {"interval_end": w.ends[0], "num_timed": 1, "num_requested": 0, "num_done": None},
        {"interval_end": w.ends[1], "num_timed": 0, "num_requested": 0, "num_done": 1},
        {"interval_end": w.ends[2], "num_timed": 0, "num_requested": 1},         # 17: no num_done
    ])
    assert [(m["x"] - T0.timestamp(), m["kind"]) for m in marks] == \
        [(1.0, "checkpoint_start"), (2.0, "checkpoint_end"), (3.0, "checkpoint_start")]


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
    p = panels.throughput_panel(w, app, _tl(w, [11.0, 21.0, 1.0]), [])
    tps, lat = p["charts"]
    assert [s["label"] for s in tps["series"]] == ["tps (pgbench)", "commits/s (pg_stat_database)"]
    assert tps["series"][0]["values"] == [None, 20.0, None]
    assert tps["series"][1]["values"] == [11.0, 21.0, 1.0]
    assert [s["values"] for s in lat["series"]] == [[1.0, 1.5, None], [2.0, 2.5, None], [3.0, 9.0, None]]
    assert lat["log_y"] and p["note"] is None and p["empty"] is None
    p = panels.throughput_panel(w, [], _tl(w, [1.0, 2.0, 3.0]), [])
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
    ckpt: list[Any] = [{"x": w.x[1], "label": "checkpoint start", "kind": "checkpoint_start"}]
    charts = {c["id"]: c for c in panels.io_panel(w, rows, tl, ckpt)["charts"]}
    assert list(charts) == ["io.read_bytes_per_s", "io.write_bytes_per_s", "io.fsyncs_per_s",
                            "io.hit_ratio"]
    # a key without a row in an interval: 0; the interval of a reset: not counted
    assert [(s["label"], s["values"]) for s in charts["io.read_bytes_per_s"]["series"]] == \
        [("client backend normal", [8192.0, 0.0, 0.0])]
    assert [(s["label"], s["values"]) for s in charts["io.write_bytes_per_s"]["series"]] == \
        [("walwriter wal/normal", [0.0, 4096.0, 0.0])]
    assert charts["io.write_bytes_per_s"]["marks"] == ckpt and charts["io.read_bytes_per_s"]["marks"] == []
    assert charts["io.hit_ratio"]["series"][0]["values"] == [50.0, None, 99.0]
    assert panels.io_panel(w, [], _tl(w), [])["empty"] == "pg_stat_io was not recorded in this window."


def test_wal_panel() -> None:
    w = window(n=2)
    rows = [{"interval_end": w.ends[1], "wal_bytes_per_s": 1024.0, "wal_records_per_s": 10.0,
             "wal_fpi_per_s": 2.0, "wal_buffers_full_per_s": 0.0}]
    ckpt: list[Any] = [{"x": w.x[0], "label": "checkpoint end", "kind": "checkpoint_end"}]
    p = panels.wal_panel(w, rows, ckpt)
    assert [c["id"] for c in p["charts"]] == ["wal.bytes", "wal.records", "wal.buffers_full"]
    assert [(s["label"], s["values"]) for c in p["charts"] for s in c["series"]] == [
        ("WAL bytes/s", [None, 1024.0]), ("records/s", [None, 10.0]),
        ("full-page images/s", [None, 2.0]), ("wal_buffers_full/s", [None, 0.0])]
    assert all(c["marks"] == ckpt for c in p["charts"])
    assert panels.wal_panel(w, [], [])["empty"] == "No data recorded for this panel in the window."


def test_distribution_charts() -> None:
    # bins of 40 per decade of microseconds: bin b holds [10^(b/40), 10^((b+1)/40)) us
    a = [{"b": 120, "n": 3}, {"b": 122, "n": 1}]       # 1 ms .. about 1.2 ms
    b = [{"b": 121, "n": 2}]
    hist, cdf = panels.distribution_charts([("a", a), ("b", b)])
    assert hist["x"] == pytest.approx([10 ** (121 / 40) / 1000, 10 ** (122 / 40) / 1000,
                                       10 ** (123 / 40) / 1000])
    assert hist["x"][0] == pytest.approx(1.0592537, rel=1e-6)
    assert [s["values"] for s in hist["series"]] == [[3, 0, 1], [0, 2, 0]]
    assert [s["values"] for s in cdf["series"]] == [[0.75, 0.75, 1.0], [0.0, 1.0, 1.0]]
    assert hist["log_x"] and cdf["unit"] == "fraction" and hist["kind"] == "distribution"


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
    assert panels._g(1234567) == 1235000.0 and panels._g(0.000123456) == 0.0001235
    assert panels._g(None) is None and panels._g(0) == 0.0 and math.isinf(panels._g(math.inf) or 0)
    assert panels._r(2.345678) == 2.35 and panels._r(None) is None
    assert panels._short("SELECT  1\n  FROM\tt") == "SELECT 1 FROM t"
    assert panels._short("x" * 200) == "x" * 159 + "…" and panels._short(None) == "(query text not recorded)"


# ---------------------------------------------------------------------------
# report: the header, the comparison's merge

def test_headline_rows() -> None:
    assert report.headline_rows({"hit_ratio": 0.961234, "tps": 2731.4, "latency_p50_ms": None,
                                 "wal_bytes_per_commit": 7925.6, "wait_coverage": 0.9987,
                                 "other": 1.0}) == \
        [["tps", "2731"], ["WAL/commit", "7926 B"], ["hit ratio", "96.12%"],
         ["sampler coverage", "99.9%"]]


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
    failed = plots.write_all(_meta(), [good, tables, empty, bad], tmp_path, processes=1)
    assert list(failed) == ["bad"] and failed["bad"].startswith("ValueError: ")
    assert "\n" not in failed["bad"]
    for pid in ("good", "tables", "empty"):
        assert (tmp_path / f"{pid}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (tmp_path / f"{pid}.svg").read_text("utf-8").lstrip().startswith("<?xml")
    assert not (tmp_path / "bad.png").exists() and not (tmp_path / "bad.svg").exists()
