"""Trials against a real server: `bench --trials 3` records three runs
label#1 .. label#3, each with its own window and pgbench transactions; a
second configuration recorded through SQL (run_begin('name#k') ...
run_end(), its log loaded); compare and report of the two, the statistics
checked against a computation here from app_summary() of each trial
(pgbench's tps and latencies) and the WAL and commit totals (WAL per
transaction), not from the client's code."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import pathlib
import re
import subprocess
from collections.abc import Sequence

import pytest

from pg_chronicle import trials
from pg_chronicle.bench import load_logs, log_files
from pg_chronicle.db import ClientError, connect

from conftest import Server, cli, wait_for
from report_runs import report_data
from test_bench import read_logs

A = "t-trials"          # bench --trials 3
B = "t-sqltrials"       # two trials through SQL


@dataclasses.dataclass
class Recorded:
    bench: subprocess.CompletedProcess[str]
    logdir: pathlib.Path        # bench --keep-logs: logdir/1, logdir/2, logdir/3


def _sql_trial(server: Server, label: str, logdir: pathlib.Path, *pgbench: str) -> None:
    """A trial recorded through SQL: run_begin, pgbench with a log, run_end
    after the next snapshot, the log loaded into the run."""
    server.psql(f"SELECT chronicle.run_begin('{label}')")
    subprocess.run([str(server.bindir / "pgbench"), *pgbench, "-l", f"--log-prefix={logdir}/pgbench_log"],
                   env=server.env(), check=True, capture_output=True)
    t = server.psql("SELECT clock_timestamp()")
    wait_for(lambda: server.psql(f"SELECT count(*) FROM chronicle.snapshot WHERE ts > '{t}'") != "0",
             "a snapshot after pgbench")
    server.psql(f"SELECT chronicle.run_end('{label}')")
    with connect(server.conninfo) as conn:
        load_logs(conn, label, log_files(logdir))


@pytest.fixture(scope="module")
def recorded(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    logdir = tmp_path_factory.mktemp("trials")
    p = cli(server, "bench", "--label", A, "--trials", "3", "--keep-logs", str(logdir),
            "--", "-c", "2", "-j", "2", "-T", "2", check=True)
    for k in (1, 2):
        d = tmp_path_factory.mktemp(f"sqltrial{k}")
        _sql_trial(server, f"{B}#{k}", d, "-c", "1", "-T", "2")
    return Recorded(p, logdir)


def test_bench_trials_records_three_runs(server: Server, recorded: Recorded) -> None:
    """Three runs A#1 .. A#3, each ended, each with its own window (one
    after the other, never overlapping) holding its own transactions: as
    many as its own pgbench log has (kept in logdir/k)."""
    rows = server.psql(
        "SELECT r.label, r.started, r.ended, r.meta->>'pgbench', "
        "       (SELECT count(*) FROM chronicle.app_transaction t WHERE t.run_id = r.run_id), "
        "       (SELECT count(*) FROM chronicle.app_transaction t WHERE t.run_id = r.run_id "
        "         AND NOT (t.ts > r.started AND t.ts <= r.ended)) "
        f"  FROM chronicle.run r WHERE r.label LIKE '{A}%' ORDER BY r.started").splitlines()
    fields = [r.split("|") for r in rows]
    assert [f[0] for f in fields] == [f"{A}#1", f"{A}#2", f"{A}#3"]
    for k, (_label, started, ended, pgbench, n, outside) in enumerate(fields, 1):
        assert ended and ended > started
        assert pgbench == "pgbench -c 2 -j 2 -T 2"
        ref = read_logs(recorded.logdir / str(k))
        assert ref.n > 0 and int(n) == ref.n, (k, n, ref.n)
        assert outside == "0", "every transaction of a trial ends in its window"
    # one after the other: a trial's window ends before the next begins
    with connect(server.conninfo) as conn:
        spans = conn.execute("SELECT started, ended FROM chronicle.run WHERE label LIKE %s "
                             "ORDER BY started", (f"{A}#%",)).fetchall()
    for (_s0, e0), (s1, _e1) in itertools.pairwise(spans):
        assert e0 <= s1
    # bench printed each trial's summary, then the configuration's
    out = recorded.bench.stdout
    for k in (1, 2, 3):
        assert f"run {A}#{k}: " in out
    assert f"configuration {A} (3 trials: {A}#1, {A}#2, {A}#3): median and range of the trials" in out


def _table(out: str) -> tuple[str, list[str]]:
    """compare's lines above the trials' table (header, method), and the
    table's rows."""
    lines = out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("metric "))
    body = []
    for ln in lines[head + 2:]:
        if not ln or ln.startswith("0 in every trial"):
            break
        body.append(ln)
    return " ".join(lines[:head]), body


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def _reference(server: Server, labels: list[str]) -> dict[str, list[float]]:
    """Each trial's numbers as the test reads them: pgbench's tps, p50 and
    p99 from app_summary(), WAL per transaction from the WAL and commit
    totals of the run (per commit of the server, as the load profile)."""
    out: dict[str, list[float]] = {"pgbench tps": [], "latency p50": [], "latency p99": [], "WAL": []}
    for label in labels:
        tps, p50, p99 = server.psql(
            f"SELECT tps, latency_p50_ms, latency_p99_ms FROM chronicle.app_summary('{label}')").split("|")
        wal = server.psql(
            f"SELECT (SELECT sum(wal_bytes) FROM chronicle.wal_run_totals('{label}'))::float8"
            f"     / (SELECT sum(xact_commit) FROM chronicle.database_run_totals('{label}'))")
        out["pgbench tps"].append(float(tps))
        out["latency p50"].append(float(p50))
        out["latency p99"].append(float(p99))
        out["WAL"].append(float(wal))
    return out


