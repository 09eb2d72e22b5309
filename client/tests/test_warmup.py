"""Warm-up: bench --warmup S leaves a run's first S seconds out of every
analysis of it (chronicle.run_set_warmup; run_window() starts after it, the
pgbench numbers count the transactions that end after it), checked against
the pgbench log read here; the report's charts still show those seconds,
shaded; pg-chronicle warmup changes it afterwards; bad input.  The trend
test of a run that never settles (panels.trend) on made-up series."""

from __future__ import annotations

import math
import pathlib
import random
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from pg_chronicle import panels

from conftest import Server, cli
from report_runs import report_data

# What this checks does not depend on the server's version: tools/test.sh
# runs it against the newest one only.
pytestmark = pytest.mark.one_version

WARMUP = 2.0


def _log(logdir: pathlib.Path) -> list[tuple[float, int]]:
    """(end in epoch seconds, latency in us) of every completed transaction
    of pgbench's per-transaction logs."""
    out = []
    for f in sorted(logdir.glob("pgbench_log.*")):
        for line in f.read_text().splitlines(keepends=True):
            fields = line.split()
            if line.endswith("\n") and fields[2].isdigit():
                out.append((int(fields[4]) + int(fields[5]) / 1e6, int(fields[2])))
    return out


def _nearest_rank(sorted_us: list[int], q: float) -> float:
    return sorted_us[max(0, math.ceil(q * len(sorted_us)) - 1)] / 1000.0


def test_warmup_is_left_out_of_every_number(server: Server, tmp_path: pathlib.Path) -> None:
    logdir = tmp_path / "logs"
    p = cli(server, "bench", "--label", "warm", "--warmup", f"{WARMUP}", "--keep-logs", str(logdir),
            "--", "-c", "2", "-j", "2", "-T", "6", check=True)
    assert f"after a warm-up of {WARMUP:.1f} s" in p.stdout
    started = float(server.psql("SELECT extract(epoch FROM started) FROM chronicle.run WHERE label = 'warm'"))
    steady = float(server.psql("SELECT extract(epoch FROM run_from) FROM chronicle.run_window('warm')"))
    assert steady == pytest.approx(started + WARMUP, abs=1e-6)

    # pgbench's numbers: the transactions ending after the warm-up, over the
    # time from the warm-up's end (or the first one's start) to the last end
    log = _log(logdir)
    after = [(e, us) for e, us in log if e > steady]
    assert 0 < len(after) < len(log)
    first_start = min(e - us / 1e6 for e, us in after)
    secs = max(e for e, _ in after) - max(first_start, steady)
    n, tps, p50, p99 = server.psql("SELECT transactions, tps, latency_p50_ms, latency_p99_ms "
                                   "FROM chronicle.app_summary('warm')").split("|")
    assert int(n) == len(after)
    assert float(tps) == pytest.approx(len(after) / secs, rel=1e-4)
    lat = sorted(us for _, us in after)
    assert float(p50) == pytest.approx(_nearest_rank(lat, 0.5)) and \
        float(p99) == pytest.approx(_nearest_rank(lat, 0.99))

    # the report: the charts from the run's start, the warm-up shaded, the
    # summaries after it
    out = tmp_path / "report"
    cli(server, "report", "warm", "-o", str(out), check=True)
    data = report_data(out / "index.html")
    assert data["meta"]["warmup"] == pytest.approx([started, steady], abs=1e-3)
    charts = {c["id"]: c for p in data["panels"] for c in p["charts"]}
    tps_chart = charts["throughput.tps"]
    assert min(tps_chart["x"]) < steady            # the warm-up's intervals are drawn
    hist = charts["latency.histogram"]
    assert {m["kind"]: m["x"] for m in hist["marks"]} == \
        pytest.approx({"p50": _nearest_rank(lat, 0.5), "p99": _nearest_rank(lat, 0.99)})
    headline = dict(data["meta"]["headline"])
    assert headline["tps"] == f"{float(tps):.0f}"

    # changed afterwards: no warm-up, every transaction counts again
    p = cli(server, "warmup", "warm", "0", check=True)
    assert "warm-up 0 s" in p.stdout
    assert int(server.psql("SELECT transactions FROM chronicle.app_summary('warm')")) == len(log)
    assert float(server.psql("SELECT extract(epoch FROM run_from) FROM chronicle.run_window('warm')")) == \
        pytest.approx(started, abs=1e-6)
    out2 = tmp_path / "report2"
    cli(server, "report", "warm", "-o", str(out2), check=True)
    assert "warmup" not in report_data(out2 / "index.html")["meta"]

    # bad input: a clear error, nothing changed
    p = cli(server, "warmup", "warm", "3600")
    assert p.returncode == 2 and "leaves nothing of run" in p.stderr and "Traceback" not in p.stderr
    for bad in ("-1", "nan", "soon"):
        p = cli(server, "warmup", "warm", bad)
        assert p.returncode == 2 and "SECONDS" in p.stderr, bad
    p = cli(server, "warmup", "no-such-run", "1")
    assert p.returncode == 2 and "unknown run" in p.stderr
    assert server.psql("SELECT warmup FROM chronicle.run WHERE label = 'warm'") == "00:00:00"
    with server.connect() as conn:
        for sql, code in (("SELECT chronicle.run_set_warmup('warm', NULL)", "22023"),
                          ("SELECT chronicle.run_set_warmup('warm', '-1 s')", "22023"),
                          ("SELECT chronicle.run_set_warmup('warm', 'infinity')", "22023"),
                          ("SELECT chronicle.run_set_warmup(NULL, '1 s')", "22004")):
            with pytest.raises(psycopg.Error) as exc:
                conn.execute(sql)
            assert exc.value.sqlstate == code, (sql, exc.value)
    assert server.psql("SELECT warmup FROM chronicle.run WHERE label = 'warm'") == "00:00:00"


