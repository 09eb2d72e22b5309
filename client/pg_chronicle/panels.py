"""The report's data: the panels of one window, read from the extension's SQL
API (never its tables, except pgbench's transactions for the latency
distribution).  A panel is one function of a connection and the window, or,
for those that share series with others (throughput, waits, io, wal), a
query function (*_rows) and a function of its rows (*_panel) that needs no
server.

Every time chart has one point per snapshot interval of the window (x is the
interval's end, epoch seconds); a value the source did not record is None.
Nothing is averaged: the page and the pictures draw every point (min/max
envelopes where there are more points than pixels).

A panel is a model.Panel (a TypedDict, JSON-ready): its charts
(model.Chart) and tables (model.Table).  The per-interval numbers several
panels share (commits/s, hit ratio, active sessions per wait class) are
read from chronicle.timeline(), not recomputed here.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, TypeVar

import psycopg
from psycopg.rows import dict_row

from pg_chronicle import db
from pg_chronicle.model import Cell, Chart, Mark, Panel, Series, Table, Value

Conn = psycopg.Connection[Any]
Row = dict[str, Any]
# the per-interval series of chronicle.timeline() the panels share, by column
Timeline = dict[str, list[Value]]


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
    meta: dict[str, Any]
    settings: dict[str, Any]
    environment: dict[str, Any]
    ends: list[datetime] = field(default_factory=list)
    starts: list[datetime] = field(default_factory=list)
    # transactions slower than this are counted per interval (report
    # --latency-threshold, else pgbench's --latency-limit of the run)
    latency_threshold_ms: float | None = None
    # where the summaries start: after the run's warm-up
    # (chronicle.run_set_warmup), which the time charts show shaded from
    # from_ts; from_ts when there is none
    steady_from: datetime | None = None
    # the server the run was recorded on (chronicle.run.origin): 0, this
    # one, or an imported one; every query of the window reads its history
    # (use())
    origin: int = 0
    # its name and system identifier (chronicle.server(), or the origin's)
    server_name: str | None = None
    system_identifier: int | None = None

    @property
    def summary_from(self) -> datetime:
        """The start of every summary of the window (after the warm-up)."""
        return self.steady_from if self.steady_from is not None else self.from_ts

    @property
    def x(self) -> list[float]:
        return [e.timestamp() for e in self.ends]


def _rows(conn: Conn, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[Row]:
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(sql, params)
        return cur.fetchall()


def _series(w: Window, rows: Iterable[Row], col: str, scale: float = 1.0) -> list[Value]:
    """One value per interval of the window from rows keyed by interval_end
    (None where no row or a NULL)."""
    idx = {e: i for i, e in enumerate(w.ends)}
    out: list[Value] = [None] * len(w.ends)
    for r in rows:
        i = idx.get(r["interval_end"])
        if i is not None:
            v = r.get(col)
            out[i] = None if v is None else float(v) * scale
    return out


def _chart(cid: str, title: str, unit: str, w: Window, series: Iterable[tuple[str, list[Value]]], *,
           stack: bool = False, log_y: bool = False, marks: list[Mark] | None = None) -> Chart:
    """A time chart: one point per interval of the window in every series."""
    return {"id": cid, "title": title, "unit": unit, "kind": "time", "x": w.x,
            "series": [{"label": lab, "values": vals, "run": w.run} for lab, vals in series],
            "stack": stack, "log_y": log_y, "log_x": False, "marks": marks or []}


def _has_values(values: Iterable[Value]) -> bool:
    return any(v is not None for v in values)


def _nonzero(values: Iterable[Value]) -> bool:
    return any(v for v in values if v is not None)


def _panel(pid: str, title: str, about: str, charts: Iterable[Chart | None] = (),
           tables: Iterable[Table | None] = (), empty: str | None = None) -> Panel:
    """A panel of the charts and tables that are not None; empty (why there
    is nothing to show) is said when there is nothing."""
    cs = [c for c in charts if c is not None]
    ts = [t for t in tables if t is not None]
    if empty is None and not cs and not ts:
        empty = "No data recorded for this panel in the window."
    return {"id": pid, "title": title, "about": about, "charts": cs, "tables": ts, "empty": empty}


# ---------------------------------------------------------------------------
# The window

def window(conn: Conn, run: str, from_ts: datetime | None = None,
           to_ts: datetime | None = None) -> Window:
    """The run's row and its intervals; from_ts/to_ts narrow (or move) the window.

    Raises psycopg errors for an unknown run (chronicle.run_window says which
    runs exist); the caller turns them into a ClientError."""
    r = _rows(conn, """
        SELECT r.run_id, r.label, r.started, r.ended, r.server_version, r.meta, r.settings,
               w.run_from, w.run_to,
               to_jsonb(r) -> 'environment' AS environment,
               coalesce(to_jsonb(r) ->> 'warmup', '0')::interval AS warmup,
               coalesce((to_jsonb(r) ->> 'origin')::int, 0) AS origin
          FROM chronicle.run_window(%s) w, chronicle.run r
         WHERE """ + db.run_named(conn, "%s"), (run, run))[0]
    f = from_ts if from_ts is not None else r["run_from"]
    t = to_ts if to_ts is not None else r["run_to"]
    env = r["environment"] or {}
    if isinstance(env, str):
        env = json.loads(env)
    # a warm-up (before 0.3.0 none): the charts start where the run did and
    # shade it, the summaries start after it (where run_window() does)
    steady: datetime | None = None
    if r["warmup"] and f <= r["run_from"]:
        steady, f = r["run_from"], r["run_from"] - r["warmup"]
    w = Window(run=run, run_id=r["run_id"], from_ts=f, to_ts=t, started=r["started"],
               ended=r["ended"], server_version=r["server_version"], meta=r["meta"] or {},
               settings=r["settings"] or {}, environment=env, steady_from=steady, origin=r["origin"])
    ident = (_rows(conn, "SELECT o.server_name AS name, o.system_identifier FROM chronicle.origin o"
                         " WHERE o.origin_id = %s", (w.origin,)) if w.origin != 0 else
             _rows(conn, "SELECT s.name, s.system_identifier FROM chronicle.server() s")
             if db.has_function(conn, "chronicle.server") else [])
    if ident:
        w.server_name, w.system_identifier = ident[0]["name"], ident[0]["system_identifier"]
    use(conn, w)
    for iv in _rows(conn, "SELECT interval_start, interval_end FROM chronicle.intervals(%s, %s)",
                    (w.from_ts, w.to_ts)):
        w.starts.append(iv["interval_start"])
        w.ends.append(iv["interval_end"])
    return w


def use(conn: Conn, w: Window) -> None:
    """Makes conn read the history of w's server (db.read_origin): before
    any query of the window on a session, since another window's (report
    --vs of runs from two servers) may have been read on it before."""
    db.read_origin(conn, w.origin)


def headline(conn: Conn, w: Window) -> list[Row]:
    """chronicle.summary() of the window, with the run's pgbench numbers."""
    return _rows(conn, "SELECT metric, value, unit FROM chronicle.summary(%s, %s, %s)",
                 (w.summary_from, w.to_ts, w.run_id))


# The columns of chronicle.timeline() the panels share: commits/s and the
# hit ratio summed over the databases, average active sessions per wait
# class (database time; NULL in an interval with a reset, and for sampler
# history recorded before 0.2.0).
TIMELINE_COLUMNS = ("commits_per_s", "hit_ratio", "active_cpu", "active_io", "active_lwlock",
                    "active_lock", "active_ipc", "active_client", "active_timeout", "active_other",
                    "cpu_user", "cpu_system", "cpu_iowait", "cpu_steal", "procs_running")


def timeline_rows(conn: Conn, w: Window) -> list[Row]:
    """TIMELINE_COLUMNS of chronicle.timeline() over the window, with
    resolution 'raw': every snapshot interval, never a rollup."""
    return _rows(conn, f"""
        SELECT interval_end, {", ".join(TIMELINE_COLUMNS)}
          FROM chronicle.timeline(%s, %s, waits => true, detail => false, resolution => 'raw',
                                  app => false)""",
                 (w.from_ts, w.to_ts))


def timeline_series(w: Window, rows: list[Row]) -> Timeline:
    """timeline_rows() as one series per column, one value per interval."""
    return {col: _series(w, rows, col) for col in TIMELINE_COLUMNS}


def marks_rows(conn: Conn, w: Window) -> list[Row]:
    """chronicle.marks() of the window: the events drawn on every time chart."""
    return _rows(conn, "SELECT ts, kind, event FROM chronicle.marks(%s, %s)", (w.from_ts, w.to_ts))


def marks_of(rows: Iterable[Row]) -> list[Mark]:
    """The marks of chronicle.marks() rows, their text as the label."""
    return [{"x": r["ts"].timestamp(), "label": r["event"], "kind": r["kind"]} for r in rows]


