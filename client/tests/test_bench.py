"""pg-chronicle bench, runs and compare against a real server, the numbers
checked against the pgbench logs read here (not by the extension)."""

from __future__ import annotations

import dataclasses
import math
import os
import pathlib
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from pg_chronicle import summary
from pg_chronicle.bench import load_logs, log_files
from pg_chronicle.db import connect

from conftest import CLIENT_DIR, Server, cli, wait_for


@dataclasses.dataclass
class LogReading:
    """pgbench's per-transaction logs, read by the test: the reference."""
    n: int
    first_start: float       # epoch seconds of the first transaction's start
    last_end: float
    latencies_us: list[int]
    last_end_exact: tuple[int, int] = (0, 0)   # (epoch seconds, microseconds): as the log has it
    tx: list[tuple[int, int]] = dataclasses.field(default_factory=list)   # (end in epoch us, latency us)

    @property
    def tps(self) -> float:
        return self.n / (self.last_end - self.first_start)

    def percentile_ms(self, p: float) -> float:
        """Nearest rank: the ceil(p * n)-th smallest."""
        lat = sorted(self.latencies_us)
        return lat[max(math.ceil(p * len(lat)), 1) - 1] / 1000.0


def read_logs(logdir: pathlib.Path) -> LogReading:
    n, starts, ends, lat = 0, [], [], []
    tx: list[tuple[int, int]] = []
    exact = (0, 0)
    for f in sorted(logdir.glob("pgbench_log.*")):
        for line in f.read_text().splitlines(keepends=True):
            if not line.endswith("\n"):
                continue             # cut off by a signal: not a transaction
            fields = line.split()
            if fields[2] in ("skipped", "failed", "serialization", "deadlock", "other"):
                continue
            end = int(fields[4]) + int(fields[5]) / 1e6
            exact = max(exact, (int(fields[4]), int(fields[5])))
            us = int(fields[2])
            n += 1
            ends.append(end)
            starts.append(end - us / 1e6)
            lat.append(us)
            tx.append((int(fields[4]) * 1_000_000 + int(fields[5]), us))
    return LogReading(n=n, first_start=min(starts), last_end=max(ends), latencies_us=lat,
                      last_end_exact=exact, tx=tx)


@dataclasses.dataclass
class BenchRun:
    label: str
    logdir: pathlib.Path
    proc: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def two_runs(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BenchRun, BenchRun]]:
    runs = []
    for label, clients in (("t-a", "2"), ("t-b", "4")):
        logdir = tmp_path_factory.mktemp(label)
        p = cli(server, "bench", "--label", label, "--meta", "purpose=test",
                "--keep-logs", str(logdir), "--", "-c", clients, "-j", "2", "-T", "3", "-P", "1",
                check=True)
        runs.append(BenchRun(label, logdir, p))
    yield runs[0], runs[1]


def test_bench_summary_matches_the_logs(server: Server, two_runs: tuple[BenchRun, BenchRun]) -> None:
    for run in two_runs:
        ref = read_logs(run.logdir)
        assert ref.n > 0
        with connect(server.conninfo) as conn:
            s = summary.collect(conn, run.label)
            meta = conn.execute("SELECT meta FROM chronicle.run WHERE label = %s",
                                (run.label,)).fetchone()[0]
        assert s.ended is not None, "the run is closed"
        assert s.transactions == ref.n
        assert s.basis == "transactions"
        assert s.tps == pytest.approx(ref.tps, rel=1e-6)
        assert s.latency_p50_ms == pytest.approx(ref.percentile_ms(0.5))
        assert s.latency_p99_ms == pytest.approx(ref.percentile_ms(0.99))
        assert s.latency_max_ms == pytest.approx(max(ref.latencies_us) / 1000.0)
        # the window covers every transaction
        assert s.started.timestamp() <= ref.first_start
        assert s.ended.timestamp() >= ref.last_end
        # what was printed is what was computed
        out = run.proc.stdout
        assert f"{ref.n:,} transactions" in out
        assert f"p50 {summary.ms(ref.percentile_ms(0.5))}" in out
        assert f"p99 {summary.ms(ref.percentile_ms(0.99))}" in out
        assert f"max {summary.ms(max(ref.latencies_us) / 1000.0)}" in out
        assert "WAL " in out and "per pgbench transaction" in out
        assert "top waits" in out
        # meta: the command line, the clients, the scale, --meta
        assert meta["clients"] == (2 if run.label == "t-a" else 4)
        assert meta["scale"] == 1
        assert meta["purpose"] == "test"
        assert meta["pgbench"].startswith("pgbench -c ")
        # how it connected: the test server's socket folder, no TLS
        assert meta["connection"] == {"host": str(server.sockdir), "port": server.port,
                                      "unix_socket": True, "tls": False}


