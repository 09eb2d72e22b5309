"""The report's data: one function per panel, each reading the extension's SQL
API (never its tables, except pgbench's transactions for the latency
distribution) over one window.

Every time chart has one point per snapshot interval of the window (x is the
interval's end, epoch seconds); a value the source did not record is None.
Nothing is averaged: the page and the pictures draw every point (min/max
envelopes where there are more points than pixels).

A panel is a plain dict, JSON-ready:

    {"id", "title", "about", "charts": [chart], "tables": [table], "empty": str|None}
    chart = {"id", "title", "unit", "kind": "time"|"distribution", "x": [...],
             "series": [{"label", "values", "run"}], "stack": bool, "log_y": bool,
             "log_x": bool, "marks": [{"x", "label", "kind"}]}
    table = {"id", "title", "columns": [...], "rows": [[...]], "marked": [row index],
             "note": str|None}
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime

import psycopg
from psycopg.rows import dict_row


@dataclass
class Window:
    """A run's window as the report reads it: (from_ts, to_ts] and its intervals."""

    run: str
    run_id: int
    from_ts: datetime
    to_ts: datetime
    started: datetime
    ended: datetime | None
    server_version: str | None
    meta: dict
    settings: dict
    environment: dict
    ends: list[datetime] = field(default_factory=list)
    starts: list[datetime] = field(default_factory=list)

    @property
    def x(self) -> list[float]:
        return [e.timestamp() for e in self.ends]


def _rows(conn: psycopg.Connection, sql: str, params=()) -> list[dict]:
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(sql, params)
        return cur.fetchall()


def _has_function(conn: psycopg.Connection, name: str) -> bool:
    return bool(_rows(conn, "SELECT to_regproc(%s) IS NOT NULL AS ok", (name,))[0]["ok"]) \
        if "(" not in name else bool(
            _rows(conn, "SELECT to_regprocedure(%s) IS NOT NULL AS ok", (name,))[0]["ok"])


def _series(w: Window, rows: list[dict], col: str, scale: float = 1.0, fill=None) -> list:
    """One value per interval of the window from rows keyed by interval_end."""
    idx = {e: i for i, e in enumerate(w.ends)}
    out = [fill] * len(w.ends)
    for r in rows:
        i = idx.get(r["interval_end"])
        if i is not None:
            v = r.get(col)
            out[i] = None if v is None else float(v) * scale
    return out


def _chart(cid, title, unit, w: Window, series, *, stack=False, log_y=False, marks=None):
    return {"id": cid, "title": title, "unit": unit, "kind": "time", "x": w.x,
            "series": [{"label": lab, "values": vals, "run": w.run} for lab, vals in series],
            "stack": stack, "log_y": log_y, "log_x": False, "marks": marks or []}


def _has_values(values) -> bool:
    return any(v is not None for v in values)


def _nonzero(values) -> bool:
    return any(v for v in values if v is not None)


def _panel(pid, title, about, charts=(), tables=(), empty=None):
    charts = [c for c in charts if c is not None]
    tables = [t for t in tables if t is not None]
    if empty is None and not charts and not tables:
        empty = "No data recorded for this panel in the window."
    return {"id": pid, "title": title, "about": about, "charts": list(charts),
            "tables": list(tables), "empty": empty}


# ---------------------------------------------------------------------------
# The window

def window(conn: psycopg.Connection, run: str, from_ts=None, to_ts=None) -> Window:
    """The run's row and its intervals; from_ts/to_ts narrow (or move) the window.

    Raises psycopg errors for an unknown run (chronicle.run_window says which
    runs exist); the caller turns them into a ClientError."""
    r = _rows(conn, """
        SELECT r.run_id, r.label, r.started, r.ended, r.server_version, r.meta, r.settings,
               w.run_from, w.run_to,
               to_jsonb(r) -> 'environment' AS environment
          FROM chronicle.run_window(%s) w, chronicle.run r
         WHERE r.label = %s""", (run, run))[0]
    f = from_ts if from_ts is not None else r["run_from"]
    t = to_ts if to_ts is not None else r["run_to"]
    w = Window(run=run, run_id=r["run_id"], from_ts=f, to_ts=t, started=r["started"],
               ended=r["ended"], server_version=r["server_version"], meta=r["meta"] or {},
               settings=r["settings"] or {}, environment=r["environment"] or {})
    if isinstance(w.environment, str):
        w.environment = json.loads(w.environment)
    for iv in _rows(conn, "SELECT interval_start, interval_end FROM chronicle.intervals(%s, %s)",
                    (w.from_ts, w.to_ts)):
        w.starts.append(iv["interval_start"])
        w.ends.append(iv["interval_end"])
    return w