def test_trial_statistics_match_an_independent_computation(server: Server, recorded: Recorded) -> None:
    a_labels = [f"{A}#{k}" for k in (1, 2, 3)]
    b_labels = [f"{B}#{k}" for k in (1, 2)]
    ra, rb = _reference(server, a_labels), _reference(server, b_labels)
    with connect(server.conninfo) as conn:
        ca, cb = trials.resolve(conn, A), trials.resolve(conn, B)
        assert (ca.labels, ca.trials, cb.labels, cb.trials) == (a_labels, True, b_labels, True)
        rows = {r.metric: r for r in trials.compare_sets(trials.load(conn, ca), trials.load(conn, cb))}
    out = cli(server, "compare", A, B, check=True).stdout
    lines = out.splitlines()
    assert lines[0] == (f"trials: A = {A} (3 trials: {A}#1, {A}#2, {A}#3), "
                        f"B = {B} (2 trials: {B}#1, {B}#2)")
    above, body = _table(out)
    assert "With 3 and 2 trials" in above and "20.0 %" in above      # 2 / C(5, 3)
    for metric in ("pgbench tps", "latency p50", "latency p99", "WAL"):
        a, b = ra[metric], rb[metric]
        ma, mb = _median(a), _median(b)
        ratios = [y / x for y in b for x in a]
        lo, hi = min(ratios), max(ratios)
        beyond = lo > 1 or hi < 1
        c = rows[metric].comparison
        assert c.a is not None and c.b is not None
        assert (c.a.median, c.a.low, c.a.high) == pytest.approx((ma, min(a), max(a)), rel=1e-12)
        assert (c.b.median, c.b.low, c.b.high) == pytest.approx((mb, min(b), max(b)), rel=1e-12)
        assert c.ratio == pytest.approx(mb / ma, rel=1e-12)
        assert (c.low, c.high) == pytest.approx((lo, hi), rel=1e-12)
        assert c.verdict == ("beyond" if beyond else "within"), metric
        # the terminal says the same
        row = next(ln for ln in body if ln.startswith(metric + "  "))
        # (columns are padded to the widest cell: any run of blanks between)
        cells = re.escape(f"{mb / ma:.3f}") + r"\s+" + re.escape(f"{lo:.3f} .. {hi:.3f}")
        assert re.search(rf"\s{cells}\s", row), row
        if beyond:
            word = (("faster" if mb > ma else "slower") if metric == "pgbench tps"
                    else ("higher" if mb > ma else "lower"))
            change = f"{mb / ma:.2f} times A" if mb / ma >= 2 else f"{abs(mb / ma - 1) * 100:.1f} % {word}"
            assert row.endswith(f"B is {change}, beyond the trials' spread"), row
        else:
            assert row.endswith("within noise"), row
    # the settings and environment of the trials with the median tps
    shown_a = a_labels[sorted(range(3), key=lambda i: (ra["pgbench tps"][i], i))[1]]
    shown_b = b_labels[sorted(range(2), key=lambda i: (rb["pgbench tps"][i], i))[0]]
    assert f"settings: no difference (between {shown_a} and {shown_b}, the trials with the median tps)" \
        in out or f"settings that differ (between {shown_a} and {shown_b}" in out