def test_bench_wal_per_transaction(server: Server, two_runs: tuple[BenchRun, BenchRun]) -> None:
    """WAL per transaction: the run's WAL (pg_stat_wal deltas) over pgbench's
    transactions; independent reading: the WAL positions are not kept, so
    compare with the recorded wal_history over the run's window."""
    run = two_runs[0]
    ref = read_logs(run.logdir)
    with connect(server.conninfo) as conn:
        s = summary.collect(conn, run.label)
        total = conn.execute(
            "SELECT sum(wal_bytes)::float8 FROM chronicle.wal_totals("
            "(SELECT started FROM chronicle.run WHERE label = %s),"
            "(SELECT ended FROM chronicle.run WHERE label = %s))", (run.label, run.label)).fetchone()[0]
    assert total is not None and total > 0
    assert s.wal_bytes_per_transaction == pytest.approx(total / ref.n, rel=1e-9)


def test_runs_lists_both(server: Server, two_runs: tuple[BenchRun, BenchRun]) -> None:
    p = cli(server, "runs", check=True)
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["label", "server", "version", "started", "ended", "duration", "meta"]
    labels = [ln.split()[0] for ln in lines[2:]]
    assert labels.index("t-a") < labels.index("t-b")
    row = next(ln for ln in lines if ln.startswith("t-a "))
    assert "clients=2" in row and "purpose=test" in row
    # the server that recorded it, and its version
    assert row.split()[1:3] == [server.psql("SELECT name FROM chronicle.server()"),
                                server.psql("SHOW server_version")], row


def _log_lines(logdir: pathlib.Path) -> int:
    n = 0
    for f in logdir.glob("pgbench_log.*"):
        n += f.read_bytes().count(b"\n")
    return n


