"""pg-chronicle report: a run (or two) as one self-contained index.html plus
one PNG and one SVG per panel.

    write_report(conn, run, vs, from_ts, to_ts, outdir) -> outdir / "index.html"

The data come from panels.py (one query function per panel, the extension's
SQL API), the page from html.py, the pictures from plots.py.
"""

from __future__ import annotations

import pathlib
import sys
import threading
import time
from datetime import datetime, timezone

import psycopg

from pg_chronicle import db, html, panels
from pg_chronicle.db import ClientError
from pg_chronicle.text import echo, visible


def _second_connection(conn: psycopg.Connection) -> psycopg.Connection | None:
    """Another session to the same database (the same parameters and
    password), or None when it cannot be had (then the queries run one after
    the other)."""
    try:
        return db.open_connection(conn.info.dsn, password=conn.info.password,
                                  application_name="pg-chronicle report")
    except psycopg.Error:
        return None


def _run_tasks(conn: psycopg.Connection, tasks: list) -> list:
    """Runs tasks (functions of a connection) on conn and, when it can be
    opened, a second session in a second thread: the pgbench percentiles of a
    long run take seconds of one server core each.  Results in task order."""
    conn2 = _second_connection(conn) if len(tasks) > 1 else None
    if conn2 is None:
        return [t(conn) for t in tasks]
    results: list = [None] * len(tasks)
    pending = list(enumerate(tasks))
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker(c: psycopg.Connection) -> None:
        while True:
            with lock:
                if not pending or errors:
                    return
                i, t = pending.pop(0)
            try:
                results[i] = t(c)
            except BaseException as exc:      # re-raised in the caller's thread
                with lock:
                    errors.append(exc)
                return

    try:
        th = threading.Thread(target=worker, args=(conn2,), daemon=True)
        th.start()
        worker(conn)
        th.join()
    finally:
        conn2.close()
    if errors:
        raise errors[0]
    return results


PANELS = ["throughput", "slowest", "waits", "io", "wal", "buffers", "os", "statements",
          "latency", "settings"]


def collect(conn: psycopg.Connection, w: panels.Window, extra: dict | None = None) -> dict:
    """Every panel of one window by id (page order: PANELS), and the results
    of the extra tasks (functions of a connection) under their keys."""
    tl = panels.server_series(conn, w)
    ckpt = panels.checkpoint_marks(conn, w)
    # in the order they start, the longest first: slowest_intervals(), then
    # the pgbench log's per-interval and whole-run percentiles
    tasks = {
        "slowest": lambda c: panels.slowest(c, w),
        "throughput": lambda c: panels.throughput(c, w, tl, ckpt),
        **(extra or {}),
        "latency": lambda c: panels.latency_distribution(c, w),
        "waits": lambda c: panels.waits(c, w, tl),
        "io": lambda c: panels.io(c, w, tl, ckpt),
        "wal": lambda c: panels.wal(c, w, ckpt),
        "buffers": lambda c: panels.buffers(c, w),
        "os": lambda c: panels.os_panel(c, w),
        "statements": lambda c: panels.statements(c, w),
        "settings": lambda c: panels.settings_env(c, w),
    }
    return dict(zip(tasks, _run_tasks(conn, list(tasks.values()))))


def _window(conn, run: str, from_ts, to_ts) -> panels.Window:
    f, t = db.run_window(conn, run, from_ts, to_ts)
    with db.translated():
        w = panels.window(conn, run, f, t)
    if not w.ends:
        raise ClientError(f'the window ({f}, {t}] of run "{run}" holds no snapshot interval '
                          "(it needs two snapshots of one recording): nothing to show")
    return w


def _relative(chart: dict, w: panels.Window) -> dict:
    t0 = w.from_ts.timestamp()
    return dict(chart, x=[x - t0 for x in chart["x"]],
                marks=[dict(m, x=m["x"] - t0, label=f"{w.run}: {m['label']}") for m in chart["marks"]])


def _merge_time(ca: dict, cb: dict | None, a: panels.Window, b: panels.Window) -> dict:
    """A's and B's series of one chart on seconds since their run's start: the
    union of both x's, each series None at the other run's points."""
    ra = _relative(ca, a)
    rb = _relative(cb, b) if cb else None
    xs = sorted(set(round(x, 3) for x in ra["x"]) | (set(round(x, 3) for x in rb["x"]) if rb else set()))
    pos = {x: i for i, x in enumerate(xs)}
    series = []
    for rc, w in ((ra, a), (rb, b)):
        if rc is None:
            continue
        for s in rc["series"]:
            vals = [None] * len(xs)
            for x, v in zip(rc["x"], s["values"]):
                vals[pos[round(x, 3)]] = v
            series.append({"label": f"{w.run}: {s['label']}", "values": vals, "run": w.run})
    return dict(ca, x=xs, series=series, marks=ra["marks"] + (rb["marks"] if rb else []),
                stack=False)