MARK_KINDS = {"mark": "mark", "checkpoint_start": "checkpoint start", "checkpoint_end": "checkpoint end",
              "recording_start": "recording starts", "long_interval": "long interval", "stall": "stall",
              "vacuum_start": "vacuum start", "vacuum_end": "vacuum end",
              "analyze_start": "analyze start", "analyze_end": "analyze end"}


def with_marks(ps: Iterable[Panel], marks: list[Mark]) -> None:
    """Every time chart of the panels gets the window's marks (one list:
    the events explain every curve, not one)."""
    for p in ps:
        for c in p["charts"]:
            if c["kind"] == "time":
                c["marks"] = list(marks)


def marks_table(w: Window, marks: list[Mark]) -> Table | None:
    """The window's events as a table: when, seconds into the window, what."""
    if not marks:
        return None
    t0 = w.from_ts.timestamp()
    return {"id": "throughput.marks", "title": "Events (chronicle.marks)",
            "columns": ["time (UTC)", "s into the window", "kind", "event"],
            "rows": [[datetime.fromtimestamp(m["x"], UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3],
                      round(m["x"] - t0, 3), MARK_KINDS.get(m["kind"], m["kind"]), m["label"]]
                     for m in marks],
            "marked": [i for i, m in enumerate(marks) if m["kind"] == "mark"], "note": None}


# ---------------------------------------------------------------------------
# Panels.  Those that use the shared series are a query function (*_rows) and
# a function of its rows that builds the panel (*_panel), so that the report
# runs the queries side by side and builds them when the series are there.

def app_rows(conn: Conn, w: Window) -> list[Row]:
    """The run's pgbench numbers per interval (chronicle.app_intervals)."""
    return _rows(conn, """SELECT interval_end, transactions, tps, latency_p50_ms, latency_p99_ms,
                                 latency_max_ms, basis, skipped
                            FROM chronicle.app_intervals(%s, %s, %s)""",
                 (w.from_ts, w.to_ts, w.run))


def throughput_panel(w: Window, app: list[Row], tl: Timeline, over: list[Row] | None = None) -> Panel:
    """tps and latency p50/p99/max per interval from the pgbench log
    (app_rows), commits/s from pg_stat_database (timeline).
    tps has no point in an interval pgbench ran only part of (the run's first
    and last: partial), where app_intervals() gives none since 0.3.0: a rate
    over the part would be a spike, over the whole interval a dip, neither
    real."""
    has_app = any(r["transactions"] for r in app)
    commits = tl["commits_per_s"]
    series: list[tuple[str, list[Value]]] = []
    if has_app:
        series.append(("tps (pgbench)", _series(w, app, "tps")))
    series.append(("commits/s (pg_stat_database)", commits))
    charts = [_chart("throughput.tps", "Throughput", "1/s", w, series)]
    note: str | None = None
    if has_app:
        charts.append(_chart("throughput.latency", "Latency per interval", "ms", w, [
            ("p50", _series(w, app, "latency_p50_ms")),
            ("p99", _series(w, app, "latency_p99_ms")),
            ("max", _series(w, app, "latency_max_ms")),
        ], log_y=True))
        oc = over_chart(w, over or [])
        if oc is not None:
            charts.append(oc)
    else:
        note = "No pgbench log in this run: throughput is commits/s of pg_stat_database, no latency."
    flag = unsteady(w, app, tl)
    if flag is not None:
        note = f"{note} {flag[0].upper()}{flag[1:]}." if note else f"{flag[0].upper()}{flag[1:]}."
    p = _panel("throughput", "Throughput and latency",
               "tps and latency percentiles of the transactions that ended in each snapshot "
               "interval (pgbench log, chronicle.app_intervals; no tps in the intervals pgbench "
               "ran only part of, the run's first and last); commits/s from pg_stat_database "
               "(chronicle.timeline): backends report their commits to pg_stat_database at most "
               "once a second, so commits/s lags tps by up to a second at the run's start and end "
               "and wobbles around it in between. Transactions over the latency threshold (report "
               "--latency-threshold, else the run's pgbench --latency-limit) and those pgbench "
               "skipped, per interval, when there is a threshold or a skip. Vertical lines on "
               "every time chart: the window's events "
               "(chronicle.marks, listed below): marks made with chronicle.mark or pg-chronicle "
               "mark (purple, their text on hover), checkpoint starts (dashed) and ends, "
               "recordings that start after a restart or a gap (dotted red), intervals more than "
               "twice the window's median (the collector was late: dash-dot orange; the chart "
               "knows nothing finer there), stalls: intervals in which no pgbench transaction "
               "ended while the run was active (thick red).", charts)
    p["note"] = note
    return p


# A run is not steady when its throughput's trend over the second half of
# the window (after the warm-up) moves it by more than STEADY_CHANGE of its
# mean, and the trend is clear of the noise (|t| of the slope > STEADY_T).
STEADY_CHANGE = 0.05
STEADY_T = 3.0


def trend(w: Window, values: list[Value]) -> tuple[float, float] | None:
    """The least-squares trend of one value per interval over the second
    half of the window's intervals after summary_from: (its change from
    the half's first interval to its last, relative to the half's mean;
    the slope's t statistic).  None with fewer than 8 points or a mean of 0."""
    start = w.summary_from
    pts = [(e.timestamp(), v) for e, v in zip(w.ends, values, strict=True)
           if v is not None and e > start]
    pts = pts[len(pts) // 2:]
    n = len(pts)
    if n < 8:
        return None
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if my == 0 or sxx == 0:
        return None
    slope = sum((x - mx) * (y - my) for x, y in pts) / sxx
    resid = sum((y - my - slope * (x - mx)) ** 2 for x, y in pts)
    se = math.sqrt(resid / (n - 2) / sxx)
    t = math.inf if se == 0 else slope / se
    return slope * (pts[-1][0] - pts[0][0]) / my, t


def unsteady(w: Window, app: list[Row], tl: Timeline) -> str | None:
    """What the report says of a run whose throughput never settles (tps
    of the pgbench log, else commits/s), or None."""
    has_app = any(r["transactions"] for r in app)
    what = "tps" if has_app else "commits/s"
    tr = trend(w, _series(w, app, "tps") if has_app else tl["commits_per_s"])
    if tr is None or abs(tr[0]) <= STEADY_CHANGE or abs(tr[1]) <= STEADY_T:
        return None
    return (f"{what} is not steady: its trend moved it by {tr[0]:+.1%} over the second half of the "
            f"window{' after the warm-up' if w.steady_from is not None else ''} (t = {tr[1]:.1f}); "
            "a longer run, or a warm-up, measures the steady state")


def over_chart(w: Window, over: list[Row]) -> Chart | None:
    """Transactions per interval slower than the window's threshold, and
    those pgbench skipped; None when there is no threshold and nothing was
    skipped."""
    series: list[tuple[str, list[Value]]] = []
    if w.latency_threshold_ms is not None:
        series.append((f"over {w.latency_threshold_ms:g} ms", _series(w, over, "over")))
    skipped = _series(w, over, "skipped")
    if _nonzero(skipped):
        series.append(("skipped (pgbench --latency-limit)", skipped))
    if not series:
        return None
    return _chart("throughput.over", "Transactions over the latency threshold", "transactions", w,
                  series)


WAIT_CLASSES = [("CPU", "active_cpu"), ("IO", "active_io"), ("LWLock", "active_lwlock"),
                ("Lock", "active_lock"), ("IPC", "active_ipc"), ("Client", "active_client"),
                ("Timeout", "active_timeout"), ("Other", "active_other")]


def wait_profile_rows(conn: Conn, w: Window) -> list[Row]:
    """chronicle.wait_profile() of the window, each wait event classified
    (activity: 'database' for database time, 'background', ...)."""
    return _rows(conn, """
        SELECT p.backend_type, p.wait_event_type, p.wait_event, p.samples, p.avg_processes,
               p.coverage, p.ticks_due, p.ticks_taken,
               chronicle._wait_activity(p.backend_type, 'active', p.wait_event_type, p.wait_event) AS activity
          FROM chronicle.wait_profile(%s, %s) p""", (w.summary_from, w.to_ts))


def waits_panel(w: Window, tl: Timeline, prof: list[Row]) -> Panel:
    """Average active sessions by wait class (timeline) and the top wait
    events as a share of DB time (wait_profile_rows, in its order)."""
    series = [(name, tl[col]) for name, col in WAIT_CLASSES]
    charts: list[Chart] = []
    if any(_has_values(v) for _, v in series):
        charts.append(_chart("waits.aas", "Average active sessions by wait class", "sessions", w,
                             series, stack=True))
    db = [r for r in prof if r["activity"] == "database"]
    total = sum(float(r["samples"]) for r in db)
    table: Table | None = None
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
                  "counts, chronicle.timeline); the wait events with the largest share of DB time "
                  "over the window (chronicle.wait_profile) and how many sampler ticks were taken.",
                  charts, [table])