def headline(conn, w: Window) -> list[dict]:
    """chronicle.summary() of the window, with the run's pgbench numbers."""
    return _rows(conn, "SELECT metric, value, unit FROM chronicle.summary(%s, %s, %s)",
                 (w.from_ts, w.to_ts, w.run_id))


def server_series(conn, w: Window) -> dict[str, list]:
    """The per-interval numbers several panels share: commits/s and the hit
    ratio summed over the databases (chronicle.database_deltas), average active
    sessions per wait class (chronicle.wait_sampler_deltas), as
    chronicle.timeline() computes them (NULL in an interval with a reset, and
    for sampler history recorded before 0.2.0, whose per-class counts included
    background processes)."""
    n = len(w.ends)
    idx = {e: i for i, e in enumerate(w.ends)}
    out = {"commits_per_s": [None] * n, "hit_ratio": [None] * n}
    sums = {}
    for r in _rows(conn, """SELECT interval_end, seconds, reset, xact_commit, blks_hit, blks_read
                              FROM chronicle.database_deltas(%s, %s)""", (w.from_ts, w.to_ts)):
        a = sums.setdefault(r["interval_end"], [0, 0, 0, False, r["seconds"]])
        a[0] += r["xact_commit"] or 0
        a[1] += r["blks_hit"] or 0
        a[2] += r["blks_read"] or 0
        a[3] = a[3] or bool(r["reset"])
    for end, (c, h, rd, reset, secs) in sums.items():
        i = idx.get(end)
        if i is None or reset:
            continue
        out["commits_per_s"][i] = c / secs
        out["hit_ratio"][i] = h / (h + rd) if h + rd else None
    for _, col in WAIT_CLASSES:
        out[col] = [None] * n
    for r in _rows(conn, "SELECT * FROM chronicle.wait_sampler_deltas(%s, %s)", (w.from_ts, w.to_ts)):
        i = idx.get(r["interval_end"])
        if i is None or r["background_active"] is None or not r["ticks_taken"] or r["reset"]:
            continue
        for _, col in WAIT_CLASSES:
            out[col][i] = (r[col] or 0) / r["ticks_taken"]
    return out


def checkpoint_marks(conn, w: Window) -> list[dict]:
    """Checkpoint starts (num_timed/num_requested count when one starts) and ends
    (num_done, PostgreSQL 18) from chronicle.checkpointer_deltas()."""
    marks = []
    for r in _rows(conn, "SELECT * FROM chronicle.checkpointer_deltas(%s, %s)", (w.from_ts, w.to_ts)):
        started = (r["num_timed"] or 0) + (r["num_requested"] or 0)
        if started > 0:
            marks.append({"x": r["interval_end"].timestamp(), "label": "checkpoint start",
                          "kind": "checkpoint_start"})
        if (r.get("num_done") or 0) > 0:
            marks.append({"x": r["interval_end"].timestamp(), "label": "checkpoint end",
                          "kind": "checkpoint_end"})
    return marks


# ---------------------------------------------------------------------------
# Panels