def test_same_configuration_is_within_noise(server: Server, recorded: Recorded) -> None:
    """A against itself: the same runs on both sides, every ratio exactly 1
    and every verdict within noise (deterministic, unlike two recordings of
    one pgbench on a busy machine)."""
    out = cli(server, "compare", A, A, check=True).stdout
    assert out.startswith(f"trials: A = {A} (3 trials")
    body = _table(out)[1]
    assert len(body) >= 4
    for row in body:
        assert "beyond" not in row
        assert row.endswith("within noise"), row
        cols = re.split(r"\s{2,}", row)
        if cols[-3] != "-":             # a metric with a ratio (not 0 against 0)
            assert cols[-3] == "1.000", row
    assert "pgbench tps" in body[0]
    with connect(server.conninfo) as conn:
        s = trials.load(conn, trials.resolve(conn, A))
        for r in trials.compare_sets(s, s):
            assert r.comparison.verdict == "within"
            assert r.comparison.ratio in (1.0, None)


def test_one_trial_each_says_no_spread_is_known(server: Server, recorded: Recorded) -> None:
    """Configurations of one trial each, labelled through SQL after the fact
    (run_label over two trials' windows): no spread known, every row."""
    with connect(server.conninfo) as conn:
        for k, name in ((1, "t-one"), (2, "t-two")):
            conn.execute("SELECT chronicle.run_label(%s, started, ended) FROM chronicle.run "
                         "WHERE label = %s", (f"{name}#1", f"{A}#{k}"))
    out = cli(server, "compare", "t-one", "t-two", check=True).stdout
    above, body = _table(out)
    assert above.startswith("trials: A = t-one (1 trial: t-one#1), B = t-two (1 trial: t-two#1) "
                            "One trial on each side: no spread is known")
    assert body and all(ln.endswith("no spread known (one trial each)") for ln in body), body
    # plain runs: the load profile, and the same said at the end
    out = cli(server, "compare", f"{A}#1", f"{A}#2", check=True).stdout
    assert out.startswith(f"load profile: A = {A}#1, B = {A}#2")
    assert out.splitlines()[-1].startswith("one run each: no spread is known")


def test_report_of_two_configurations(server: Server, recorded: Recorded, tmp_path: pathlib.Path) -> None:
    p = cli(server, "report", A, "--vs", B, "-o", str(tmp_path), check=True)
    assert p.stdout.strip() == str(tmp_path / "index.html")
    data = report_data(tmp_path / "index.html")
    ra, rb = _reference(server, [f"{A}#{k}" for k in (1, 2, 3)]), _reference(server, [f"{B}#1", f"{B}#2"])
    shown_a = f"{A}#{sorted(range(3), key=lambda i: (ra['pgbench tps'][i], i))[1] + 1}"
    shown_b = f"{B}#{sorted(range(2), key=lambda i: (rb['pgbench tps'][i], i))[0] + 1}"
    # the panels show the trials with the median tps
    assert (data["meta"]["run"], data["meta"]["vs"]) == (shown_a, shown_b)
    first = data["panels"][0]
    assert first["id"] == "trials" and data["panels"][1]["id"] == "compare"
    tables = {t["id"]: t for t in first["tables"]}
    assert list(tables) == ["trials.compare", "trials.a", "trials.b"]
    t = tables["trials.compare"]
    rows = {r[0]: r for r in t["rows"]}
    for metric in ("pgbench tps", "latency p50", "latency p99", "WAL"):
        a, b = ra[metric], rb[metric]
        ratios = [y / x for y in b for x in a]
        lo, hi = min(ratios), max(ratios)
        r = rows[metric]
        assert r[6] == pytest.approx(_median(b) / _median(a), rel=1e-3)
        assert r[7] == f"{lo:.3f} .. {hi:.3f}"
        assert ("beyond" in r[8]) == (lo > 1 or hi < 1), r
    assert t["marked"] == [i for i, r in enumerate(t["rows"]) if "beyond" in r[8]]
    assert [r[-1] for r in tables["trials.a"]["rows"]] == \
        ["shown" if f"{A}#{k}" == shown_a else "" for k in (1, 2, 3)]
    assert (tmp_path / "trials.png").exists() and (tmp_path / "trials.svg").exists()