def io_rows(conn: Conn, w: Window) -> list[Row]:
    """pg_stat_io's changed rows per interval (chronicle.io_deltas)."""
    return _rows(conn, """
        SELECT interval_end, backend_type, object, context, reset, read_bytes_per_s,
               write_bytes_per_s, extend_bytes_per_s, fsyncs_per_s
          FROM chronicle.io_deltas(%s, %s, changed_only => true)""", (w.from_ts, w.to_ts))


IO_CHARTS = (("read_bytes_per_s", "Reads by backend type and context", "bytes/s"),
             ("write_bytes_per_s", "Writes by backend type and context", "bytes/s"),
             ("extend_bytes_per_s", "Extends by backend type and context", "bytes/s"),
             ("fsyncs_per_s", "fsyncs by backend type and context", "1/s"))


V = TypeVar("V")


def _filled(d: dict[str, list[V]], key: str, n: int, fill: V) -> list[V]:
    """d[key], made a list of n fills when d has none: a series filled row
    by row.  Not d.setdefault(key, [fill] * n), which builds a list of n
    at every row (0.7 s of the report of an hour)."""
    s = d.get(key)
    if s is None:
        s = d[key] = [fill] * n
    return s


def io_panel(w: Window, rows: list[Row], tl: Timeline) -> Panel:
    """pg_stat_io per (backend type, object, context): read/write/extend bytes/s,
    fsyncs/s (io_rows: 0 where a key did not change, nothing in an interval
    of a reset), and the hit ratio (timeline)."""
    idx = {e: i for i, e in enumerate(w.ends)}
    n = len(w.ends)
    metrics: dict[str, dict[str, list[Value]]] = {m: {} for m, _, _ in IO_CHARTS}
    for r in rows:
        i = idx.get(r["interval_end"])
        if i is None:
            continue
        key = f"{r['backend_type']} {r['object']}/{r['context']}" if r["object"] != "relation" \
            else f"{r['backend_type']} {r['context']}"
        if r["reset"]:
            continue
        for m, d in metrics.items():
            v = r[m]
            if v is None:
                continue
            _filled(d, key, n, 0.0)[i] = float(v)
    has_io = bool(rows)
    charts: list[Chart] = []
    for m, title, unit in IO_CHARTS:
        keys = sorted(k for k, v in metrics[m].items() if _nonzero(v))
        if keys:
            charts.append(_chart(f"io.{m}", title, unit, w, [(k, metrics[m][k]) for k in keys]))
    hit: list[Value] = [None if v is None else v * 100.0 for v in tl["hit_ratio"]]
    if _has_values(hit):
        charts.append(_chart("io.hit_ratio", "Buffer hit ratio (pg_stat_database)", "%", w,
                             [("hit ratio", hit)]))
    return _panel("io", "I/O by backend type and context",
                  "pg_stat_io per interval (chronicle.io_deltas, changed rows): bytes read, written "
                  "and extended per second and fsyncs per second, one series per backend type and "
                  "context that did any; the hit ratio of pg_stat_database (chronicle.timeline).",
                  charts, empty=None if has_io or charts else "pg_stat_io was not recorded in this window.")


def wal_rows(conn: Conn, w: Window) -> list[Row]:
    """chronicle.wal_deltas() of the window."""
    return _rows(conn, "SELECT * FROM chronicle.wal_deltas(%s, %s)", (w.from_ts, w.to_ts))


def wal_sources_rows(conn: Conn, w: Window) -> list[Row]:
    """chronicle.run_wal_sources() of the run (over the run's own window)."""
    if not db.has_function(conn, "chronicle.run_wal_sources"):
        return []
    return _rows(conn, "SELECT * FROM chronicle.run_wal_sources(%s)", (w.run,))


def _num(v: Any) -> float | None:
    """A number of the database (numeric, bigint, double) as a float."""
    return None if v is None else float(v)


def wal_sources_table(rows: list[Row]) -> Table | None:
    """Where the run's WAL came from (wal_sources_rows): a row per source,
    the explanation of each as the extension words it."""
    if not rows:
        return None
    total = next((r for r in rows if r["source"] == "total"), None)
    note = "Over the run's window."
    if total is not None:
        flags = [f"{name} {'on' if total[name] else 'off'}"
                 for name in ("data_checksums", "wal_log_hints", "full_page_writes")
                 if total[name] is not None]
        if flags:
            note += " " + ", ".join(flags) + "."
    return {"id": "wal.sources", "title": "Where the WAL came from",
            "columns": ["source", "WAL bytes", "share", "full-page images", "bytes per transaction",
                        "top statement", "why"],
            "rows": [[r["source"], _num(r["wal_bytes"]),
                      None if r["share"] is None else round(100 * float(r["share"]), 1),
                      _num(r["wal_fpi"]),
                      None if r["wal_bytes_per_transaction"] is None
                      else round(float(r["wal_bytes_per_transaction"]), 1),
                      _short(r["top_query"], 80) if r["top_query"] is not None else "",
                      r["explanation"] or ""] for r in rows],
            "marked": [], "note": note}


def wal_panel(w: Window, rows: list[Row], sources: list[Row] | None = None) -> Panel:
    """WAL bytes, records, FPI and wal_buffers_full per second (wal_rows),
    and where the run's WAL came from (wal_sources_rows)."""
    charts: list[Chart] = []
    if rows:
        charts = [
            _chart("wal.bytes", "WAL bytes", "bytes/s", w,
                   [("WAL bytes/s", _series(w, rows, "wal_bytes_per_s"))]),
            _chart("wal.records", "WAL records and full-page images", "1/s", w,
                   [("records/s", _series(w, rows, "wal_records_per_s")),
                    ("full-page images/s", _series(w, rows, "wal_fpi_per_s"))]),
            _chart("wal.buffers_full", "wal_buffers_full", "1/s", w,
                   [("wal_buffers_full/s", _series(w, rows, "wal_buffers_full_per_s"))]),
        ]
    return _panel("wal", "WAL",
                  "pg_stat_wal per interval (chronicle.wal_deltas): WAL bytes, records and full-page "
                  "images per second, and how often a backend found the WAL buffers full. The table "
                  "says where the run's WAL came from (chronicle.run_wal_sources): queries (hint "
                  "bits with data checksums, pruning as pages are read), other statements, and "
                  "what no statement wrote (background processes, commit records).", charts,
                  tables=[wal_sources_table(sources or [])])


def buffers(conn: Conn, w: Window) -> Panel:
    """The buffer cache summary at the end of each interval (buffers_values)."""
    rows = _rows(conn, "SELECT * FROM chronicle.buffers_values(%s, %s)", (w.from_ts, w.to_ts))
    charts: list[Chart] = []
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


CPU_MODES = (("user", "cpu_user"), ("system", "cpu_system"), ("iowait", "cpu_iowait"),
             ("steal", "cpu_steal"))


def cpu_rows(conn: Conn, w: Window) -> list[Row]:
    """chronicle.os_process_cpu_deltas() of the window: CPU and time waiting
    for a CPU per interval and PostgreSQL process type (changed rows)."""
    return _rows(conn, """SELECT interval_end, backend_type, reset, user_ms_per_s, system_ms_per_s,
                                 run_delay_ms_per_s
                            FROM chronicle.os_process_cpu_deltas(%s, %s, changed_only => true)""",
                 (w.from_ts, w.to_ts))


def cpu_totals_rows(conn: Conn, w: Window) -> list[Row]:
    """chronicle.os_process_cpu_totals() of the window: per process type."""
    return _rows(conn, """SELECT backend_type, user_ms, system_ms, run_delay_ms, exited
                            FROM chronicle.os_process_cpu_totals(%s, %s)""", (w.summary_from, w.to_ts))


def _cpu_ms(r: Row) -> float:
    return float(r["user_ms"] or 0.0) + float(r["system_ms"] or 0.0)