@pytest.mark.parametrize("whom", ["process", "group"])
def test_ctrl_c_closes_the_run_and_keeps_the_logs(server: Server, tmp_path: pathlib.Path,
                                                  whom: str) -> None:
    """SIGINT to pg-chronicle alone (forwarded to pgbench), or to the whole
    process group as a terminal's Ctrl-C: exit 130, the run ended, every
    whole line pgbench wrote loaded."""
    label = f"t-int-{whom}"
    env = server.env()
    env["PYTHONPATH"] = str(CLIENT_DIR)
    proc = subprocess.Popen([sys.executable, "-m", "pg_chronicle", "bench", "--label", label,
                             "--keep-logs", str(tmp_path), "--", "-c", "2", "-T", "600"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        # pgbench writes its log through stdio buffers: wait until a few
        # thousand lines reached the files
        wait_for(lambda: _log_lines(tmp_path) > 2000 or proc.poll() is not None,
                 "pgbench's log", timeout=120)
        assert proc.poll() is None, proc.communicate()
        if whom == "process":
            proc.send_signal(signal.SIGINT)
        else:
            os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err
    ref = read_logs(tmp_path)
    assert ref.n > 0
    row = server.psql(
        "SELECT r.ended IS NOT NULL, r.ended - r.started < interval '5 min', "
        f"(SELECT count(*) FROM chronicle.app_transaction t WHERE t.run_id = r.run_id AND t.status = 'ok') "
        f"FROM chronicle.run r WHERE r.label = '{label}'")
    assert row == f"t|t|{ref.n}"
    assert f"{ref.n:,} transactions" in out
    assert "(interrupted)" in err


def _nonblank_png(path: pathlib.Path) -> bool:
    data = path.read_bytes()
    return data.startswith(b"\x89PNG") and len(data) > 2000


def test_report_of_a_run_and_of_two(server: Server, two_runs: tuple[BenchRun, BenchRun],
                                    tmp_path: pathlib.Path) -> None:
    a, b = two_runs
    p = cli(server, "report", a.label, "-o", str(tmp_path / "one"), check=True)
    assert p.stdout.strip() == str(tmp_path / "one" / "index.html")
    html = (tmp_path / "one" / "index.html").read_text()
    assert a.label in html and "<script" in html
    pngs = sorted((tmp_path / "one").glob("*.png"))
    assert pngs and all(_nonblank_png(f) for f in pngs)
    assert {f.stem for f in pngs} == {f.stem for f in (tmp_path / "one").glob("*.svg")}

    p = cli(server, "report", b.label, "--vs", a.label, "-o", str(tmp_path / "two"), check=True)
    html = (tmp_path / "two" / "index.html").read_text()
    assert a.label in html and b.label in html


def test_compare_in_the_terminal(server: Server, two_runs: tuple[BenchRun, BenchRun]) -> None:
    a, b = two_runs
    p = cli(server, "compare", a.label, b.label, check=True)
    out = p.stdout
    assert out.startswith(f"load profile: A = {a.label}, B = {b.label}")
    with connect(server.conninfo) as conn:
        prof = conn.execute("SELECT metric, ratio, marked FROM chronicle.compare_load_profile(%s, %s)",
                            (a.label, b.label)).fetchall()
        settings = conn.execute("SELECT name FROM chronicle.compare_settings(%s, %s)",
                                (a.label, b.label)).fetchall()
    lines = out.splitlines()
    header = lines[1].split()
    assert header[0] == "metric" and "B/A" in header
    for metric, ratio, marked in prof:
        row = next(ln for ln in lines if ln.startswith(metric + "  "))
        if ratio is not None:
            assert f"{ratio:.2f}" in row
        assert row.rstrip().endswith("*") == bool(marked), row
    if settings:
        assert "settings that differ:" in out
        for (name,) in settings:
            assert any(ln.startswith(name + " ") for ln in lines), name
    else:
        assert "settings: no difference" in out
    assert "environment" in out


def test_summary_of_a_run_without_a_pgbench_log(server: Server) -> None:
    """A run opened by SQL around a load pgbench logs nothing of: the
    summary says so and counts WAL per server commit (its report:
    test_report.py)."""
    server.psql("SELECT chronicle.run_begin('t-nolog')")
    subprocess.run([str(server.bindir / "pgbench"), "-c", "2", "-T", "2"], env=server.env(),
                   check=True, capture_output=True)
    t = server.psql("SELECT clock_timestamp()")
    wait_for(lambda: server.psql(f"SELECT count(*) FROM chronicle.snapshot WHERE ts > '{t}'") != "0",
             "a snapshot after the load")
    server.psql("SELECT chronicle.run_end('t-nolog')")
    with connect(server.conninfo) as conn:
        s = summary.collect(conn, "t-nolog")
    assert s.transactions == 0 and s.tps is None
    assert s.wal_bytes_per_transaction == s.server["wal_bytes_per_commit"]
    assert s.wal_bytes_per_transaction is not None and s.wal_bytes_per_transaction > 0
    out = summary.format_summary(s)
    assert "no log loaded" in out and "per server commit" in out


def test_bench_with_report(server: Server, two_runs: tuple[BenchRun, BenchRun],
                           tmp_path: pathlib.Path) -> None:
    a = two_runs[0]
    p = cli(server, "bench", "--label", "t-rep", "--report", str(tmp_path), "--vs", a.label,
            "--", "-c", "2", "-T", "2", check=True)
    assert p.stdout.splitlines()[-1] == f"report: {tmp_path / 'index.html'}"
    assert (tmp_path / "index.html").exists()


def test_bench_passes_its_connection_to_pgbench(server: Server) -> None:
    """-d alone says where to go: pgbench gets it as PG* variables, over
    wrong ones in the environment."""
    env = server.env()
    for k in ("PGHOST", "PGDATABASE", "PGUSER"):
        env.pop(k)
    env["PGPORT"] = "1"
    p = cli(server, "bench", "-d", server.conninfo, "--label", "t-conninfo", "--",
            "-c", "1", "-T", "1", env=env, check=True)
    assert "no log loaded" not in p.stdout
    assert int(server.psql("SELECT transactions FROM chronicle.app_summary('t-conninfo')")) > 0


# The run's window holds pgbench and nothing else (issue 21): bench ends the
# run at the collector's first snapshot after pgbench, sends nothing to the
# server before that snapshot, and loads the log only then.  A select-only
# run after a VACUUM writes next to no WAL of its own, so the load's WAL
# (tens of thousands of rows) stands out wherever it is recorded.

# pgbench's exit after its last transaction and bench's margin for its
# backends' exit (bench.EXIT_MARGIN): a snapshot this close after pgbench's
# last transaction may be passed over for the next one.
EXIT_SLACK = 0.5

# What bench sends, but run_begin: before it, the extension's version, the
# snapshot interval, pgbench's scale; after pgbench, the load (the staging
# table, COPY, the parsing), its clock and poll for the snapshot, run_end.
CLIENT_STATEMENTS = ("extversion", "snapshot_interval", "to_regclass", "load_pgbench_lines",
                     "pgbench_staging", "chronicle_pgbench_lines", "chronicle.snapshot",
                     "clock_timestamp", "run_end")


@dataclasses.dataclass
class WindowRun:
    run: BenchRun
    ref: LogReading
    started: Any
    ended: Any
    last_end: str       # pgbench's last transaction's end, an SQL expression
    after: str          # a snapshot taken after bench's session ended
    interval: float     # chronicle.snapshot_interval, seconds


@pytest.fixture(scope="module")
def window_run(server: Server, tmp_path_factory: pytest.TempPathFactory) -> WindowRun:
    # the hint bits and dead rows of the read-write runs before: set and
    # removed now, not by the select-only run (its WAL would be theirs)
    server.psql("VACUUM pgbench_accounts, pgbench_branches, pgbench_tellers")
    logdir = tmp_path_factory.mktemp("t-window")
    p = cli(server, "bench", "--label", "t-window", "--keep-logs", str(logdir), "--",
            "-S", "-c", "2", "-j", "2", "-T", "3", check=True)
    # bench's session has ended (its last statistics flushed), then a snapshot
    wait_for(lambda: server.psql("SELECT count(*) FROM pg_stat_activity "
                                 "WHERE application_name = 'pg-chronicle'") == "0",
             "bench's session to end")
    t = server.psql("SELECT clock_timestamp()")
    wait_for(lambda: server.psql(f"SELECT count(*) FROM chronicle.snapshot WHERE ts > '{t}'") != "0",
             "a snapshot after bench")
    after = server.psql(f"SELECT min(ts) FROM chronicle.snapshot WHERE ts > '{t}'")
    ref = read_logs(logdir)
    with connect(server.conninfo) as conn:
        started, ended = conn.execute("SELECT started, ended FROM chronicle.run WHERE label = 't-window'"
                                      ).fetchone()
        interval = conn.execute("SELECT extract(epoch FROM current_setting('chronicle.snapshot_interval')"
                                "::interval)::float8").fetchone()[0]
    sec, usec = ref.last_end_exact
    return WindowRun(run=BenchRun("t-window", logdir, p), ref=ref, started=started, ended=ended,
                     last_end=f"(to_timestamp({sec}) + {usec} * interval '1 microsecond')",
                     after=f"'{after}'::timestamptz", interval=interval)


def test_bench_run_ends_at_the_first_snapshot_after_pgbench(server: Server, window_run: WindowRun) -> None:
    """(a) The run ends at the first snapshot after pgbench's last
    transaction (as pgbench's log has it, read here)."""
    w = window_run
    assert w.ref.n > 1000
    row = server.psql(f"""
        SELECT (SELECT count(*) FROM chronicle.snapshot s WHERE s.ts = r.ended),
               r.ended > {w.last_end},
               (SELECT count(*) FROM chronicle.snapshot s WHERE s.ts > {w.last_end} AND s.ts < r.ended),
               (SELECT count(*) FROM chronicle.snapshot s
                 WHERE s.ts > {w.last_end} + interval '{EXIT_SLACK} s' AND s.ts < r.ended)
          FROM chronicle.run r WHERE r.label = 't-window'""")
    at_snapshot, covers, between, late = row.split("|")
    assert at_snapshot == "1", "the run ends at a snapshot"
    assert covers == "t", "the window covers pgbench's last transaction"
    # the first snapshot after it; the second only when the first came
    # while pgbench and its backends were exiting
    assert (between, late) in (("0", "0"), ("1", "0")), row


def _statements(server: Server, from_sql: str, to_sql: str) -> list[str]:
    out = server.psql("SELECT replace(coalesce(query, '?'), E'\\n', ' ') "
                      f"FROM chronicle.statements_top({from_sql}, {to_sql}, 100000, 'calls')")
    return out.splitlines()


def test_bench_run_holds_no_statement_of_the_client(server: Server, window_run: WindowRun) -> None:
    """(b) No statement of bench's (the load, its poll, run_end, its
    questions before the run) is among the run's statements, but run_begin
    (the window starts inside an interval); the load is in the intervals
    after the run.  (The bench run before this one in the module loaded
    its log just before: bench's wait before run_begin keeps that out.)"""
    w = window_run
    started = "(SELECT started FROM chronicle.run WHERE label = 't-window')"
    ended = "(SELECT ended FROM chronicle.run WHERE label = 't-window')"
    inside = _statements(server, started, ended)
    assert any("pgbench_accounts" in q for q in inside), inside
    leaked = [q for q in inside if any(c in q for c in CLIENT_STATEMENTS)]
    assert leaked == []
    outside = _statements(server, ended, w.after)
    assert any("load_pgbench_lines" in q for q in outside), outside


def _wal(server: Server, from_sql: str, to_sql: str) -> int:
    return int(server.psql(f"SELECT coalesce(sum(wal_bytes), 0)::bigint "
                           f"FROM chronicle.wal_totals({from_sql}, {to_sql})"))


def test_bench_run_holds_no_wal_of_the_load(server: Server, window_run: WindowRun) -> None:
    """(c) The load's WAL is recorded after the run, not in its last
    interval.  The load's WAL measured here: the same files loaded again
    into a run of its own, between two WAL positions."""
    w = window_run
    with connect(server.conninfo) as conn:
        conn.execute("SELECT chronicle.run_label('t-window-reload', now() - interval '1 min', now())")
        try:
            lsn = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
            load_logs(conn, "t-window-reload", log_files(w.run.logdir))
            load_wal = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s)::bigint",
                                    (lsn,)).fetchone()[0]
        finally:
            conn.execute("SELECT chronicle.run_delete('t-window-reload')")
    started = "(SELECT started FROM chronicle.run WHERE label = 't-window')"
    ended = "(SELECT ended FROM chronicle.run WHERE label = 't-window')"
    # the run's last interval: the one ending at its last snapshot
    last_end = f"(SELECT max(ts) FROM chronicle.snapshot WHERE ts <= {ended})"
    last_start = f"(SELECT max(ts) FROM chronicle.snapshot WHERE ts < {last_end})"
    run_wal = _wal(server, started, ended)
    last_wal = _wal(server, last_start, last_end)
    after_wal = _wal(server, ended, w.after)
    # PostgreSQL 18.6, cassert: load 6.5 MB, run 20 kB, last interval 9 kB, after 6.4 MB;
    # 17.11 once: load 7.9 MB, run 414 kB (the whole server's WAL of those
    # 3 s, not studied), last interval 3 kB, after 7.8 MB; another time:
    # load 7.5 MB, run 417 kB, last interval 403 kB (the run's own WAL can
    # land in its last interval), after 7.4 MB.
    # The load's WAL in the run (in its last interval, where a late end
    # would put it) would be all of it: a fifth is far from both.
    figures = f"load {load_wal:,}, run {run_wal:,}, last interval {last_wal:,}, after {after_wal:,}"
    assert load_wal > 1_000_000, figures
    assert after_wal > 0.8 * load_wal, figures
    assert run_wal < 0.2 * load_wal, figures


