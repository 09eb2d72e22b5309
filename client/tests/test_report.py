"""pg-chronicle report against a real server: every panel of a short pgbench
run has data, one point per snapshot interval; a run without a pgbench log
still reports; the --vs comparison; the pictures; bad input."""

from __future__ import annotations

import collections
import fractions
import math
import pathlib
import xml.etree.ElementTree as ET

import matplotlib.image
import psycopg
import pytest

from pg_chronicle import panels
from pg_chronicle.db import ClientError, connect
from pg_chronicle.plots import envelope
from pg_chronicle.report import write_report

import report_runs
from conftest import Server, cli
from test_bench import read_logs

PANELS = ["throughput", "slowest", "profile", "waits", "cpu", "io", "wal", "buffers", "relations", "tables",
          "os", "statements", "latency", "settings"]


@pytest.fixture(scope="module")
def runs(server: Server, tmp_path_factory: pytest.TempPathFactory) -> report_runs.ReportRuns:
    return report_runs.get(server, tmp_path_factory.mktemp("report"))


def _has_slowest(server: Server) -> bool:
    return server.psql("SELECT to_regproc('chronicle.slowest_intervals') IS NOT NULL") == "t"


def test_profile_panel_is_the_load_profile(server: Server, runs: report_runs.ReportRuns) -> None:
    data = report_runs.report_data(runs.report_a / "index.html")
    (t,) = [t for p in data["panels"] if p["id"] == "profile" for t in p["tables"]]
    want = server.psql(f"SELECT string_agg(metric, '|' ORDER BY ord) FROM chronicle.load_profile('{runs.a}')"
                       " WITH ORDINALITY AS l(metric, unit, s, t, ord) WHERE s IS NOT NULL OR t IS NOT NULL")
    assert [r[0] for r in t["rows"]] == want.split("|")
    assert t["note"] is None        # the report's window is the run's
    row = {r[0]: r for r in t["rows"]}["CPU of client backends"]
    assert row[2] is not None and row[2] > 0 and row[3] is not None and row[3] > 0