def cpu_panel(w: Window, rows: list[Row], totals: list[Row], tl: Timeline) -> Panel:
    """The machine's CPU by mode (timeline, /proc/stat), the CPU of the
    server's processes and their time waiting for a CPU by process type
    (cpu_rows: ms per second / 1000 = CPUs busy, processes waiting), and the
    window's totals per type (cpu_totals_rows)."""
    charts: list[Chart] = []
    modes = [(name, [None if v is None else v * 100.0 for v in tl[col]]) for name, col in CPU_MODES]
    if any(_has_values(v) for _, v in modes):
        charts.append(_chart("cpu.modes", "CPU by mode (the machine, /proc/stat)", "%", w, modes,
                             stack=True))
    idx = {e: i for i, e in enumerate(w.ends)}
    n = len(w.ends)
    busy: dict[str, list[Value]] = {}
    wait: dict[str, list[Value]] = {}
    for r in rows:
        i = idx.get(r["interval_end"])
        if i is None or r["reset"]:
            continue
        u, sy, d = r["user_ms_per_s"], r["system_ms_per_s"], r["run_delay_ms_per_s"]
        if u is not None or sy is not None:
            _filled(busy, r["backend_type"], n, 0.0)[i] = ((u or 0.0) + (sy or 0.0)) / 1000.0
        if d is not None:
            _filled(wait, r["backend_type"], n, 0.0)[i] = d / 1000.0
    keys = sorted(k for k, v in busy.items() if _nonzero(v))
    if keys:
        charts.append(_chart("cpu.by_type", "CPU of PostgreSQL processes by type", "CPUs", w,
                             [(k, busy[k]) for k in keys], stack=True))
    waiting = [(k, wait[k]) for k in sorted(k for k, v in wait.items() if _nonzero(v))]
    if _has_values(tl["procs_running"]):
        waiting.append(("runnable processes (machine)", tl["procs_running"]))
    if waiting:
        charts.append(_chart("cpu.waiting", "Waiting for a CPU: processes by type, and the run queue",
                             "processes", w, waiting))
    table: Table | None = None
    server = sum(_cpu_ms(r) for r in totals)
    if totals and server > 0:
        ordered = sorted(totals, key=lambda r: -_cpu_ms(r))
        table = {"id": "cpu.by_type", "title": "CPU of the window by process type",
                 "columns": ["process type", "CPU s", "share", "user s", "system s",
                             "waiting for a CPU s", "exited"],
                 "rows": [[r["backend_type"],
                           _r(_cpu_ms(r) / 1000.0), round(100.0 * _cpu_ms(r) / server, 1),
                           _r(None if r["user_ms"] is None else r["user_ms"] / 1000.0),
                           _r(None if r["system_ms"] is None else r["system_ms"] / 1000.0),
                           _r(None if r["run_delay_ms"] is None else r["run_delay_ms"] / 1000.0),
                           r["exited"]]
                          for r in ordered if _cpu_ms(r) + (r["run_delay_ms"] or 0.0) > 0],
                 "marked": [], "note": "share: of the CPU of every process of the server in the window."}
    return _panel("cpu", "CPU",
                  "The machine's CPU time by mode as % of all CPUs (/proc/stat: chronicle.timeline's "
                  "cpu_user, cpu_system with irq and softirq, cpu_iowait, cpu_steal; idle is the "
                  "rest); the CPU of the server's processes by PostgreSQL process type in CPUs busy "
                  "(user + system ms per second / 1000, chronicle.os_process_cpu_deltas: a process "
                  "that exits stays in its type's total), the time they spent runnable but waiting "
                  "for a CPU (schedstat's run delay, in processes waiting on average) beside the "
                  "machine's runnable processes (procs_running), and the window's totals per type "
                  "(chronicle.os_process_cpu_totals).", charts, tables=[table],
                  empty=None if charts or table else
                  "CPU was not recorded in this window (chronicle.collect_os_cpu and "
                  "chronicle.collect_os_process_cpu, Linux /proc).")


# ---------------------------------------------------------------------------
# Relations: sizes and table activity (the relations source, read every
# chronicle.relations_interval by a reader per database)

# relations drawn per chart: the largest (sizes), the busiest (activity)
TOP_RELATIONS = 8
RELATION_COUNTERS = ("n_tup_ins", "n_tup_upd", "n_tup_hot_upd", "n_tup_del", "seq_scan", "idx_scan",
                     "heap_blks_read", "heap_blks_hit", "autovacuum_count", "vacuum_count",
                     "autoanalyze_count", "analyze_count")


def relation_rows(conn: Conn, w: Window) -> list[Row]:
    """chronicle.relation_deltas() of the window, every relation in every
    interval (its sizes and tuple counts are gauges, carried between
    readings); [] where the server has no relations source."""
    if not db.has_function(conn, "chronicle.relation_deltas"):
        return []
    return _rows(conn, f"""
        SELECT interval_end, seconds, datname, relation, reset, total_bytes, main_bytes, index_bytes,
               toast_bytes, n_live_tup, n_dead_tup, {", ".join(RELATION_COUNTERS)}
          FROM chronicle.relation_deltas(%s, %s)""", (w.from_ts, w.to_ts))


def _relation_name(r: Row) -> str:
    return f"{r['datname']}: {r['relation']}"


def _by_relation(w: Window, rows: list[Row], col: str) -> dict[str, list[Value]]:
    """One series of col per relation ("datname: schema.name"), one value
    per interval of the window."""
    idx = {e: i for i, e in enumerate(w.ends)}
    out: dict[str, list[Value]] = {}
    for r in rows:
        i = idx.get(r["interval_end"])
        if i is not None:
            vals = _filled(out, _relation_name(r), len(w.ends), None)
            vals[i] = None if r[col] is None else float(r[col])
    return out


def readings(w: Window, rows: list[Row]) -> dict[str, list[bool]]:
    """Per database, the intervals in which its reader read it: those in which
    any of its relations' counters, sizes or tuple counts moved.  A reading
    that saw nothing move writes no row, so it cannot be told from no
    reading: a database's readings show while any of its relations is
    active (a benchmark's tables), and a relation that stops is known to
    have stopped from its neighbours' readings."""
    idx = {e: i for i, e in enumerate(w.ends)}
    gauges = ("total_bytes", "n_live_tup", "n_dead_tup")
    last: dict[str, tuple[Any, ...]] = {}
    out: dict[str, list[bool]] = {}
    for r in sorted(rows, key=lambda r: r["interval_end"]):
        i = idx.get(r["interval_end"])
        if i is None:
            continue
        seen = _filled(out, r["datname"], len(w.ends), False)
        now = tuple(r[g] for g in gauges)
        name = _relation_name(r)
        if any(r[c] for c in RELATION_COUNTERS) or (name in last and last[name] != now):
            seen[i] = True
        last[name] = now
    return out


def per_reading(w: Window, deltas: list[Value], read: list[bool] | None = None) -> list[Value]:
    """A counter of a source read every few snapshots as a rate per second:
    its deltas are 0 between two readings and the whole period's count in
    the interval of the next reading, so each period's count is spread
    over the period's intervals (from after the previous reading to this
    one).  read: the intervals with a reading (readings()); without it, a
    reading is where the delta is not 0.  Intervals after the last
    reading, or with a reset: None."""
    out: list[Value] = [None] * len(deltas)
    start, acc = 0, 0.0
    secs = [(e - s).total_seconds() for s, e in zip(w.starts, w.ends, strict=True)]
    for i, d in enumerate(deltas):
        if d is None:
            start, acc = i + 1, 0.0
            continue
        acc += d
        if d != 0 or (read is not None and read[i]):
            span = sum(secs[start:i + 1])
            rate = acc / span if span > 0 else None
            for j in range(start, i + 1):
                out[j] = rate
            start, acc = i + 1, 0.0
    return out


def covered_mean(w: Window, rates: list[Value]) -> float | None:
    """The mean of per_reading() rates over the intervals of the window after
    its warm-up (those that end after it, whole, as per_reading() spreads
    a count over whole intervals) that a reading covers, weighted by their
    seconds: the count per second over the time the readings account for,
    not over the window's end that no reading has seen yet."""
    num = den = 0.0
    for s, e, v in zip(w.starts, w.ends, rates, strict=True):
        if v is not None and e > w.summary_from:
            secs = (e - s).total_seconds()
            num, den = num + v * secs, den + secs
    return num / den if den > 0 else None


def _top(series: dict[str, list[Value]], n: int = TOP_RELATIONS) -> list[str]:
    """The n names whose series reach highest (None counted as 0), then by name."""
    return sorted(series, key=lambda k: (-max((v or 0.0) for v in series[k]), k))[:n]