def _window(n: int) -> panels.Window:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    ends = [t0 + timedelta(seconds=i + 1) for i in range(n)]
    return panels.Window(run="r", run_id=1, from_ts=t0, to_ts=ends[-1], started=t0, ended=ends[-1],
                         server_version="17", meta={}, settings={}, environment={}, ends=ends,
                         starts=[e - timedelta(seconds=1) for e in ends])


def test_trend_flags_a_run_that_never_settles() -> None:
    rnd = random.Random(7)
    w = _window(120)
    flat = [1000 + rnd.gauss(0, 40) for _ in range(120)]
    rising = [1000 + 2.0 * i + rnd.gauss(0, 40) for i in range(120)]
    tr_flat, tr_rising = panels.trend(w, list(flat)), panels.trend(w, list(rising))
    assert tr_flat is not None and tr_rising is not None
    # noise alone: a small change, or one not clear of the noise
    assert abs(tr_flat[0]) <= panels.STEADY_CHANGE or abs(tr_flat[1]) <= panels.STEADY_T
    # 2 tps a second over the second half's 60 s: about +10 %, clear of the noise
    assert tr_rising[0] == pytest.approx(120 / 1120, abs=0.03) and tr_rising[1] > panels.STEADY_T
    app = [{"interval_end": e, "transactions": 1, "tps": v} for e, v in zip(w.ends, rising, strict=True)]
    flag = panels.unsteady(w, app, {"commits_per_s": [None] * 120})
    assert flag is not None and flag.startswith("tps is not steady: its trend moved it by +")
    app_flat = [{**r, "tps": v} for r, v in zip(app, flat, strict=True)]
    assert panels.unsteady(w, app_flat, {"commits_per_s": [None] * 120}) is None
    # only what follows the warm-up counts: a rise inside it is not a trend
    w.steady_from = w.ends[59]
    settled = [1000 + 20.0 * min(i, 59) + rnd.gauss(0, 40) for i in range(120)]
    app_settled = [{**r, "tps": v} for r, v in zip(app, settled, strict=True)]
    assert panels.unsteady(w, app_settled, {"commits_per_s": [None] * 120}) is None
    assert panels.trend(_window(10), [1.0] * 10) is None     # fewer than 8 points after halving