def throughput(conn, w: Window, tl: dict[str, list], ckpt: list[dict]) -> dict:
    """tps and latency p50/p99/max per interval from the pgbench log
    (chronicle.app_intervals), commits/s from pg_stat_database (server_series).
    tps has no point in an interval pgbench ran only part of (the run's first
    and last: partial), where app_intervals() gives none since 0.3.0: a rate
    over the part would be a spike, over the whole interval a dip, neither
    real."""
    app = _rows(conn, """SELECT interval_end, transactions, tps, latency_p50_ms, latency_p99_ms,
                                latency_max_ms, basis
                           FROM chronicle.app_intervals(%s, %s, %s)""",
                (w.from_ts, w.to_ts, w.run))
    has_app = any(r["transactions"] for r in app)
    commits = tl["commits_per_s"]
    series = []
    if has_app:
        series.append(("tps (pgbench)", _series(w, app, "tps")))
    series.append(("commits/s (pg_stat_database)", commits))
    charts = [_chart("throughput.tps", "Throughput", "1/s", w, series, marks=ckpt)]
    note = None
    if has_app:
        charts.append(_chart("throughput.latency", "Latency per interval", "ms", w, [
            ("p50", _series(w, app, "latency_p50_ms")),
            ("p99", _series(w, app, "latency_p99_ms")),
            ("max", _series(w, app, "latency_max_ms")),
        ], log_y=True, marks=ckpt))
    else:
        note = "No pgbench log in this run: throughput is commits/s of pg_stat_database, no latency."
    p = _panel("throughput", "Throughput and latency",
               "tps and latency percentiles of the transactions that ended in each snapshot "
               "interval (pgbench log, chronicle.app_intervals; no tps in the intervals pgbench "
               "ran only part of, the run's first and last); commits/s from pg_stat_database "
               "(chronicle.database_deltas). Vertical lines: checkpoint start and end.", charts)
    p["note"] = note
    return p


WAIT_CLASSES = [("CPU", "active_cpu"), ("IO", "active_io"), ("LWLock", "active_lwlock"),
                ("Lock", "active_lock"), ("IPC", "active_ipc"), ("Client", "active_client"),
                ("Timeout", "active_timeout"), ("Other", "active_other")]


def waits(conn, w: Window, tl: dict[str, list]) -> dict:
    """Average active sessions by wait class (the sampler's per-class counts,
    server_series) and the top wait events as a share of DB time (wait_profile)."""
    series = [(name, tl[col]) for name, col in WAIT_CLASSES]
    charts = []
    if any(_has_values(v) for _, v in series):
        charts.append(_chart("waits.aas", "Average active sessions by wait class", "sessions", w,
                             series, stack=True))
    prof = _rows(conn, """
        SELECT p.backend_type, p.wait_event_type, p.wait_event, p.samples, p.avg_processes,
               p.coverage, p.ticks_due, p.ticks_taken,
               chronicle._wait_activity(p.backend_type, 'active', p.wait_event_type, p.wait_event) AS activity
          FROM chronicle.wait_profile(%s, %s) p""", (w.from_ts, w.to_ts))
    db = [r for r in prof if r["activity"] == "database"]
    total = sum(float(r["samples"]) for r in db)
    table = None
    if db:
        cov = prof[0]["coverage"]
        bg = sum(float(r["avg_processes"] or 0) for r in prof if r["activity"] == "background")
        table = {"id": "waits.top", "title": "Top wait events (share of DB time)",
                 "columns": ["backend type", "wait event type", "wait event", "share of DB time",
                             "avg active sessions", "samples"],
                 "rows": [[r["backend_type"], r["wait_event_type"], r["wait_event"],
                           f"{float(r['samples']) / total:.1%}", f"{r['avg_processes']:.2f}",
                           int(r["samples"])] for r in db[:15]],
                 "marked": [],
                 "note": (f"Sampler coverage {cov:.1%} ({int(prof[0]['ticks_taken'])} of "
                          f"{int(prof[0]['ticks_due'])} ticks taken); background processes at work: "
                          f"{bg:.2f} on average (not DB time)." if cov is not None else None)}
    return _panel("waits", "Wait events",
                  "Average active sessions (database time: client backends and the workers acting "
                  "for them) stacked by wait class, one point per interval (the sampler's per-class "
                  "counts, chronicle.wait_sampler_deltas); the wait events with the largest share of DB time "
                  "over the window (chronicle.wait_profile) and how many sampler ticks were taken.",
                  charts, [table])