def relations_panel(w: Window, rows: list[Row]) -> Panel:
    """The size of the largest relations over the window, their growth, and
    the window's table of sizes (relation_rows)."""
    about = ("The largest tables and materialized views of every database (the relations source: "
             "pg_total_relation_size() and its parts, read every chronicle.relations_interval, 10 s "
             "by default, by a short-lived reader per database; chronicle.relation_deltas). Sizes "
             "are carried between two readings: they move in steps. Growth per second is over each "
             "reading's period.")
    if not rows:
        return _panel("relations", "Relation sizes", about,
                      empty="No relation sizes recorded in this window (chronicle.collect_relations; "
                            "0.3.0 or later).")
    total = _by_relation(w, rows, "total_bytes")
    top = [k for k in _top(total) if _nonzero(total[k])]
    growth = {k: per_reading(w, [None if b is None or a is None else b - a
                                 for a, b in zip([v[0], *v[:-1]], v, strict=True)])
              for k, v in ((k, total[k]) for k in top)}
    charts = [_chart("relations.size", "Size of the largest relations (table, indexes, TOAST)", "bytes",
                     w, [(k, total[k]) for k in top])]
    grown = [k for k in top if _nonzero(growth[k])]
    if grown:
        charts.append(_chart("relations.growth", "Growth of the largest relations", "bytes/s", w,
                             [(k, growth[k]) for k in grown]))
    last: dict[str, Row] = {}
    first: dict[str, Row] = {}
    for r in rows:
        name = _relation_name(r)
        if r["total_bytes"] is not None:
            first.setdefault(name, r)
            last[name] = r
    # growth per second over the time the readings cover: from the window's
    # start after its warm-up (or the relation's first row) to its
    # database's last reading, not to the window's end that no reading saw
    read = readings(w, rows)
    last_read = {db: max((e for e, r in zip(w.ends, seen, strict=True) if r), default=None)
                 for db, seen in read.items()}
    in_summary = {_relation_name(r): r for r in rows if r["interval_end"] <= w.summary_from}
    first_start = next((s for s, e in zip(w.starts, w.ends, strict=True) if e > w.summary_from),
                       w.summary_from)
    table: Table = {
        "id": "relations.sizes", "title": "Sizes at the window's end",
        "columns": ["relation", "total", "table", "indexes", "TOAST", "growth over the window",
                    "growth per s"],
        "rows": [], "marked": [], "note": None}
    for name in sorted(last, key=lambda k: -(last[k]["total_bytes"] or 0))[:20]:
        e = last[name]
        b = in_summary.get(name, first[name])
        g = None if e["total_bytes"] is None or b["total_bytes"] is None \
            else e["total_bytes"] - b["total_bytes"]
        # from the start of the first interval after the warm-up (as
        # covered_mean()), or the relation's first row if it came later
        t0 = max(b["interval_end"], first_start) \
            if name not in in_summary and b["interval_end"] != w.ends[0] else first_start
        t1 = last_read.get(e["datname"])
        secs = 0.0 if t1 is None else (t1 - t0).total_seconds()
        table["rows"].append([name, e["total_bytes"], e["main_bytes"], e["index_bytes"], e["toast_bytes"],
                              g, None if g is None or secs <= 0 else _r(g / secs)])
    p = _panel("relations", "Relation sizes", about, charts, tables=[table])
    p["note"] = "Sizes in bytes (the table: its main fork)."
    return p


def tables_panel(w: Window, rows: list[Row], totals: list[Row]) -> Panel:
    """Table activity: rows written and scans per second over each
    reading's period, dead tuples, and the window's totals per relation
    (relation_totals_rows)."""
    about = ("What the busiest tables did (the relations source: pg_stat_all_tables and "
             "pg_statio_all_tables of the largest relations of every database, read every "
             "chronicle.relations_interval): rows inserted, updated and deleted per second and the "
             "dead tuples, over each reading's period; the window's totals per relation "
             "(chronicle.relation_totals), with the vacuums and analyzes that ended in it (the "
             "maintenance source marks those it saw running on every time chart).")
    if not rows:
        return _panel("tables", "Table activity", about,
                      empty="No table activity recorded in this window (chronicle.collect_relations; "
                            "0.3.0 or later).")
    read = readings(w, rows)
    db_of = {_relation_name(r): r["datname"] for r in rows}
    written: dict[str, list[Value]] = {}
    for col in ("n_tup_ins", "n_tup_upd", "n_tup_del"):
        for k, v in _by_relation(w, rows, col).items():
            acc = written.setdefault(k, [0.0] * len(v))
            written[k] = [None if a is None or b is None else a + b for a, b in zip(acc, v, strict=True)]
    rates = {k: per_reading(w, v, read[db_of[k]]) for k, v in written.items()}
    busy = [k for k in _top(rates) if _nonzero(rates[k])]
    dead = _by_relation(w, rows, "n_dead_tup")
    dead_top = [k for k in _top(dead) if _nonzero(dead[k])]
    charts: list[Chart | None] = [
        _chart("tables.written", "Rows inserted, updated and deleted per second", "1/s", w,
               [(k, rates[k]) for k in busy]) if busy else None,
        _chart("tables.dead", "Dead tuples", "tuples", w, [(k, dead[k]) for k in dead_top])
        if dead_top else None,
    ]
    per_s: dict[str, dict[str, float | None]] = {}
    for col in ("n_tup_ins", "n_tup_upd", "n_tup_hot_upd", "n_tup_del", "seq_scan", "idx_scan",
                "heap_blks_read"):
        for k, v in _by_relation(w, rows, col).items():
            per_s.setdefault(k, {})[col] = covered_mean(w, per_reading(w, v, read[db_of[k]]))
    table: Table = {
        "id": "tables.totals", "title": "Per relation over the window (per second)",
        "columns": ["relation", "inserted", "updated", "HOT", "deleted", "seq scans", "index scans",
                    "blocks read", "hit ratio", "vacuums", "analyzes"],
        "rows": [_table_row(r, per_s.get(_relation_name(r), {}))
                 for r in sorted(totals, key=lambda r: -_written(r))[:20]],
        "marked": [],
        "note": "per second over the time the readings of its database cover (the window's end that "
                "no reading has seen yet is left out); vacuums and analyzes: manual and autovacuum, "
                "counted in the window."}
    return _panel("tables", "Table activity", about, charts, tables=[table])


def _written(r: Row) -> float:
    """Rows a relation's totals say were inserted, updated and deleted."""
    return sum(float(r[c] or 0) for c in ("n_tup_ins", "n_tup_upd", "n_tup_del"))


def _table_row(r: Row, rates: dict[str, float | None]) -> list[Cell]:
    """A relation's row of the table activity's totals: its counts per
    second (rates: covered_mean() of each), the heap's hit ratio, vacuums
    and analyzes (the window's totals)."""
    def per_s(col: str) -> Cell:
        v = rates.get(col)
        return None if v is None else _r(v)

    hit, read = float(r["heap_blks_hit"] or 0), float(r["heap_blks_read"] or 0)
    return [_relation_name(r), per_s("n_tup_ins"), per_s("n_tup_upd"), per_s("n_tup_hot_upd"),
            per_s("n_tup_del"), per_s("seq_scan"), per_s("idx_scan"), per_s("heap_blks_read"),
            _r(hit / (hit + read), 4) if hit + read > 0 else None,
            int(r["vacuum_count"] or 0) + int(r["autovacuum_count"] or 0),
            int(r["analyze_count"] or 0) + int(r["autoanalyze_count"] or 0)]


def relation_totals_rows(conn: Conn, w: Window) -> list[Row]:
    """chronicle.relation_totals() of the window after its warm-up: per
    relation, the counters' sums."""
    if not db.has_function(conn, "chronicle.relation_totals"):
        return []
    return _rows(conn, f"""SELECT datname, relation, {", ".join(RELATION_COUNTERS)}
                             FROM chronicle.relation_totals(%s, %s)""", (w.summary_from, w.to_ts))


def os_panel(conn: Conn, w: Window) -> Panel:
    """/proc/meminfo Dirty/Writeback, pressure (PSI) and disk stats."""
    charts: list[Chart] = []
    mem = _rows(conn, "SELECT interval_end, dirty, writeback FROM chronicle.os_memory_deltas(%s, %s)",
                (w.from_ts, w.to_ts))
    if mem:
        charts.append(_chart("os.dirty", "Dirty and Writeback (meminfo)", "bytes", w,
                             [("Dirty", _series(w, mem, "dirty", 1024.0)),
                              ("Writeback", _series(w, mem, "writeback", 1024.0))]))
    pr = _rows(conn, """SELECT interval_end, resource, reset, some_total_per_s, full_total_per_s
                          FROM chronicle.os_pressure_deltas(%s, %s)""", (w.from_ts, w.to_ts))
    if pr:
        series: list[tuple[str, list[Value]]] = []
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
        thr: list[tuple[str, list[Value]]] = []
        util: list[tuple[str, list[Value]]] = []
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


def statements(conn: Conn, w: Window, n: int = 15) -> Panel:
    """Top statements of the window by total execution time (statements_top)."""
    rows = _rows(conn, "SELECT * FROM chronicle.statements_top(%s, %s, %s)", (w.summary_from, w.to_ts, n))
    table: Table | None = None
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


def _short(q: str | None, n: int = 160) -> str:
    """A statement in one line of at most n characters."""
    if q is None:
        return "(query text not recorded)"
    q = " ".join(q.split())
    return q if len(q) <= n else q[: n - 1] + "…"


# 40 log-spaced bins per decade of microseconds, one grid for every run (so
# two runs' histograms share their bins)
BINS_PER_DECADE = 40

# (run, bins, (p50 ms, p99 ms)) of one run
Distribution = tuple[str, list[Row], tuple[float | None, float | None]]