def test_select_only_window_is_pgbench_and_one_interval(window_run: WindowRun) -> None:
    """(d) A select-only run of 3 s: its window is pgbench's time and at
    most one snapshot interval more (no tail of the load)."""
    w = window_run
    pgbench = w.ref.last_end - w.ref.first_start
    window = (w.ended - w.started).total_seconds()
    assert pgbench > 2.5
    # pgbench's start (its connections) and exit, bench's margin: 0.75 s
    assert window <= pgbench + w.interval + 0.75, (window, pgbench)


def test_run_end_after(server: Server) -> None:
    """run_end(run, after): the run ends at the first snapshot after
    `after`, or now with a WARNING when there is none; `after` must be a
    finite time inside the run, not in the future."""
    with connect(server.conninfo) as conn:
        started = conn.execute("SELECT started FROM chronicle.run_begin('t-after')").fetchone()[0]
        try:
            wait_for(lambda: conn.execute("SELECT count(*) FROM chronicle.snapshot WHERE ts > %s",
                                          (started,)).fetchone()[0] >= 2, "two snapshots")
            s1, s2 = [r[0] for r in conn.execute(
                "SELECT ts FROM chronicle.snapshot WHERE ts > %s ORDER BY ts LIMIT 2", (started,))]
            for bad in ("'infinity'", "'-infinity'", "%(started)s::timestamptz - interval '1 microsecond'",
                        "clock_timestamp() + interval '1 hour'"):
                with pytest.raises(psycopg.Error) as exc:
                    conn.execute(f"SELECT chronicle.run_end('t-after', after => {bad})",
                                 {"started": started} if "%(" in bad else None)
                assert exc.value.sqlstate == "22023", (bad, exc.value)
                assert exc.value.diag.message_hint, bad
            ended = conn.execute("SELECT ended FROM chronicle.run_end('t-after', after => %s)",
                                 (s1,)).fetchone()[0]
            assert ended == s2, "the first snapshot after `after`"
        finally:
            conn.execute("SELECT chronicle.run_end('t-after') WHERE EXISTS "
                         "(SELECT FROM chronicle.run WHERE label = 't-after' AND ended IS NULL)")
        conn.execute("SELECT chronicle.run_delete('t-after')")

        # `after` at its start: the first snapshot of the run
        started = conn.execute("SELECT started FROM chronicle.run_begin('t-after')").fetchone()[0]
        wait_for(lambda: conn.execute("SELECT count(*) FROM chronicle.snapshot WHERE ts > %s",
                                      (started,)).fetchone()[0] >= 1, "a snapshot")
        ended = conn.execute("SELECT ended FROM chronicle.run_end('t-after', after => %s)",
                             (started,)).fetchone()[0]
        assert ended == conn.execute("SELECT min(ts) FROM chronicle.snapshot WHERE ts > %s",
                                     (started,)).fetchone()[0]
        conn.execute("SELECT chronicle.run_delete('t-after')")

        # no snapshot after `after` yet: the run ends now, and says so
        warnings: list[str] = []
        conn.add_notice_handler(lambda d: warnings.append(f"{d.severity_nonlocalized}: {d.message_primary}"))
        started = conn.execute("SELECT started FROM chronicle.run_begin('t-after')").fetchone()[0]
        ended = conn.execute("SELECT ended FROM chronicle.run_end('t-after', after => clock_timestamp())"
                             ).fetchone()[0]
        assert ended > started
        assert warnings == ['WARNING: chronicle.run_end: no snapshot was recorded after the time '
                            'given; run "t-after" ends now']
        conn.execute("SELECT chronicle.run_delete('t-after')")