def io(conn, w: Window, tl: dict[str, list], ckpt: list[dict]) -> dict:
    """pg_stat_io per (backend type, object, context): read/write/extend bytes/s,
    fsyncs/s (chronicle.io_deltas), and the hit ratio (server_series)."""
    rows = _rows(conn, """
        SELECT interval_end, backend_type, object, context, reset, read_bytes_per_s,
               write_bytes_per_s, extend_bytes_per_s, fsyncs_per_s
          FROM chronicle.io_deltas(%s, %s, changed_only => true)""", (w.from_ts, w.to_ts))
    idx = {e: i for i, e in enumerate(w.ends)}
    n = len(w.ends)
    metrics = {"read_bytes_per_s": {}, "write_bytes_per_s": {}, "extend_bytes_per_s": {},
               "fsyncs_per_s": {}}
    for r in rows:
        i = idx.get(r["interval_end"])
        if i is None:
            continue
        key = f"{r['backend_type']} {r['object']}/{r['context']}" if r["object"] != "relation" \
            else f"{r['backend_type']} {r['context']}"
        for m, d in metrics.items():
            v = r[m]
            if v is None or r["reset"]:
                continue
            d.setdefault(key, [0.0] * n)[i] = float(v)
    has_io = bool(rows)
    charts = []
    for m, title, unit in (("read_bytes_per_s", "Reads by backend type and context", "bytes/s"),
                           ("write_bytes_per_s", "Writes by backend type and context", "bytes/s"),
                           ("extend_bytes_per_s", "Extends by backend type and context", "bytes/s"),
                           ("fsyncs_per_s", "fsyncs by backend type and context", "1/s")):
        keys = sorted(k for k, v in metrics[m].items() if _nonzero(v))
        if keys:
            charts.append(_chart(f"io.{m}", title, unit, w, [(k, metrics[m][k]) for k in keys],
                                 marks=ckpt if m == "write_bytes_per_s" else None))
    hit = [None if v is None else v * 100.0 for v in tl["hit_ratio"]]
    if _has_values(hit):
        charts.append(_chart("io.hit_ratio", "Buffer hit ratio (pg_stat_database)", "%", w,
                             [("hit ratio", hit)]))
    return _panel("io", "I/O by backend type and context",
                  "pg_stat_io per interval (chronicle.io_deltas, changed rows): bytes read, written "
                  "and extended per second and fsyncs per second, one series per backend type and "
                  "context that did any; the hit ratio of pg_stat_database (chronicle.database_deltas).",
                  charts, empty=None if has_io or charts else "pg_stat_io was not recorded in this window.")


def wal(conn, w: Window, ckpt: list[dict]) -> dict:
    """WAL bytes, records, FPI and wal_buffers_full per second (wal_deltas)."""
    rows = _rows(conn, "SELECT * FROM chronicle.wal_deltas(%s, %s)", (w.from_ts, w.to_ts))
    charts = []
    if rows:
        charts = [
            _chart("wal.bytes", "WAL bytes", "bytes/s", w,
                   [("WAL bytes/s", _series(w, rows, "wal_bytes_per_s"))], marks=ckpt),
            _chart("wal.records", "WAL records and full-page images", "1/s", w,
                   [("records/s", _series(w, rows, "wal_records_per_s")),
                    ("full-page images/s", _series(w, rows, "wal_fpi_per_s"))], marks=ckpt),
            _chart("wal.buffers_full", "wal_buffers_full", "1/s", w,
                   [("wal_buffers_full/s", _series(w, rows, "wal_buffers_full_per_s"))], marks=ckpt),
        ]
    return _panel("wal", "WAL",
                  "pg_stat_wal per interval (chronicle.wal_deltas): WAL bytes, records and full-page "
                  "images per second, and how often a backend found the WAL buffers full; vertical "
                  "lines mark checkpoint starts and ends (chronicle.checkpointer_deltas).", charts)