def latency_panel(w: Window, data: Distribution) -> Panel:
    """Histogram and CDF of the pgbench transaction latencies of the window
    (latency_data()), log-spaced bins, p50 and p99 marked."""
    if not data[1]:
        return _panel("latency", "Latency distribution",
                      "Histogram and CDF of the pgbench transaction latencies.",
                      empty="No pgbench per-transaction log in this run: no latency distribution.")
    return _panel("latency", "Latency distribution", LATENCY_ABOUT, distribution_charts([data]))


LATENCY_ABOUT = ("Every pgbench transaction of the window (chronicle.app_transaction), in "
                 f"{BINS_PER_DECADE} log-spaced bins per decade: which share of the transactions "
                 "took that long (histogram; a share, so that two runs of different lengths "
                 "compare) and which share took at most that long (CDF), on a log latency axis "
                 "from the fastest bin to the slowest. Vertical lines: each run's p50 (dashed) and "
                 "p99 (solid), the nearest-rank percentiles of the window's transactions.")

def distribution_charts(runs: list[Distribution]) -> list[Chart]:
    """Histogram and CDF charts for one or more runs' binned latencies (rows
    of latency_data(): b, the bin number, and n, its transactions): every
    bin from the lowest to the highest of any run, x its upper edge in ms,
    each run's counts as shares of its transactions; each run's p50 and p99
    as marks."""
    lo = min(r["b"] for _, rows, _ in runs for r in rows)
    hi = max(r["b"] for _, rows, _ in runs for r in rows)
    bins = list(range(lo, hi + 1))
    x = [10 ** ((b + 1) / BINS_PER_DECADE) / 1000.0 for b in bins]   # upper edge, ms
    x_min = 10 ** (lo / BINS_PER_DECADE) / 1000.0
    hist: list[Series] = []
    cdf: list[Series] = []
    marks: list[Mark] = []
    for run, rows, (p50, p99) in runs:
        counts = {r["b"]: int(r["n"]) for r in rows}
        total = sum(counts.values())
        h: list[Value] = [counts.get(b, 0) / total for b in bins]
        c: list[Value] = [n / total for n in itertools.accumulate(counts.get(b, 0) for b in bins)]
        hist.append({"label": run, "values": h, "run": run})
        cdf.append({"label": run, "values": c, "run": run})
        prefix = f"{run}: " if len(runs) > 1 else ""
        if p50 is not None:
            marks.append({"x": p50, "kind": "p50", "label": f"{prefix}p50 {p50:.3f} ms"})
        if p99 is not None:
            marks.append({"x": p99, "kind": "p99", "label": f"{prefix}p99 {p99:.3f} ms"})
    return [
        {"id": "latency.histogram", "title": "Latency histogram", "unit": "fraction",
         "kind": "distribution", "x": x, "series": hist, "stack": False, "log_y": False,
         "log_x": True, "marks": marks, "x_unit": "ms", "x_min": x_min},
        {"id": "latency.cdf", "title": "Latency CDF", "unit": "fraction", "kind": "distribution",
         "x": x, "series": cdf, "stack": False, "log_y": False, "log_x": True, "marks": list(marks),
         "x_unit": "ms", "x_min": x_min},
    ]


def latency_data(conn: Conn, w: Window) -> Distribution:
    """(run, bins, (p50 ms, p99 ms)) of the window's pgbench transactions, in
    one pass over them: the transactions per log-spaced latency bin (b: bin
    number, n: count; float8 log, numeric's is 20 times slower), and p50
    and p99 of the completed ones, nearest rank as chronicle.app_summary()
    and app_intervals() take them (percentile_disc: the least latency whose
    cumulative count reaches ceil(p * count)), from their counts per
    distinct latency (a hash of a few thousand values, not a sort of every
    transaction); chronicle.app_latencies() gives those counts, kept once
    read."""
    counts = ("""SELECT l.latency_us AS l, l.transactions AS n, l.completed AS n_ok
                   FROM chronicle.app_latencies(%(label)s, %(f)s, %(t)s) l"""
              if db.has_function(conn, "chronicle.app_latencies") else
              """SELECT t.latency_us AS l, count(*) AS n, count(*) FILTER (WHERE t.status = 'ok') AS n_ok
                   FROM chronicle.app_transaction t
                  WHERE t.run_id = %(run)s AND t.ts > %(f)s AND t.ts <= %(t)s AND t.latency_us IS NOT NULL
                  GROUP BY 1""")
    rows = _rows(conn, """
        WITH v AS MATERIALIZED (""" + counts + """
        ), bins AS (
            SELECT floor(log(greatest(v.l, 1)::float8) * %(bins)s)::int AS b, sum(v.n)::bigint AS n
              FROM v GROUP BY 1
        ), ok AS (
            SELECT v.l, (sum(v.n_ok) OVER (ORDER BY v.l))::float8 AS cum,
                   (sum(v.n_ok) OVER ())::float8 AS total
              FROM v WHERE v.n_ok > 0
        ), p AS (
            SELECT min(ok.l) FILTER (WHERE ok.cum >= greatest(ceil(0.5::float8 * ok.total), 1)) AS p50,
                   min(ok.l) FILTER (WHERE ok.cum >= greatest(ceil(0.99::float8 * ok.total), 1)) AS p99
              FROM ok
        )
        SELECT bins.b, bins.n, p.p50, p.p99 FROM bins CROSS JOIN p ORDER BY bins.b""",
                 {"run": w.run_id, "label": w.run, "f": w.summary_from, "t": w.to_ts,
                  "bins": BINS_PER_DECADE})
    if not rows:
        return w.run, [], (None, None)
    p50, p99 = rows[0]["p50"], rows[0]["p99"]
    return (w.run, [{"b": r["b"], "n": r["n"]} for r in rows],
            (None if p50 is None else p50 / 1000.0, None if p99 is None else p99 / 1000.0))


# pgbench's --latency-limit (-L), in ms, as its arguments give it
_LATENCY_LIMIT = re.compile(r"^(?:-L|--latency-limit)(?:=?(.+))?$")


def latency_limit_ms(meta: dict[str, Any]) -> float | None:
    """pgbench's --latency-limit of a run recorded by pg-chronicle bench
    (its arguments in meta["argv"]), else None."""
    argv = meta.get("argv")
    if not isinstance(argv, list):
        return None
    for i, a in enumerate(argv):
        m = _LATENCY_LIMIT.match(str(a))
        if m:
            val = m.group(1) if m.group(1) is not None else (argv[i + 1] if i + 1 < len(argv) else None)
            try:
                v = float(str(val))
            except ValueError:
                return None
            return v if v > 0 and math.isfinite(v) else None
    return None


def threshold_us(ms: float) -> int:
    """The whole microseconds a latency (in us) must exceed to be slower than
    ms: floor(ms x 1000) of the decimal the threshold reads as, so that 1.001
    ms is 1001 us (1.001 * 1000.0 is 1000.9999999999999, which counted a
    latency of 1001 us as slower)."""
    return min(math.floor(Decimal(repr(ms)) * 1000), 2 ** 63 - 1)


def over_rows(conn: Conn, w: Window) -> list[Row]:
    """Per interval of the window, the run's completed transactions slower
    than the threshold (over; NULL without a threshold) and those pgbench
    skipped (--latency-limit with --rate: late before they started)."""
    thr_us = None if w.latency_threshold_ms is None else threshold_us(w.latency_threshold_ms)
    # one pass over the window's transactions, those counted put in the
    # interval they end in: with x the end less 1 us, the number b of the
    # intervals' bounds (start 1, end 1, start 2, ...) at or before x is
    # odd, 2k - 1, in interval k (start k <= x < end k); even in a gap
    # between recordings
    return _rows(conn, """
        WITH i AS MATERIALIZED (
            SELECT i.interval_start, i.interval_end,
                   row_number() OVER (ORDER BY i.interval_end) AS k
              FROM chronicle.intervals(%(f)s, %(t)s) i
        ), e AS MATERIALIZED (
            SELECT array_agg(b.x ORDER BY i.k, b.j) AS bounds,
                   min(i.interval_start) AS lo, max(i.interval_end) AS hi
              FROM i, LATERAL (VALUES (1, i.interval_start), (2, i.interval_end)) b(j, x)
        ), n AS (
            SELECT width_bucket(t.ts - interval '1 microsecond', e.bounds) AS b,
                   count(*) FILTER (WHERE t.status = 'ok' AND t.latency_us > %(thr)s::bigint) AS over,
                   count(*) FILTER (WHERE t.status = 'skipped') AS skipped
              FROM e, chronicle.app_transaction t
             WHERE t.run_id = %(run)s AND t.ts > e.lo AND t.ts <= e.hi
               AND (t.status = 'skipped' OR t.status = 'ok' AND t.latency_us > %(thr)s::bigint)
             GROUP BY 1
        )
        SELECT i.interval_end,
               CASE WHEN %(thr)s::bigint IS NOT NULL THEN coalesce(n.over, 0) END AS over,
               coalesce(n.skipped, 0) AS skipped
          FROM i
          LEFT JOIN n ON n.b = 2 * i.k - 1""",
                 {"thr": thr_us, "f": w.from_ts, "t": w.to_ts, "run": w.run_id})