UNTRUSTED = "<b>&amp; \x1b]0;pwned\x07\x1b[2J\x9b1m"


def test_untrusted_configuration_name(server: Server, recorded: Recorded) -> None:
    """A configuration whose name holds markup and control characters:
    compare shows it escaped, without a control character but newline."""
    with connect(server.conninfo) as conn:
        for k in (1, 2):
            conn.execute("SELECT chronicle.run_label(%s, started, ended) FROM chronicle.run "
                         "WHERE label = %s", (f"{UNTRUSTED}#{k}", f"{A}#{k}"))
    p = cli(server, "compare", A, UNTRUSTED, check=True)
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", p.stdout + p.stderr)
    assert "\\x1b]0;pwned\\x07\\x1b[2J\\x9b1m#1" in p.stdout


def test_names_stay_unambiguous(server: Server, recorded: Recorded, tmp_path: pathlib.Path) -> None:
    """bench refuses a label that would make a name both a run and a
    configuration (or add to existing trials); compare says so of one made
    through SQL; an open trial is not compared."""
    before = server.psql("SELECT count(*) FROM chronicle.run")
    for args, says in (
            (["--label", A, "--trials", "2"], f"runs {A}#1, {A}#2, {A}#3 exist already"),
            (["--label", A], f"(or the next trial's label, {A}#4)"),
            (["--label", f"{A}#1", "--trials", "2"], f'a run labelled "{A}#1" exists already'),
            (["--label", "x", "--trials", "0"], "--trials wants 1 or more, got 0")):
        p = cli(server, "bench", *args, "--", "-c", "1", "-T", "1")
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert p.stderr.startswith("pg-chronicle: ") and says in p.stderr, (args, p.stderr)
        assert "Traceback" not in p.stderr
    assert server.psql("SELECT count(*) FROM chronicle.run") == before
    with connect(server.conninfo) as conn:
        conn.execute("SELECT chronicle.run_label('t-amb', started, ended) FROM chronicle.run "
                     "WHERE label = %s", (f"{A}#1",))
        conn.execute("SELECT chronicle.run_label('t-amb#1', started, ended) FROM chronicle.run "
                     "WHERE label = %s", (f"{A}#2",))
        with pytest.raises(ClientError, match='"t-amb" is both a run and the configuration'):
            trials.resolve(conn, "t-amb")
        # bench would not make a trial of a run either
        with pytest.raises(ClientError, match='would be a trial of "t-amb", which is a run'):
            trials.check_new_labels(conn, "t-amb#2", trials=False)
    p = cli(server, "compare", "t-amb", A)
    assert p.returncode == 2 and '"t-amb" is both a run' in p.stderr
    # an unknown name: the usual error, with the known runs
    p = cli(server, "compare", "t-nosuch", A)
    assert p.returncode == 2 and 'unknown run "t-nosuch"' in p.stderr
    server.psql("SELECT chronicle.run_begin('t-open#1')")
    try:
        p = cli(server, "compare", "t-open", A)
        assert p.returncode == 2 and "trial t-open#1 of \"t-open\" is still open" in p.stderr
    finally:
        server.psql("SELECT chronicle.run_end('t-open#1')")


def test_sql_median_of_the_docs(server: Server, recorded: Recorded) -> None:
    """The query docs/runs.md shows for psql users gives the client's medians."""
    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "runs.md").read_text("utf-8")
    m = re.search(r"```sql\n(-- the medians of a configuration's trials.*?)```", doc, re.S)
    assert m, "docs/runs.md has the query"
    sql = m.group(1).replace("'off'", f"'{A}'")
    got = {r.split("|")[0]: r.split("|")[1] for r in server.psql(sql).splitlines()}
    with connect(server.conninfo) as conn:
        s = trials.load(conn, trials.resolve(conn, A))
    for metric in s.metrics():
        sp = trials.spread(metric.values)
        assert sp is not None
        assert float(got[metric.metric]) == pytest.approx(sp.median, rel=1e-9), metric.metric
    assert not math.isnan(float(got["pgbench tps"]))
    assert json.dumps(sorted(got)) == json.dumps(sorted(m.metric for m in s.metrics()))