def buffers(conn, w: Window) -> dict:
    """The buffer cache summary at the end of each interval (buffers_values)."""
    rows = _rows(conn, "SELECT * FROM chronicle.buffers_values(%s, %s)", (w.from_ts, w.to_ts))
    charts = []
    if rows:
        charts = [
            _chart("buffers.state", "Buffer cache", "buffers", w,
                   [("used", _series(w, rows, "buffers_used")),
                    ("dirty", _series(w, rows, "buffers_dirty")),
                    ("pinned", _series(w, rows, "buffers_pinned"))]),
            _chart("buffers.usage", "Usage count histogram", "buffers", w,
                   [(f"usage {k}", _series(w, rows, f"usage_{k}")) for k in range(6)], stack=True),
        ]
    return _panel("buffers", "Buffer cache",
                  "pg_buffercache summary at the end of each interval (chronicle.buffers_values): "
                  "buffers used, dirty and pinned, and how many buffers have each usage count "
                  "(stacked: 0 at the bottom, the first evicted).", charts)


def os_panel(conn, w: Window) -> dict:
    """/proc/meminfo Dirty/Writeback, pressure (PSI) and disk stats."""
    charts = []
    mem = _rows(conn, "SELECT interval_end, dirty, writeback FROM chronicle.os_memory_deltas(%s, %s)",
                (w.from_ts, w.to_ts))
    if mem:
        charts.append(_chart("os.dirty", "Dirty and Writeback (meminfo)", "bytes", w,
                             [("Dirty", _series(w, mem, "dirty", 1024.0)),
                              ("Writeback", _series(w, mem, "writeback", 1024.0))]))
    pr = _rows(conn, """SELECT interval_end, resource, reset, some_total_per_s, full_total_per_s
                          FROM chronicle.os_pressure_deltas(%s, %s)""", (w.from_ts, w.to_ts))
    if pr:
        series = []
        for res in sorted({r["resource"] for r in pr}):
            rr = [r for r in pr if r["resource"] == res]
            # microseconds stalled per second -> % of the time
            series.append((f"{res} some", _series(w, rr, "some_total_per_s", 1e-4)))
            full = _series(w, rr, "full_total_per_s", 1e-4)
            if _has_values(full):
                series.append((f"{res} full", full))
        charts.append(_chart("os.pressure", "Pressure stall (PSI)", "% of time", w, series))
    dk = _rows(conn, """SELECT interval_end, device, role, reset, sectors_read_per_s,
                               sectors_written_per_s, io_time_ms_per_s
                          FROM chronicle.os_disk_deltas(%s, %s)""", (w.from_ts, w.to_ts))
    if dk:
        devs = sorted({(r["device"], r["role"]) for r in dk})
        thr, util = [], []
        for dev, role in devs:
            rr = [r for r in dk if r["device"] == dev and r["role"] == role]
            name = f"{dev} ({role})" if role else dev
            thr.append((f"{name} read", _series(w, rr, "sectors_read_per_s", 512.0)))
            thr.append((f"{name} write", _series(w, rr, "sectors_written_per_s", 512.0)))
            util.append((name, _series(w, rr, "io_time_ms_per_s", 0.1)))
        charts.append(_chart("os.disk_bytes", "Disk throughput", "bytes/s", w, thr))
        charts.append(_chart("os.disk_util", "Disk utilisation (io_time)", "%", w, util))
    return _panel("os", "Operating system",
                  "Dirty and Writeback from /proc/meminfo (chronicle.os_memory_deltas), pressure "
                  "stall information some/full for cpu, io and memory as % of the interval "
                  "(chronicle.os_pressure_deltas), disk bytes/s and utilisation (time with I/O in "
                  "flight) of the devices of the data directory and pg_wal (chronicle.os_disk_deltas).",
                  charts)