def skipped_rows(w: Window, app: list[Row]) -> list[Row]:
    """over_rows() of a window without a threshold, from its app_rows(): the
    transactions pgbench skipped per interval of the per-transaction log
    (an interval counted from an aggregate log counts none, as over_rows()
    reads no aggregate), without another pass over the transactions."""
    by_end = {r["interval_end"]: r["skipped"] for r in app if r["basis"] == "transactions"}
    return [{"interval_end": e, "over": None, "skipped": by_end.get(e, 0)} for e in w.ends]


# fewer intervals than this standing out: the next ones are shown, unmarked
SLOWEST_MIN_ROWS = 3


def slowest_reference(conn: Conn, w: Window, by: str, p99: float | None) -> float | None:
    """What an interval is measured against: by p99, the p99 of every
    transaction of the window, p99 (latency_data()'s: an interval whose p99
    is above it had more than its share of slow transactions); by tps, the
    median of the intervals' tps (commits/s without a pgbench log)."""
    if by == "p99":
        return p99
    r = _rows(conn, """
        SELECT coalesce((SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a.tps)
                           FROM chronicle.app_intervals(%(f)s, %(t)s, %(run)s) a WHERE a.tps IS NOT NULL),
                        (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY t.commits_per_s)
                           FROM chronicle.timeline(%(f)s, %(t)s, resolution => 'raw', app => false) t
                          WHERE t.commits_per_s IS NOT NULL)) AS m""",
              {"f": w.summary_from, "t": w.to_ts, "run": w.run})
    return None if r[0]["m"] is None else float(r[0]["m"])


# the chance, for the whole window, that a steady run shows an interval as
# standing out (by p99 or by tps; each interval's share: ALPHA over the
# window's intervals)
SLOWEST_ALPHA = 0.01


def _binomial_sum(n: int, q: float, k: int, step: int) -> float:
    """The terms P(X = j) of a binomial (n, q) for j = k, k + step, ... while
    in 0 .. n, summed away from the mode (where they only shrink): from
    the log of the first, the next each by the ratio of two terms."""
    t = math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                 + k * math.log(q) + (n - k) * math.log1p(-q))
    total, j = 0.0, k
    while 0 <= j <= n and t > total * 1e-17:
        total += t
        t *= (n - j) / (j + 1) * q / (1.0 - q) if step > 0 else j / (n - j + 1) * (1.0 - q) / q
        j += step
    return total


def binomial_tail(n: int, k: int, q: float) -> float:
    """P(X >= k) for X binomial (n trials, q each): the chance of k or more
    of an interval's n transactions above a percentile that leaves q above
    it.  In logs (n is up to a second's transactions: comb(n, k) overflows
    a float long before), summed over the smaller side of the mode."""
    if k <= 0:
        return 1.0
    if k > n or q <= 0.0:
        return 0.0
    if q >= 1.0:
        return 1.0
    if k > n * q:
        return min(_binomial_sum(n, q, k, 1), 1.0)
    return max(1.0 - _binomial_sum(n, q, k - 1, -1), 0.0)


def _poisson_sum(k: int, lam: float, step: int) -> float:
    """The terms P(X = j) of a Poisson (lam) for j = k, k + step, ... (j >=
    0), summed away from the mean (where they only shrink)."""
    t = math.exp(-lam + k * math.log(lam) - math.lgamma(k + 1))
    total, j = 0.0, k
    while j >= 0 and t > total * 1e-17:
        total += t
        t *= lam / (j + 1) if step > 0 else j / lam
        j += step
    return total


def poisson_head(k: int, lam: float) -> float:
    """P(X <= k) for X Poisson of mean lam: the chance of k or fewer
    transactions in an interval where lam were expected; summed over the
    smaller side of the mean."""
    if k < 0:
        return 0.0
    if lam <= 0.0:
        return 1.0
    if k < lam:
        return min(_poisson_sum(k, lam, -1), 1.0)
    return max(1.0 - _poisson_sum(k + 1, lam, 1), 0.0)


def stands_out(r: Row, by: str, ref: float | None, counts: tuple[int, int] | None = None,
               intervals: int = 1) -> tuple[bool, float | None]:
    """Whether a ranked interval stands out from the window, and its scale.
    By p99 (ref: the window's p99, ms): counts is (its completed
    transactions, those slower than ref); it stands out when a steady run
    would show that many slow ones in so few with a chance below
    SLOWEST_ALPHA / intervals (at most 1 % of a window's transactions are
    slower than its p99: binomial_tail); scale, its p99 over ref.  By tps
    (ref: the median interval's), below 0.9 times ref and so few that a
    steady run (Poisson at ref) would show them with a chance below
    SLOWEST_ALPHA / intervals (poisson_head; at 100 tps a tenth less is
    noise); scale, tps over ref."""
    if ref is None or ref <= 0:
        return True, None
    if by == "p99":
        v = r["latency_p99_ms"]
        scale = None if v is None else v / ref
        if counts is None:
            return False, scale
        n, slow = counts
        return binomial_tail(n, slow, 0.01) < SLOWEST_ALPHA / max(intervals, 1), scale
    v = r["tps"]
    if v is None:
        return False, None
    start, end = r.get("interval_start"), r.get("interval_end")
    secs = (end - start).total_seconds() if start is not None and end is not None else 1.0
    rare = poisson_head(round(v * secs), ref * secs) < SLOWEST_ALPHA / max(intervals, 1)
    return v < 0.9 * ref and rare, v / ref


def slow_counts(conn: Conn, w: Window, rows: list[Row], p99_ms: float) -> dict[datetime, tuple[int, int]]:
    """Per ranked interval (interval_end), its completed transactions and
    those slower than p99_ms (the window's p99, latency_data()'s: a whole
    number of microseconds), from the run's log (the index on run_id, ts:
    a few intervals' transactions, not the run's)."""
    found = _rows(conn, """
        SELECT i.e AS interval_end,
               count(t.ts) FILTER (WHERE t.status = 'ok') AS n,
               count(t.ts) FILTER (WHERE t.status = 'ok' AND t.latency_us > %(thr)s) AS slow
          FROM unnest(%(s)s::timestamptz[], %(e)s::timestamptz[]) AS i(s, e)
          LEFT JOIN chronicle.app_transaction t ON t.run_id = %(run)s AND t.ts > i.s AND t.ts <= i.e
         GROUP BY i.e""",
                  {"s": [r["interval_start"] for r in rows], "e": [r["interval_end"] for r in rows],
                   "thr": round(p99_ms * 1000), "run": w.run_id})
    return {r["interval_end"]: (int(r["n"]), int(r["slow"])) for r in found}


SLOWEST_ABOUT = ("The intervals with the worst p99 latency (lowest throughput when the run has no "
                 "pgbench log) that stand out from the window: more of their transactions slower "
                 "than the window's p99 than chance gives a steady run (a binomial test, 1 % for "
                 "the whole window), or a tps below 0.9 times the median interval's and below what "
                 "chance gives (Poisson, the same 1 %); each with the recorded metrics that rose "
                 "most above the run's median (chronicle.slowest_intervals). Those that stand out "
                 "are shaded on the time charts; click a row to put the cursor there.")


def slowest_rows(conn: Conn, w: Window, n: int = 10) -> tuple[str, list[Row]] | None:
    """(ranking, rows) of chronicle.slowest_intervals() over the window: by p99
    when the run has a pgbench log, else by the lowest tps; None when the
    function is not installed."""
    if not db.has_function(conn, "chronicle.slowest_intervals"):
        return None
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
    return by, rows