def _merge(pa: list[dict], pb: list[dict], a: panels.Window, b: panels.Window, conn) -> list[dict]:
    """The comparison's panels: every time chart with A and B overlaid."""
    bmap = {p["id"]: p for p in pb}
    out = [panels.compare_tables(conn, a, b)]
    for p in pa:
        q = bmap.get(p["id"], {"charts": [], "tables": [], "empty": None})
        if p["id"] == "latency":
            bins = [(w.run, panels.latency_bins(conn, w)) for w in (a, b)]
            bins = [(r, rows) for r, rows in bins if rows]
            out.append(dict(p, charts=panels.distribution_charts(bins) if bins else [],
                            empty=None if bins else p["empty"]))
            continue
        qcharts = {c["id"]: c for c in q["charts"]}
        charts = [_merge_time(c, qcharts.pop(c["id"], None), a, b) for c in p["charts"]]
        # a chart only B has (a device, a backend type only B used)
        charts += [_merge_time(dict(c, x=a.x, series=[], marks=[]), c, a, b)
                   for c in qcharts.values()]
        tables = [dict(t, title=f"{a.run}: {t['title']}") for t in p["tables"]] + \
                 [dict(t, title=f"{b.run}: {t['title']}") for t in q["tables"]]
        empty = p["empty"] if (p["empty"] and (q.get("empty") or not q["charts"])) else None
        if p.get("note") or q.get("note"):
            p = dict(p, note=" ".join(f"{w.run}: {x.get('note')}" for w, x in ((a, p), (b, q))
                                      if x.get("note")))
        out.append(dict(p, charts=charts, tables=tables, empty=empty))
    return out


HEADLINE = [("tps", "tps", "{:.0f}"), ("latency_p50_ms", "p50", "{:.2f} ms"),
            ("latency_p99_ms", "p99", "{:.2f} ms"), ("commits_per_s", "commits/s", "{:.0f}"),
            ("wal_bytes_per_commit", "WAL/commit", "{:.0f} B"),
            ("wal_fpi_per_commit", "FPI/commit", "{:.2f}"), ("hit_ratio", "hit ratio", "{:.2%}"),
            ("active_processes", "active sessions", "{:.2f}"), ("checkpoints", "checkpoints", "{:.0f}"),
            ("wait_coverage", "sampler coverage", "{:.1%}")]


def _headline(conn, w: panels.Window) -> list[list[str]]:
    vals = {r["metric"]: r["value"] for r in panels.headline(conn, w)}
    return [[lab, fmt.format(vals[m])] for m, lab, fmt in HEADLINE if vals.get(m) is not None]


def _ts(t: datetime) -> str:
    return t.astimezone(timezone.utc).isoformat(sep=" ", timespec="seconds")


def build(conn: psycopg.Connection, run: str, vs: str | None, from_ts, to_ts):
    """(meta, panels) of the report, without writing anything."""
    a = _window(conn, run, from_ts, to_ts)
    with db.translated():
        ra = collect(conn, a, {"headline": lambda c: _headline(c, a)})
        pa = [ra[k] for k in PANELS]
        meta = {"run": run, "vs": vs, "from": _ts(a.from_ts), "to": _ts(a.to_ts),
                "intervals": len(a.ends), "server_version": a.server_version,
                "generated": _ts(datetime.now(timezone.utc)), "headline": ra["headline"]}
        if vs is None:
            return meta, pa, [a]
    b = _window(conn, vs, None, None)
    with db.translated():
        rb = collect(conn, b, {"headline": lambda c: _headline(c, b)})
        pb = [rb[k] for k in PANELS]
        meta.update(vs_from=_ts(b.from_ts), vs_to=_ts(b.to_ts), vs_intervals=len(b.ends),
                    vs_server_version=b.server_version, vs_headline=rb["headline"])
        return meta, _merge(pa, pb, a, b, conn), [a, b]


def write_report(conn: psycopg.Connection, run: str, vs: str | None, from_ts: str | None,
                 to_ts: str | None, outdir: pathlib.Path) -> pathlib.Path:
    """Writes outdir/<panel>.png/.svg and outdir/index.html; returns the
    index.html path.  An unknown run or an empty window is a ClientError.
    A panel whose picture cannot be drawn is a warning on stderr, and the
    page says so in that panel: the rest of the report is written."""
    timings = {}
    t0 = time.monotonic()
    meta, panel_list, windows = build(conn, run, vs, from_ts, to_ts)
    timings["queries"] = time.monotonic() - t0
    outdir = pathlib.Path(outdir)
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ClientError(f"cannot create the output folder {outdir}: {exc.strerror}") from exc
    t1 = time.monotonic()
    from pg_chronicle import plots    # matplotlib: imported only when drawing
    failed = plots.write_all(meta, panel_list, outdir)
    for pid, why in failed.items():
        echo(f"pg-chronicle: warning: the picture of panel {pid} could not be drawn "
             f"({visible(why)}); the rest of the report is written", file=sys.stderr)
    panel_list = [dict(p, picture_error=failed[p["id"]]) if p["id"] in failed else p
                  for p in panel_list]
    timings["pictures"] = time.monotonic() - t1
    t2 = time.monotonic()
    index = outdir / "index.html"
    try:
        index.write_text(html.render(meta, panel_list), encoding="utf-8")
    except OSError as exc:
        raise ClientError(f"cannot write {index}: {exc.strerror}") from exc
    timings["html"] = time.monotonic() - t2
    write_report.timings = timings    # for bench/report.sh
    return index


def write_checked(conninfo: str | None, run: str, vs: str | None, from_ts: str | None,
                  to_ts: str | None, outdir: pathlib.Path) -> pathlib.Path:
    """Checks the runs and the window, then writes the report (for
    pg-chronicle report and bench --report)."""
    with db.connect(conninfo) as conn:
        db.run_window(conn, run, from_ts, to_ts)
        if vs is not None:
            db.run_window(conn, vs)
        with db.translated():
            return write_report(conn, run, vs, from_ts, to_ts, outdir)