def statements(conn, w: Window, n: int = 15) -> dict:
    """Top statements of the window by total execution time (statements_top)."""
    rows = _rows(conn, "SELECT * FROM chronicle.statements_top(%s, %s, %s)", (w.from_ts, w.to_ts, n))
    table = None
    if rows:
        table = {"id": "statements.top", "title": "Top statements by total execution time",
                 "columns": ["query", "total ms", "calls", "mean ms", "rows", "shared read",
                             "shared dirtied", "shared written"],
                 "rows": [[_short(r["query"]), round(r["total_exec_time"] or 0, 1), r["calls"],
                           round(r["mean_exec_time"] or 0, 3), r["rows"], r["shared_blks_read"],
                           r["shared_blks_dirtied"], r["shared_blks_written"]] for r in rows],
                 "marked": [], "note": "Blocks are 8 kB buffers (block_size)."}
    return _panel("statements", "Top statements",
                  "pg_stat_statements over the window (chronicle.statements_top): the statements "
                  "with the most execution time, their calls, mean time, rows and shared blocks "
                  "read, dirtied and written.", tables=[table],
                  empty=None if table else "pg_stat_statements recorded nothing in this window "
                                           "(not installed, or no statement ran).")


def _short(q, n=160):
    if q is None:
        return "(query text not recorded)"
    q = " ".join(q.split())
    return q if len(q) <= n else q[: n - 1] + "…"


# 40 log-spaced bins per decade of microseconds, one grid for every run (so
# two runs' histograms share their bins)
BINS_PER_DECADE = 40


def latency_distribution(conn, w: Window) -> dict:
    """Histogram and CDF of the pgbench transaction latencies of the window,
    log-spaced bins (chronicle.app_transaction)."""
    rows = latency_bins(conn, w)
    if not rows:
        return _panel("latency", "Latency distribution",
                      "Histogram and CDF of the pgbench transaction latencies.",
                      empty="No pgbench per-transaction log in this run: no latency distribution.")
    return _panel("latency", "Latency distribution", LATENCY_ABOUT,
                  distribution_charts([(w.run, rows)]))


LATENCY_ABOUT = ("Every pgbench transaction of the window (chronicle.app_transaction), in "
                 f"{BINS_PER_DECADE} log-spaced bins per decade: how many transactions took that "
                 "long (histogram) and which share took at most that long (CDF), log latency axis.")


def distribution_charts(runs: list[tuple[str, list[dict]]]) -> list[dict]:
    """Histogram and CDF charts for one or more runs' binned latencies."""
    lo = min(r["b"] for _, rows in runs for r in rows)
    hi = max(r["b"] for _, rows in runs for r in rows)
    bins = list(range(lo, hi + 1))
    x = [10 ** ((b + 1) / BINS_PER_DECADE) / 1000.0 for b in bins]   # upper edge, ms
    hist, cdf = [], []
    for run, rows in runs:
        counts = {r["b"]: int(r["n"]) for r in rows}
        total = sum(counts.values())
        h = [counts.get(b, 0) for b in bins]
        acc, c = 0, []
        for v in h:
            acc += v
            c.append(acc / total)
        hist.append({"label": run, "values": h, "run": run})
        cdf.append({"label": run, "values": c, "run": run})
    return [
        {"id": "latency.histogram", "title": "Latency histogram", "unit": "transactions",
         "kind": "distribution", "x": x, "series": hist, "stack": False, "log_y": False,
         "log_x": True, "marks": [], "x_unit": "ms"},
        {"id": "latency.cdf", "title": "Latency CDF", "unit": "fraction", "kind": "distribution",
         "x": x, "series": cdf, "stack": False, "log_y": False, "log_x": True, "marks": [],
         "x_unit": "ms"},
    ]


def latency_bins(conn, w: Window) -> list[dict]:
    """Transactions of the window per log-spaced latency bin (b: bin number,
    n: count); float8 log, numeric's is 20 times slower."""
    return _rows(conn, """
        SELECT floor(log(greatest(t.latency_us, 1)::float8) * %s)::int AS b, count(*) AS n
          FROM chronicle.app_transaction t
         WHERE t.run_id = %s AND t.ts > %s AND t.ts <= %s AND t.latency_us IS NOT NULL
         GROUP BY 1 ORDER BY 1""", (BINS_PER_DECADE, w.run_id, w.from_ts, w.to_ts))