def slowest(conn: Conn, w: Window, ranked: tuple[str, list[Row]] | None, p99: float | None) -> Panel:
    """The slowest intervals and what rose in them (slowest_rows(), ranked in
    SQL); only those that stand out from the window (stands_out, against
    slowest_reference(); p99: the window's, latency_data()'s), at least
    SLOWEST_MIN_ROWS."""
    about = SLOWEST_ABOUT
    if ranked is None:
        return _panel("slowest", "Slowest intervals explained", about,
                      empty="chronicle.slowest_intervals() is not installed in this database "
                            "(extension older than 0.2.0).")
    by, rows = ranked
    if not rows:
        return _panel("slowest", "Slowest intervals explained", about,
                      empty="No interval of the window could be ranked.")
    ref = slowest_reference(conn, w, by, p99)
    counts = slow_counts(conn, w, rows, ref) if by == "p99" and ref is not None and ref > 0 else {}
    judged = [(r, *stands_out(r, by, ref, counts.get(r["interval_end"]), len(w.ends))) for r in rows]
    k = sum(1 for _, out, _ in judged if out)
    shown = [j for j in judged if j[1]] if k >= SLOWEST_MIN_ROWS else judged[:SLOWEST_MIN_ROWS]
    tps_col = "tps" if by == "p99" or rows[0]["latency_p99_ms"] is not None else "commits/s"
    scale_col = "p99 / window p99" if by == "p99" else f"{tps_col} / median"
    if ref is None:
        note = None
    elif by == "p99":
        note = (f"{k} of the {len(rows)} worst intervals {'has' if k == 1 else 'have'} more "
                f"transactions slower than the window's p99 ({ref:.3f} ms) than chance gives "
                f"a steady run"
                + ("; the others are shown for reference, unmarked." if k < SLOWEST_MIN_ROWS else "."))
    else:
        note = (f"{k} of the {len(rows)} slowest intervals {'is' if k == 1 else 'are'} below 0.9 "
                f"times the median interval's {ref:.1f} {tps_col} and below what chance gives"
                + ("; the others are shown for reference, unmarked." if k < SLOWEST_MIN_ROWS else "."))
    table: Table = {"id": "slowest.table", "title": f"Slowest intervals (by {by})",
                    "columns": ["rank", "interval end", tps_col, "p50 ms", "p99 ms", "max ms", scale_col,
                                "what rose"],
                    "rows": [[r["rank"], r["interval_end"].isoformat(sep=" ", timespec="seconds"),
                              _r(r["tps"]), _r(r["latency_p50_ms"], 3), _r(r["latency_p99_ms"], 3),
                              _r(r["latency_max_ms"], 3), _r(scale), r["explanation"]]
                             for r, _, scale in shown],
                    "marked": [i for i, (_, out, _) in enumerate(shown) if out] if ref is not None else [],
                    "note": note,
                    "x": [r["interval_end"].timestamp() for r, _, _ in shown],
                    "x_start": [r["interval_start"].timestamp() for r, _, _ in shown]}
    return _panel("slowest", "Slowest intervals explained", about, tables=[table])


def _r(v: Any, nd: int = 2) -> float | None:
    return None if v is None else round(float(v), nd)


def settings_env(w: Window) -> Panel:
    """The run's non-default settings (chronicle.run.settings), its environment
    (chronicle.run.environment) and metadata."""
    run: list[list[Cell]] = [["label", w.run], ["started", str(w.started)], ["ended", str(w.ended)],
                             ["server", _server(w)], ["server version", w.server_version]]
    run += [[f"meta: {k}", _fmt(v)] for k, v in sorted(w.meta.items()) if k != "archive"]
    tables: list[Table] = [{"id": "settings.run", "title": "Run", "columns": ["", ""], "rows": run,
                            "marked": [], "note": None}]
    # an imported run's report is its report on the server that recorded
    # it, and this table more: the import (chronicle._import_run)
    imported = w.meta.get("archive")
    if isinstance(imported, dict):
        tables.append({"id": "settings.imported", "title": "Imported from a run archive",
                       "columns": ["", ""], "marked": [], "note": None,
                       "rows": [["archive", _fmt(imported.get("id"))],
                                ["label on its server", _fmt(imported.get("label"))],
                                ["imported", _fmt(imported.get("imported"))]]})
    key: list[list[Cell]] = [[k, _fmt(w.settings[k])] for k in KEY_SETTINGS if k in w.settings]
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


def _server(w: Window) -> str | None:
    """The server that recorded the run: its name and system identifier."""
    if w.server_name is None and w.system_identifier is None:
        return None
    return f"{w.server_name or '?'} (system identifier {w.system_identifier})"


# the settings a performance engineer looks at first (all are in the folded
# table too)
KEY_SETTINGS = ["server_version", "debug_assertions", "data_checksums", "block_size",
                "wal_segment_size", "shared_buffers", "huge_pages_status", "io_method",
                "effective_io_concurrency", "max_connections", "work_mem", "max_wal_size",
                "checkpoint_timeout", "checkpoint_completion_target", "wal_buffers",
                "wal_compression", "full_page_writes", "synchronous_commit", "fsync",
                "wal_sync_method", "bgwriter_delay", "bgwriter_lru_maxpages", "jit",
                "track_io_timing", "autovacuum"]


def _fmt(v: Any) -> str:
    """A jsonb value as text: a string as it is, anything else as JSON."""
    return v if isinstance(v, str) else json.dumps(v)


def flatten(obj: Any, prefix: str = "") -> list[tuple[str, str]]:
    """A nested jsonb as (dotted name, value) pairs."""
    out: list[tuple[str, str]] = []
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

def profile(conn: Conn, w: Window) -> Panel:
    """The run's load profile (chronicle.load_profile): every metric per
    second and per transaction (commit), the cost of one transaction in WAL,
    I/O, waits and CPU.  Over the run's whole window, which the note says
    when the report's window is narrower."""
    if not db.has_function(conn, "chronicle.load_profile"):
        return _panel("profile", "Load profile", "",
                      empty="This server's pg_chronicle has no load_profile().")
    rows = _rows(conn, "SELECT metric, unit, per_second, per_transaction FROM chronicle.load_profile(%s)",
                 (w.run,))
    bounds = _rows(conn, "SELECT run_from, run_to FROM chronicle.run_window(%s)", (w.run,))
    note = None
    if bounds and (bounds[0]["run_from"], bounds[0]["run_to"]) != (w.summary_from, w.to_ts):
        note = "Over the run's whole window, not the report's narrower one (--from/--to)."
    table: Table = {"id": "profile.load", "title": "Per second and per transaction",
                    "columns": ["metric", "unit", "per second", "per transaction"],
                    "rows": [[r["metric"], r["unit"], _g(r["per_second"]), _g(r["per_transaction"])]
                             for r in rows
                             if r["per_second"] is not None or r["per_transaction"] is not None],
                    "marked": [], "note": note}
    return _panel("profile", "Load profile",
                  "What the run did per second and what one transaction cost "
                  "(chronicle.load_profile: per transaction is per commit of pg_stat_database, so "
                  "that runs without a pgbench log compare too): WAL bytes, records and full-page "
                  "images, reads, writes, extends and fsyncs, buffer hits, session-seconds by wait "
                  "class, CPU of the client backends and of every server process; pgbench's tps "
                  "and latency. A comparison (--vs) shows both runs side by side with B/A.",
                  tables=[table])


def compare_tables(conn: Conn, a: Window, b: Window) -> Panel:
    """Load profile (compare_load_profile), differing settings (compare_settings)
    and environment (compare_environment) of two runs."""
    tables: list[Table] = []
    if db.has_function(conn, "chronicle.compare_load_profile"):
        rows = _rows(conn, "SELECT * FROM chronicle.compare_load_profile(%s, %s)", (a.run, b.run))
        tables.append({
            "id": "compare.load_profile", "title": f"Load profile: A = {a.run}, B = {b.run}",
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
            "id": "compare.load_profile", "title": f"Headline numbers: A = {a.run}, B = {b.run}",
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
    if db.has_function(conn, "chronicle.compare_environment"):
        rows = _rows(conn, "SELECT * FROM chronicle.compare_environment(%s, %s)", (a.run, b.run))
        tables.append({"id": "compare.environment", "title": "Environment that differs",
                       "columns": ["name", "A", "B"],
                       "rows": [[r["name"], _fmt(r["value_a"]), _fmt(r["value_b"])] for r in rows],
                       "marked": [], "note": None if rows else "No difference in the environment."})
    tables.append(meta_table(a.meta, b.meta))
    return _panel("compare", "A/B comparison",
                  "Per second and per transaction numbers of both runs with the ratio B/A "
                  "(chronicle.compare_load_profile), the settings (chronicle.compare_settings), "
                  "environment (chronicle.compare_environment) and run metadata (pgbench's "
                  "command line, how the client connected: host, port, TLS) that differ.",
                  tables=tables)


def meta_table(a: dict[str, Any], b: dict[str, Any]) -> Table:
    """The run metadata of A and B that differ, by dotted name (argv left
    out: the pgbench command line says it; so is the import of an imported
    run, which the settings panel shows)."""
    fa, fb = dict(flatten(a)), dict(flatten(b))
    keys = sorted(k for k in set(fa) | set(fb)
                  if fa.get(k) != fb.get(k) and not k.startswith(("argv", "archive.")))
    return {"id": "compare.meta", "title": "Run metadata that differs", "columns": ["name", "A", "B"],
            "rows": [[k, fa.get(k), fb.get(k)] for k in keys], "marked": [],
            "note": None if keys else "No difference in the runs' metadata."}


def _g(v: Any) -> float | None:
    """A number to 4 significant digits (0, inf and NaN as they are)."""
    if v is None:
        return None
    f = float(v)
    if f == 0 or not math.isfinite(f):
        return f
    return float(f"{f:.4g}")