def test_every_panel_has_data(server: Server, runs: report_runs.ReportRuns) -> None:
    data = report_runs.report_data(runs.report_a / "index.html")
    n = report_runs.intervals_of(server, runs.a)
    assert n >= 5
    assert data["meta"]["run"] == runs.a and data["meta"]["intervals"] == n
    assert [p["id"] for p in data["panels"]] == PANELS
    for p in data["panels"]:
        if p["id"] == "slowest" and not _has_slowest(server):
            assert "not installed" in p["empty"]
            continue
        assert p["empty"] is None, f"panel {p['id']}: {p['empty']}"
        assert p["charts"] or p["tables"], p["id"]
        for c in p["charts"]:
            assert c["series"], c["id"]
            if c["kind"] != "time":
                continue
            # one point per snapshot interval, in every series
            assert len(c["x"]) == n, c["id"]
            assert c["x"] == sorted(c["x"])
            for s in c["series"]:
                assert len(s["values"]) == n, (c["id"], s["label"])
            assert any(v is not None for s in c["series"] for v in s["values"]), c["id"]
    charts = {c["id"]: c for p in data["panels"] for c in p["charts"]}
    for cid in ("throughput.tps", "throughput.latency", "waits.aas", "io.hit_ratio",
                "wal.bytes", "wal.records", "buffers.state", "buffers.usage",
                "latency.histogram", "latency.cdf"):
        assert cid in charts, cid
    # pgbench reads and extends (writes: WAL's on 18, a checkpoint's when one ran)
    assert {"io.read_bytes_per_s", "io.extend_bytes_per_s"} & set(charts)
    assert [s["label"] for s in charts["throughput.latency"]["series"]] == ["p50", "p99", "max"]
    assert len(charts["waits.aas"]["series"]) == 8 and charts["waits.aas"]["stack"]
    # the distribution: shares of every transaction of pgbench's own log,
    # each bin's share that of the log's latencies in it (40 bins a decade
    # of microseconds, counted here from the log)
    ref = read_logs(runs.logdir_a)
    hist = charts["latency.histogram"]
    # (the page keeps 5 significant digits)
    assert sum(hist["series"][0]["values"]) == pytest.approx(1.0, rel=1e-4)
    bins = collections.Counter(math.floor(math.log10(max(us, 1)) * 40) for us in ref.latencies_us)
    lo, hi = min(bins), max(bins)
    assert len(hist["x"]) == hi - lo + 1
    for b, share in zip(range(lo, hi + 1), hist["series"][0]["values"], strict=True):
        assert share == pytest.approx(bins[b] / ref.n, rel=1e-4, abs=1e-9), b
    cdf = charts["latency.cdf"]["series"][0]["values"]
    assert cdf == sorted(cdf) and cdf[-1] == pytest.approx(1.0)
    # the axis runs from the fastest bin to the slowest, not to the decades around them
    assert hist["x_min"] <= min(ref.latencies_us) / 1000.0 < hist["x"][0]
    assert hist["x"][-2] <= max(ref.latencies_us) / 1000.0 <= hist["x"][-1]
    # p50 and p99 marked: the nearest-rank percentiles of the log's latencies
    lat = sorted(ref.latencies_us)
    want = {k: lat[max(0, -(-len(lat) * q // 100) - 1)] / 1000.0 for k, q in (("p50", 50), ("p99", 99))}
    for c in (hist, charts["latency.cdf"]):
        assert {m["kind"]: m["x"] for m in c["marks"]} == pytest.approx(want)
    # the per-interval max latency never exceeds the run's max from the log
    worst = max(v for v in charts["throughput.latency"]["series"][2]["values"] if v is not None)
    assert worst == pytest.approx(max(ref.latencies_us) / 1000.0, rel=1e-4)
    # tps has a point in every interval but those pgbench ran only part of
    # (its first and last: app_intervals' partial ones), where a rate would be
    # a spike or a dip that did not happen
    tps = charts["throughput.tps"]["series"][0]["values"]
    partial = [v == "t" for v in server.psql(
        f"SELECT partial FROM chronicle.app_intervals('{runs.a}') ORDER BY interval_end").split()]
    assert len(partial) == n and any(partial)
    assert [v is None for v in tps] == partial
    tables = {t["id"]: t for p in data["panels"] for t in p["tables"]}
    assert tables["waits.top"]["rows"] and "coverage" in tables["waits.top"]["note"]
    assert any("pgbench_accounts" in r[0] for r in tables["statements.top"]["rows"])
    settings = {r[0]: r[1] for r in tables["settings.settings"]["rows"]}
    # conftest's fsync = off; superuser-only settings (shared_preload_libraries) are not kept
    assert settings["fsync"] == "off" and "shared_preload_libraries" not in settings
    if _has_slowest(server):
        slow = tables["slowest.table"]
        assert 1 <= len(slow["rows"]) <= 10
        assert [r[0] for r in slow["rows"]] == list(range(1, len(slow["rows"]) + 1))
        # the intervals that stand out are marked: more of their transactions
        # slower than the log's p99 (nearest rank) than a steady run shows
        # with a chance of 1 % over the window's intervals (the binomial
        # tail, here exact in fractions from the log's own counts); the
        # scale, p99 over the window's; fewer than 3 standing out, 3 rows shown
        p99 = want["p99"]
        cols = slow["columns"]
        for i, r in enumerate(slow["rows"]):
            assert r[cols.index("p99 / window p99")] == pytest.approx(r[cols.index("p99 ms")] / p99, abs=0.01)
            lo, hi = round(slow["x_start"][i] * 1e6), round(slow["x"][i] * 1e6)
            mine = [us for end, us in ref.tx if lo < end <= hi]
            k = sum(1 for us in mine if us > p99 * 1000)
            below = sum(math.comb(len(mine), j) * fractions.Fraction(1, 100) ** j
                        * fractions.Fraction(99, 100) ** (len(mine) - j) for j in range(k))
            assert (i in slow["marked"]) == (1 - below < fractions.Fraction(1, 100) / n), (r, len(mine), k)
        assert len(slow["marked"]) == len(slow["rows"]) or len(slow["rows"]) == 3
        assert f"slower than the window's p99 ({p99:.3f} ms)" in slow["note"]


def test_run_without_pgbench_log(server: Server, runs: report_runs.ReportRuns) -> None:
    data = report_runs.report_data(runs.report_nolog / "index.html")
    n = report_runs.intervals_of(server, runs.nolog)
    panels = {p["id"]: p for p in data["panels"]}
    tp = panels["throughput"]
    assert [c["id"] for c in tp["charts"]] == ["throughput.tps"]
    assert [s["label"] for s in tp["charts"][0]["series"]] == ["commits/s (pg_stat_database)"]
    assert len(tp["charts"][0]["x"]) == n
    assert sum(v or 0 for v in tp["charts"][0]["series"][0]["values"]) > 0
    assert "No pgbench log" in tp["note"]
    assert "No pgbench per-transaction log" in panels["latency"]["empty"]
    for pid in ("waits", "io", "wal", "buffers"):
        assert panels[pid]["empty"] is None and panels[pid]["charts"], pid
    assert (runs.report_nolog / "latency.png").exists()
    if _has_slowest(server):
        # ranked by the lowest commits/s instead of p99
        slow = panels["slowest"]["tables"][0]
        assert slow["title"] == "Slowest intervals (by tps)" and slow["columns"][2] == "commits/s"
        assert slow["rows"] and all(r[4] is None for r in slow["rows"])


def test_comparison(server: Server, runs: report_runs.ReportRuns) -> None:
    data = report_runs.report_data(runs.report_vs / "index.html")
    na = report_runs.intervals_of(server, runs.a)
    nb = report_runs.intervals_of(server, runs.b)
    assert data["meta"]["vs"] == runs.b and data["meta"]["vs_intervals"] == nb
    panels = {p["id"]: p for p in data["panels"]}
    assert data["panels"][0]["id"] == "compare"
    tables = {t["id"]: t for t in panels["compare"]["tables"]}
    lp = tables["compare.load_profile"]
    assert lp["rows"]
    # the rows and the marks (beyond 10 %, or from 0 to something) of
    # compare_load_profile(), in its order
    ref = [ln.split("|") for ln in server.psql(
        f"SELECT metric, marked FROM chronicle.compare_load_profile('{runs.a}', '{runs.b}')").splitlines()]
    assert [r[0] for r in lp["rows"]] == [m for m, _ in ref]
    assert lp["marked"] == [i for i, (_, mk) in enumerate(ref) if mk == "t"]
    ratio = lp["columns"].index("ratio B/A")
    for i, r in enumerate(lp["rows"]):
        if r[ratio] is not None and abs(r[ratio] - 1) > 0.11:
            assert i in lp["marked"], r
    assert "compare.settings" in tables
    # the runs' metadata that differ: the clients (2 and 4), not how they connected
    meta = {r[0]: r[1:] for r in tables["compare.meta"]["rows"]}
    assert meta["clients"] == ["2", "4"] and not any(k.startswith("connection.") for k in meta)
    # every time chart: A's and B's series on seconds since their start, each
    # with one point per interval of its own run (pgbench's tps: but for the
    # intervals it ran only part of, app_intervals' partial ones)
    tps_points = {r: int(server.psql(f"SELECT count(tps) FROM chronicle.app_intervals('{r}')"))
                  for r in (runs.a, runs.b)}
    # pgbench's latencies: a point in every interval a transaction ended in
    lat_points = {r: int(server.psql(
        f"SELECT count(latency_p50_ms) FROM chronicle.app_intervals('{r}')")) for r in (runs.a, runs.b)}
    for p in data["panels"]:
        for c in p["charts"]:
            if c["kind"] != "time":
                continue
            # keyed charts (I/O per backend type, devices) have the keys each run used
            keyed = c["id"].startswith(("io.", "os.", "relations.", "tables.")) and c["id"] != "io.hit_ratio"
            assert {s["run"] for s in c["series"]} <= {runs.a, runs.b}, c["id"]
            if c["stack"]:
                # a stack is one run's: A's chart X, B's X.vs under it, one y scale
                own = runs.b if c["id"].endswith(".vs") else runs.a
                assert {s["run"] for s in c["series"]} == {own}, c["id"]
                pair = {x["id"]: x for x in p["charts"]}
                other = pair[c["id"][:-3] if c["id"].endswith(".vs") else c["id"] + ".vs"]
                assert c["y_max"] == other["y_max"] > 0, c["id"]
                assert c["y_max"] == pytest.approx(max(
                    sum(v or 0 for v in col) for x in (c, other)
                    for col in zip(*(t["values"] for t in x["series"]), strict=True)), rel=1e-3)
                assert [t["label"] for t in c["series"]] == [t["label"] for t in other["series"]] \
                    or keyed or c["id"].startswith("cpu."), c["id"]
            elif not keyed:
                assert {s["run"] for s in c["series"]} == {runs.a, runs.b}, c["id"]
            assert c["x"][0] >= 0 and c["x"] == sorted(c["x"])
            for s in c["series"]:
                assert len(s["values"]) == len(c["x"])
                want = na if s["run"] == runs.a else nb
                if c["id"] == "throughput.tps" and s["label"].endswith("tps (pgbench)"):
                    want = tps_points[s["run"]]
                    assert 0 < want < (na if s["run"] == runs.a else nb), s["label"]
                if c["id"] == "throughput.latency":
                    want = lat_points[s["run"]]
                    assert 0 < want <= (na if s["run"] == runs.a else nb), s["label"]
                if c["id"] in ("relations.growth", "tables.written"):
                    # rates over each reading's period: none after the last reading
                    want = sum(v is not None for v in s["values"]) if \
                        0 < sum(v is not None for v in s["values"]) <= want else -1
                assert sum(v is not None for v in s["values"]) == want, (c["id"], s["label"])
    tps = next(c for c in panels["throughput"]["charts"] if c["id"] == "throughput.tps")
    assert [s["label"] for s in tps["series"]][:1] == [f"{runs.a}: tps (pgbench)"]
    hist = next(c for c in panels["latency"]["charts"] if c["id"] == "latency.histogram")
    assert [s["run"] for s in hist["series"]] == [runs.a, runs.b]
    # each run's histogram is shares of its own transactions, its p50 and p99 marked
    assert [sum(s["values"]) for s in hist["series"]] == pytest.approx([1.0, 1.0], rel=1e-4)
    assert sorted(m["label"].split(":")[0] for m in hist["marks"]) == sorted([runs.a] * 2 + [runs.b] * 2)
    assert "waits.aas" in {c["id"] for c in panels["waits"]["charts"]} and \
        "waits.aas.vs" in {c["id"] for c in panels["waits"]["charts"]}


def test_comparison_on_one_session(server: Server, runs: report_runs.ReportRuns,
                                   tmp_path: pathlib.Path) -> None:
    """A role allowed one session: the comparison's two windows, and each
    window's queries, run one after the other on it (no second session can
    be opened), and the report is the one written with many sessions."""
    server.psql("DROP ROLE IF EXISTS one_session; "
                "CREATE ROLE one_session LOGIN CONNECTION LIMIT 1 IN ROLE pg_monitor")
    env = server.env()
    env["PGUSER"] = "one_session"
    out = tmp_path / "one"
    p = cli(server, "report", runs.a, "--vs", runs.b, "-o", str(out), env=env)
    assert p.returncode == 0, p.stderr
    one = report_runs.report_data(out / "index.html")
    many = report_runs.report_data(runs.report_vs / "index.html")
    for d in (one, many):
        d["meta"].pop("generated")
    assert one == many
    # the limit holds: while one session of the role is open, another is refused
    with psycopg.connect(server.conninfo, user="one_session"), \
            pytest.raises(psycopg.OperationalError, match="too many connections"):
        psycopg.connect(server.conninfo, user="one_session")


def test_latency_threshold(server: Server, runs: report_runs.ReportRuns, tmp_path: pathlib.Path) -> None:
    """--latency-threshold: per interval, the transactions slower than it;
    over the window, as many as the pgbench log has (counted here)."""
    ref = read_logs(runs.logdir_a)
    thr = sorted(ref.latencies_us)[len(ref.latencies_us) * 9 // 10] / 1000.0   # about 10 % over
    cli(server, "report", runs.a, "--latency-threshold", f"{thr}", "-o", str(tmp_path), check=True)
    data = report_runs.report_data(tmp_path / "index.html")
    charts = {c["id"]: c for p in data["panels"] for c in p["charts"]}
    over = charts["throughput.over"]
    assert [s["label"] for s in over["series"]] == [f"over {thr:g} ms"]
    want = sum(1 for us in ref.latencies_us if us / 1000.0 > thr)
    assert want > 0 and sum(v or 0 for v in over["series"][0]["values"]) == want
    assert len(over["series"][0]["values"]) == len(over["x"]) == report_runs.intervals_of(server, runs.a)
    # without a threshold (run a's pgbench had no --latency-limit) and with nothing skipped: no chart
    plain = report_runs.report_data(runs.report_a / "index.html")
    assert "throughput.over" not in {c["id"] for p in plain["panels"] for c in p["charts"]}
    for bad in ("0", "-1", "nan", "fast"):
        p = cli(server, "report", runs.a, "--latency-threshold", bad, "-o", str(tmp_path / "x"))
        assert p.returncode == 2 and "--latency-threshold" in p.stderr and "Traceback" not in p.stderr


def test_skipped_without_threshold(server: Server, runs: report_runs.ReportRuns) -> None:
    """Without a latency threshold the report takes the skipped transactions
    per interval from app_intervals() (skipped_rows), not from a pass of its
    own (over_rows): the same rows, and as many as the run has.  A copy of
    run a's transactions with every 7th marked skipped (pgbench --rate -L)."""
    server.psql(f"""
        SELECT chronicle.run_label('rep-skip', r.started, r.ended)
          FROM chronicle.run r WHERE r.label = '{runs.a}';
        INSERT INTO chronicle.app_transaction (run_id, ts, client_id, tx_no, script_no, latency_us, status)
        SELECT (SELECT run_id FROM chronicle.run WHERE label = 'rep-skip'), t.ts, t.client_id, t.tx_no,
               t.script_no, CASE WHEN t.tx_no % 7 <> 0 THEN t.latency_us END,
               CASE WHEN t.tx_no % 7 = 0 THEN 'skipped' ELSE t.status END
          FROM chronicle.app_transaction t JOIN chronicle.run r USING (run_id) WHERE r.label = '{runs.a}'""")
    with connect(server.conninfo) as conn:
        w = panels.window(conn, "rep-skip")
        assert w.latency_threshold_ms is None
        kept = panels.skipped_rows(w, panels.app_rows(conn, w))
        assert kept == panels.over_rows(conn, w)
    want = int(server.psql("""
        SELECT count(*) FROM chronicle.app_transaction t, chronicle.run_window('rep-skip') w
         WHERE t.run_id = (SELECT run_id FROM chronicle.run WHERE label = 'rep-skip')
           AND t.status = 'skipped' AND t.ts > w.run_from AND t.ts <= w.run_to"""))
    assert want > 0 and sum(r["skipped"] for r in kept) == want
    server.psql("SELECT chronicle.run_delete('rep-skip')")


def test_pictures(runs: report_runs.ReportRuns) -> None:
    data = report_runs.report_data(runs.report_a / "index.html")
    for p in data["panels"]:
        png = runs.report_a / f"{p['id']}.png"
        svg = runs.report_a / f"{p['id']}.svg"
        img = matplotlib.image.imread(png)
        assert img.shape[0] > 100 and img.shape[1] > 100
        # not blank: the pixels vary
        assert float(img[..., :3].std()) > 0.02, png
        root = ET.parse(svg).getroot()
        assert root.tag.endswith("svg")
        if p["empty"] is None and p["charts"]:
            assert len(list(root.iter())) > 50, svg
        elif p["empty"] is None:
            # a panel of tables: each table's title, and its header's names in order
            lines = ["".join(e.itertext()) for e in root.iter() if e.tag.endswith("}text")]
            for t in p["tables"]:
                if not t.get("fold"):
                    assert t["title"] in lines, svg
                    assert any(line.split() == " ".join(t["columns"]).split() for line in lines), svg
    for d in (runs.report_vs, runs.report_nolog):
        for p in report_runs.report_data(d / "index.html")["panels"]:
            assert (d / f"{p['id']}.png").stat().st_size > 0
            ET.parse(d / f"{p['id']}.svg")


def test_html_is_self_contained(runs: report_runs.ReportRuns) -> None:
    text = (runs.report_a / "index.html").read_text("utf-8")
    assert "uPlot" in text
    for needle in ("<script src", "<link ", "http://", "https://cdn", "@import"):
        assert needle not in text.replace("https://github.com/leeoniya/uPlot", ""), needle


def test_bad_input(server: Server, runs: report_runs.ReportRuns, tmp_path: pathlib.Path) -> None:
    with connect(server.conninfo) as conn:
        with pytest.raises(ClientError, match='unknown run "no-such-run"'):
            write_report(conn, "no-such-run", None, None, None, tmp_path / "x")
        with pytest.raises(ClientError, match="is empty"):
            write_report(conn, runs.a, None, "2000-01-01", "2000-01-02", tmp_path / "y")
        with pytest.raises(ClientError, match='unknown run "nope"'):
            write_report(conn, runs.a, "nope", None, None, tmp_path / "z")
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
    for args, msg in ((["report", "no-such-run"], "unknown run"),
                      (["report", runs.a, "--from", "2000-01-01", "--to", "2000-01-02"], "is empty"),
                      (["report", runs.a, "--vs", "nope"], "unknown run")):
        p = cli(server, *args, "-o", str(tmp_path / "cli"))
        assert p.returncode == 2, p
        assert msg in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_envelope_keeps_spikes() -> None:
    """More points than columns: each column's min and max, never a mean."""
    x = list(range(3600))
    y = [10.0] * 3600
    y[1234] = 500.0          # a one-second spike
    y[2345] = 0.0            # and a dip
    y[3000] = None           # a gap
    xs, lo, hi = envelope(x, y, columns=1000)
    assert len(xs) == len(lo) == len(hi) == 1000
    assert max(hi) == 500.0 and min(lo) == 0.0
    assert sorted(hi)[-2] == 10.0
    assert envelope(x[:900], y[:900], columns=1000) is None