def slowest(conn, w: Window, n: int = 10) -> dict:
    """The slowest intervals and what differed in them (chronicle.slowest_intervals,
    ranked in SQL): by p99 when the run has a pgbench log, else by the lowest tps."""
    about = ("The intervals with the worst p99 latency (lowest throughput when the run has no "
             "pgbench log), each with the recorded metrics that differ most from the run's "
             "median (chronicle.slowest_intervals). Shaded on the time charts; click a row to "
             "put the cursor there.")
    if not _has_function(conn, "chronicle.slowest_intervals"):
        return _panel("slowest", "Slowest intervals explained", about,
                      empty="chronicle.slowest_intervals() is not installed in this database "
                            "(extension older than 0.2.0).")
    by = "p99"
    try:
        rows = _rows(conn, """SELECT * FROM chronicle.slowest_intervals(%s, %s, %s)
                               WHERE interval_end > %s AND interval_end <= %s""",
                     (w.run, n, by, w.from_ts, w.to_ts))
    except psycopg.errors.ObjectNotInPrerequisiteState:
        # no per-transaction pgbench log: the lowest tps (commits/s without any log)
        by = "tps"
        rows = _rows(conn, """SELECT * FROM chronicle.slowest_intervals(%s, %s, %s)
                               WHERE interval_end > %s AND interval_end <= %s""",
                     (w.run, n, by, w.from_ts, w.to_ts))
    if not rows:
        return _panel("slowest", "Slowest intervals explained", about,
                      empty="No interval of the window could be ranked.")
    table = {"id": "slowest.table", "title": f"Slowest intervals (by {by})",
             "columns": ["rank", "interval end", "tps" if by == "p99" or rows[0]["latency_p99_ms"] is not None
                         else "commits/s", "p50 ms", "p99 ms", "max ms", "what differed"],
             "rows": [[r["rank"], r["interval_end"].isoformat(sep=" ", timespec="seconds"),
                       _r(r["tps"]), _r(r["latency_p50_ms"]), _r(r["latency_p99_ms"]),
                       _r(r["latency_max_ms"]), r["explanation"]] for r in rows],
             "marked": [], "note": None,
             "x": [r["interval_end"].timestamp() for r in rows],
             "x_start": [r["interval_start"].timestamp() for r in rows]}
    return _panel("slowest", "Slowest intervals explained", about, tables=[table])


def _r(v, nd=2):
    return None if v is None else round(float(v), nd)


def settings_env(conn, w: Window) -> dict:
    """The run's non-default settings (chronicle.run.settings), its environment
    (chronicle.run.environment) and metadata."""
    tables = [{"id": "settings.run", "title": "Run",
               "columns": ["", ""],
               "rows": [["label", w.run], ["started", str(w.started)], ["ended", str(w.ended)],
                        ["server version", w.server_version]]
               + [[f"meta: {k}", _fmt(v)] for k, v in sorted(w.meta.items())],
               "marked": [], "note": None}]
    key = [[k, _fmt(w.settings[k])] for k in KEY_SETTINGS if k in w.settings]
    if key:
        tables.append({"id": "settings.key", "title": "Key settings for performance",
                       "columns": ["name", "value"], "rows": key, "marked": [], "note": None})
    if w.settings:
        tables.append({"id": "settings.settings", "title": "Settings",
                       "columns": ["name", "value"],
                       "rows": [[k, _fmt(v)] for k, v in sorted(w.settings.items())],
                       "marked": [], "note": None, "fold": True})
    env = flatten(w.environment)
    if env:
        tables.append({"id": "settings.environment", "title": "Environment",
                       "columns": ["name", "value"], "rows": [[k, v] for k, v in env],
                       "marked": [], "note": None, "fold": True})
    return _panel("settings", "Settings and environment",
                  "What the server looked like when the run began (chronicle.run_begin): its "
                  "non-default settings, server version, build, machine and storage.", tables=tables)


# the settings a performance engineer looks at first (all are in the folded
# table too)
KEY_SETTINGS = ["server_version", "debug_assertions", "data_checksums", "block_size",
                "wal_segment_size", "shared_buffers", "huge_pages_status", "io_method",
                "effective_io_concurrency", "max_connections", "work_mem", "max_wal_size",
                "checkpoint_timeout", "checkpoint_completion_target", "wal_buffers",
                "wal_compression", "full_page_writes", "synchronous_commit", "fsync",
                "wal_sync_method", "bgwriter_delay", "bgwriter_lru_maxpages", "jit",
                "track_io_timing", "autovacuum"]


def _fmt(v):
    return v if isinstance(v, str) else json.dumps(v)


def flatten(obj, prefix="") -> list[tuple[str, str]]:
    """A nested jsonb as (dotted name, value) pairs."""
    out = []
    if isinstance(obj, dict):
        for k in sorted(obj):
            out += flatten(obj[k], f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(obj, list) and any(isinstance(v, (dict, list)) for v in obj):
        for i, v in enumerate(obj):
            out += flatten(v, f"{prefix}[{i}]")
    else:
        out.append((prefix, _fmt(obj)))
    return out


# ---------------------------------------------------------------------------
# Comparison tables

def compare_tables(conn, a: Window, b: Window) -> dict:
    """Load profile (compare_load_profile), differing settings (compare_settings)
    and environment (compare_environment) of two runs."""
    tables = []
    if _has_function(conn, "chronicle.compare_load_profile"):
        rows = _rows(conn, "SELECT * FROM chronicle.compare_load_profile(%s, %s)", (a.run, b.run))
        tables.append({
            "id": "compare.load_profile", "title": f"Load profile: B = {b.run} vs A = {a.run}",
            "columns": ["metric", "unit", "A per second", "B per second", "A per transaction",
                        "B per transaction", "ratio B/A"],
            "rows": [[r["metric"], r["unit"], _g(r["a_per_second"]), _g(r["b_per_second"]),
                      _g(r["a_per_transaction"]), _g(r["b_per_transaction"]), _g(r["ratio"])]
                     for r in rows],
            "marked": [i for i, r in enumerate(rows) if r["marked"]],
            "note": "Marked: B differs from A by more than 10 %."})
    else:
        rows = _rows(conn, "SELECT * FROM chronicle.compare_runs(%s, %s)", (a.run, b.run))
        tables.append({
            "id": "compare.load_profile", "title": f"Headline numbers: B = {b.run} vs A = {a.run}",
            "columns": ["metric", "unit", "A", "B", "ratio B/A"],
            "rows": [[r["metric"], r["unit"], _g(r["value_a"]), _g(r["value_b"]), _g(r["ratio"])]
                     for r in rows],
            "marked": [i for i, r in enumerate(rows)
                       if r["ratio"] is not None and abs(r["ratio"] - 1) > 0.1],
            "note": "Marked: B differs from A by more than 10 %."})
    rows = _rows(conn, "SELECT * FROM chronicle.compare_settings(%s, %s)", (a.run, b.run))
    tables.append({"id": "compare.settings", "title": "Settings that differ",
                   "columns": ["name", "A", "B"],
                   "rows": [[r["name"], r["value_a"], r["value_b"]] for r in rows],
                   "marked": [], "note": None if rows else "No setting differs."})
    if _has_function(conn, "chronicle.compare_environment"):
        rows = _rows(conn, "SELECT * FROM chronicle.compare_environment(%s, %s)", (a.run, b.run))
        tables.append({"id": "compare.environment", "title": "Environment that differs",
                       "columns": ["name", "A", "B"],
                       "rows": [[r["name"], _fmt(r["value_a"]), _fmt(r["value_b"])] for r in rows],
                       "marked": [], "note": None if rows else "No difference in the environment."})
    return _panel("compare", "A/B comparison",
                  "Per second and per transaction numbers of both runs with the ratio B/A "
                  "(chronicle.compare_load_profile), the settings (chronicle.compare_settings) and "
                  "environment (chronicle.compare_environment) that differ.", tables=tables)


def _g(v):
    if v is None:
        return None
    v = float(v)
    if v == 0 or not math.isfinite(v):
        return v
    return float(f"{v:.4g}")
