"""pg-chronicle report: a run (or two) as one self-contained index.html plus
one PNG and one SVG per panel.

    write_report(conn, run, vs, from_ts, to_ts, outdir) -> outdir / "index.html"

The data come from panels.py (the extension's SQL API, its queries run side
by side by collect()), the page from html.py, the pictures from plots.py;
what they pass around is typed in model.py.
"""

from __future__ import annotations

import contextlib
import pathlib
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import psycopg

from pg_chronicle import db, drawing, html, panels, trials
from pg_chronicle.db import ClientError
from pg_chronicle.model import Chart, Mark, Meta, Panel, Series, Table
from pg_chronicle.panels import Conn, Distribution, Row, Window
from pg_chronicle.text import echo, visible

# the header's numbers: (name, formatted value) pairs
Headline = list[list[str]]
Task = Callable[[Conn], None]


def _another_connection(conn: Conn) -> Conn | None:
    """Another session to the same database (the same parameters and
    password), or None when it cannot be had (then fewer sessions run the
    queries)."""
    try:
        other = db.open_connection(conn.info.dsn, password=conn.info.password,
                                   application_name="pg-chronicle report")
    except psycopg.Error:
        return None
    db.use_server(other)            # pg-chronicle --server: the same server
    return other


# sessions that run a report's queries side by side: the longest
# (slowest_intervals(), timeline(), the pgbench percentiles of a long run)
# take seconds of one server core each
SESSIONS = 3


def _run_tasks(conn: Conn, tasks: Sequence[Task], sessions: int = SESSIONS) -> None:
    """Runs tasks (functions of a connection, taken in their order) on conn
    and, in threads, on up to sessions - 1 more sessions, as many as can be
    opened.  The first error stops them all and is raised here."""
    extra: list[Conn] = []
    while len(extra) < min(sessions, len(tasks)) - 1:
        c = _another_connection(conn)
        if c is None:
            break
        extra.append(c)
    pending = list(tasks)
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker(c: Conn) -> None:
        while True:
            with lock:
                if not pending or errors:
                    return
                t = pending.pop(0)
            try:
                t(c)
            except BaseException as exc:  # noqa: BLE001  re-raised in the caller's thread
                with lock:
                    errors.append(exc)
                return

    try:
        threads = [threading.Thread(target=worker, args=(c,), daemon=True) for c in extra]
        for th in threads:
            th.start()
        worker(conn)
        for th in threads:
            th.join()
    finally:
        for c in extra:
            c.close()
    if errors:
        raise errors[0]


PANELS = ["throughput", "slowest", "profile", "waits", "cpu", "io", "wal", "buffers", "relations", "tables",
          "os", "statements", "latency", "settings"]


@dataclass
class Collected:
    """The panels of one window by id, and its headline numbers."""

    panels: dict[str, Panel] = field(default_factory=dict)
    headline: Headline = field(default_factory=list)
    # the latency distribution of the window (panels.latency_data), for the
    # comparison's panel
    latency: Distribution | None = None

    def in_order(self) -> list[Panel]:
        """The panels in page order (PANELS)."""
        return [self.panels[k] for k in PANELS]


def collect(conn: Conn, w: Window, comparison: bool = False,
            ready: Callable[[Panel], None] | None = None) -> Collected:
    """Every panel of one window and its headline numbers.  The queries run
    in SESSIONS sessions (_run_tasks); the panels that use
    chronicle.timeline()'s series (throughput, waits, cpu, io, wal), the slowest
    intervals and the latency distribution (one p99 for both) are built when
    every query is done; then every time chart gets the window's marks.
    ready: called with each panel that has no chart as soon as it is built
    (nothing of it changes after: its picture can be drawn)."""
    out = Collected()
    rows: dict[str, list[Row]] = {}
    ranked: list[tuple[str, list[Row]] | None] = []

    def built(pid: str, p: Panel) -> None:
        out.panels[pid] = p
        if ready is not None and not p["charts"]:
            ready(p)

    built("settings", panels.settings_env(w))

    # each task reads the history of the run's server on its session
    # (panels.use): the sessions may have read another run's before
    def panel(pid: str, make: Callable[[Conn], Panel]) -> Task:
        def task(c: Conn) -> None:
            panels.use(c, w)
            built(pid, make(c))
        return task

    def fetch(key: str, query: Callable[[Conn, Window], list[Row]]) -> Task:
        def task(c: Conn) -> None:
            panels.use(c, w)
            rows[key] = query(c, w)
        return task

    def headline(c: Conn) -> None:
        panels.use(c, w)
        out.headline = _headline(c, w)

    def slowest(c: Conn) -> None:
        ranked.append(panels.slowest_rows(c, w))

    def latency(c: Conn) -> None:
        out.latency = panels.latency_data(c, w)

    # in the order they start, the longest first: slowest_intervals(), the
    # timeline, the pgbench log's per-interval and whole-run percentiles (the
    # latency distribution's p99 is also what the slowest intervals are
    # measured against)
    # without a latency threshold, the skipped transactions per interval
    # are app_intervals()' (skipped_rows)
    over = [fetch("over", panels.over_rows)] if w.latency_threshold_ms is not None else []
    _run_tasks(conn, [
        slowest,
        fetch("timeline", panels.timeline_rows),
        fetch("app", panels.app_rows),
        *over,
        headline,
        latency,
        fetch("waits", panels.wait_profile_rows),
        fetch("io", panels.io_rows),
        fetch("marks", panels.marks_rows),
        fetch("cpu", panels.cpu_rows),
        fetch("cpu_totals", panels.cpu_totals_rows),
        panel("buffers", lambda c: panels.buffers(c, w)),
        # a comparison shows both profiles side by side instead (compare_tables)
        panel("profile", lambda c: panels.profile(c, w) if not comparison else
              {"id": "profile", "title": "Load profile", "about": "", "charts": [], "tables": [],
               "empty": "In the A/B comparison."}),
        panel("os", lambda c: panels.os_panel(c, w)),
        panel("statements", lambda c: panels.statements(c, w)),
        fetch("wal", panels.wal_rows),
        fetch("wal_sources", panels.wal_sources_rows),
        fetch("relations", panels.relation_rows),
        fetch("relation_totals", panels.relation_totals_rows),
    ])
    assert out.latency is not None
    if not over:
        rows["over"] = panels.skipped_rows(w, rows["app"])
    out.panels["latency"] = panels.latency_panel(w, out.latency)
    out.panels["slowest"] = panels.slowest(conn, w, ranked[0], out.latency[2][1])
    tl = panels.timeline_series(w, rows["timeline"])
    out.panels["throughput"] = panels.throughput_panel(w, rows["app"], tl, rows["over"])
    if panels.unsteady(w, rows["app"], tl) is not None:
        out.headline.append(["steady", "no (see Throughput)"])
    out.panels["waits"] = panels.waits_panel(w, tl, rows["waits"])
    out.panels["cpu"] = panels.cpu_panel(w, rows["cpu"], rows["cpu_totals"], tl)
    out.panels["io"] = panels.io_panel(w, rows["io"], tl)
    out.panels["wal"] = panels.wal_panel(w, rows["wal"], rows["wal_sources"])
    out.panels["relations"] = panels.relations_panel(w, rows["relations"])
    out.panels["tables"] = panels.tables_panel(w, rows["relations"], rows["relation_totals"])
    marks = panels.marks_of(rows["marks"])
    panels.with_marks(out.panels.values(), marks)
    table = panels.marks_table(w, marks)
    if table is not None:
        out.panels["throughput"]["tables"].append(table)
    return out


def _window(conn: Conn, run: str, from_ts: str | None, to_ts: str | None,
            threshold_ms: float | None = None) -> Window:
    f, t = db.run_window(conn, run, from_ts, to_ts)
    with db.translated():
        w = panels.window(conn, run, f, t)
    w.latency_threshold_ms = threshold_ms if threshold_ms is not None else panels.latency_limit_ms(w.meta)
    if not w.ends:
        raise ClientError(f'the window ({f}, {t}] of run "{run}" holds no snapshot interval '
                          "(it needs two snapshots of one recording): nothing to show")
    return w


def relative(chart: Chart, w: Window) -> Chart:
    """chart on seconds since the start of w's window, its marks labelled
    with the run."""
    t0 = w.from_ts.timestamp()
    marks: list[Mark] = [{**m, "x": m["x"] - t0, "label": f"{w.run}: {m['label']}"}
                         for m in chart["marks"]]
    return {**chart, "x": [x - t0 for x in chart["x"]], "marks": marks}


def merge_time(ca: Chart, cb: Chart | None, a: Window, b: Window) -> Chart:
    """A's and B's series of one chart on seconds since their run's start: the
    union of both x's (to the millisecond), each series None at the other
    run's points, labelled "run: label"."""
    ra = relative(ca, a)
    rb = relative(cb, b) if cb else None
    xs = sorted({round(x, 3) for x in ra["x"]} | ({round(x, 3) for x in rb["x"]} if rb else set()))
    pos = {x: i for i, x in enumerate(xs)}
    series: list[Series] = []
    for rc, w in ((ra, a), (rb, b)):
        if rc is None:
            continue
        for s in rc["series"]:
            vals: list[float | None] = [None] * len(xs)
            for x, v in zip(rc["x"], s["values"], strict=True):
                vals[pos[round(x, 3)]] = v
            series.append({"label": f"{w.run}: {s['label']}", "values": vals, "run": w.run})
    return {**ca, "x": xs, "series": series, "marks": ra["marks"] + (rb["marks"] if rb else []),
            "stack": False}


def split_pair(ca: Chart, cb: Chart | None, a: Window, b: Window) -> list[Chart]:
    """A stacked chart in a comparison: A's and B's as two stacked charts one
    under the other (ids X and X.vs), on seconds since their run's start,
    with one y scale (the higher of the two stacks) and B's series in A's
    order (a label has one colour in both).  Overlaid, two stacks would be
    a dozen unstacked lines."""
    out: list[Chart] = []
    order = {s["label"]: i for i, s in enumerate(ca["series"])}
    top = 0.0
    for c, w, suffix in ((ca, a, ""), (cb, b, ".vs")):
        if c is None:
            continue
        rc = relative(c, w)
        series = sorted(rc["series"], key=lambda s: order.get(s["label"], len(order)))
        sums = [sum(v or 0.0 for v in col) for col in zip(*(s["values"] for s in series), strict=True)]
        top = max([top, *sums])
        out.append({**rc, "id": c["id"] + suffix, "title": f"{c['title']}: {w.run}",
                    "series": series})
    return [{**c, "y_max": top} if top > 0 else c for c in out]


def _merge(ra: Collected, rb: Collected, a: Window, b: Window, conn: Conn) -> list[Panel]:
    """The comparison's panels: every time chart with A and B overlaid."""
    pa, pb = ra.in_order(), rb.in_order()
    bmap = {p["id"]: p for p in pb}
    out = [panels.compare_tables(conn, a, b)]
    for p in pa:
        if p["id"] == "profile":
            continue            # the comparison's first panel has both, side by side
        q: Panel = bmap.get(p["id"]) or {"id": p["id"], "title": p["title"], "about": p["about"],
                                         "charts": [], "tables": [], "empty": None}
        if p["id"] == "latency":
            bins = [d for d in (ra.latency, rb.latency) if d is not None and d[1]]
            out.append({**p, "charts": panels.distribution_charts(bins) if bins else [],
                        "empty": None if bins else p["empty"]})
            continue
        qcharts = {c["id"]: c for c in q["charts"]}
        charts: list[Chart] = []
        for c in p["charts"]:
            cb = qcharts.pop(c["id"], None)
            charts += split_pair(c, cb, a, b) if c["stack"] else [merge_time(c, cb, a, b)]
        # a chart only B has (a device, a backend type only B used)
        for c in qcharts.values():
            none_a: Chart = {**c, "x": a.x, "series": [], "marks": []}
            charts += split_pair(none_a, c, a, b) if c["stack"] else [merge_time(none_a, c, a, b)]
        tables: list[Table] = [{**t, "title": f"{a.run}: {t['title']}"} for t in p["tables"]]
        tables += [{**t, "title": f"{b.run}: {t['title']}"} for t in q["tables"]]
        empty = p["empty"] if (p["empty"] and (q.get("empty") or not q["charts"])) else None
        merged: Panel = {**p, "charts": charts, "tables": tables, "empty": empty}
        if p.get("note") or q.get("note"):
            merged["note"] = " ".join(f"{w.run}: {x.get('note')}" for w, x in ((a, p), (b, q))
                                      if x.get("note"))
        out.append(merged)
    return out


# Latencies are whole microseconds: shown to the microsecond, never rounded
# (1.555 ms is 1555 us, not 1.55).  WAL per commit is per commit of the
# server (every database), not per pgbench transaction as bench's summary.
HEADLINE = [("tps", "tps", "{:.0f}"), ("latency_p50_ms", "p50", "{:.3f} ms"),
            ("latency_p99_ms", "p99", "{:.3f} ms"), ("commits_per_s", "commits/s", "{:.0f}"),
            ("wal_bytes_per_commit", "WAL/server commit", "{:.0f} B"),
            ("wal_fpi_per_commit", "FPI/server commit", "{:.2f}"), ("hit_ratio", "hit ratio", "{:.2%}"),
            ("active_processes", "active sessions", "{:.2f}"), ("checkpoints", "checkpoints", "{:.0f}"),
            ("wait_coverage", "sampler coverage", "{:.1%}")]


def headline_rows(values: dict[str, float | None]) -> Headline:
    """The header's (name, formatted value) pairs of chronicle.summary()'s
    metrics, in HEADLINE's order, leaving out those without a value."""
    return [[lab, fmt.format(values[m])] for m, lab, fmt in HEADLINE if values.get(m) is not None]


def _headline(conn: Conn, w: Window) -> Headline:
    return headline_rows({r["metric"]: r["value"] for r in panels.headline(conn, w)})


def _warmup(w: Window, relative: bool) -> list[float]:
    """The warm-up the time charts shade: (start, end) in epoch seconds, or
    in seconds since the run's start in a comparison."""
    assert w.steady_from is not None
    t0 = w.from_ts.timestamp() if relative else 0.0
    return [w.from_ts.timestamp() - t0, w.steady_from.timestamp() - t0]


def _ts(t: datetime) -> str:
    return t.astimezone(UTC).isoformat(sep=" ", timespec="seconds")


def _collect_both(conn: Conn, a: Window, b: Window) -> tuple[Collected, Collected]:
    """collect() of a comparison's two windows at once: B's in a thread on
    sessions of its own while A's run on conn, so that the server's cores
    are busy while a window's panels are built and while its last long
    query runs alone.  One after the other when no other session can be
    opened; the first error is raised here."""
    other = _another_connection(conn)
    if other is None:
        return collect(conn, a, comparison=True), collect(conn, b, comparison=True)
    got: list[Collected] = []
    errors: list[BaseException] = []

    def run_b() -> None:
        try:
            got.append(collect(other, b, comparison=True))
        except BaseException as exc:  # noqa: BLE001  re-raised in the caller's thread
            errors.append(exc)

    th = threading.Thread(target=run_b, daemon=True)
    th.start()
    try:
        ra = collect(conn, a, comparison=True)
    finally:
        th.join()
        other.close()
    if errors:
        raise errors[0]
    return ra, got[0]


def build(conn: Conn, run: str, vs: str | None, from_ts: str | None,
          to_ts: str | None, first: Panel | None = None,
          threshold_ms: float | None = None,
          ready: Callable[[Panel, Meta], None] | None = None) -> tuple[Meta, list[Panel], list[Window]]:
    """(meta, panels, windows) of the report, without writing anything;
    first: a panel put before the others (the trials'); threshold_ms: the
    latency over which transactions are counted per interval (default:
    each run's pgbench --latency-limit); ready: called with each panel of
    the report that is final before the queries are all done (a report of
    one run: first, and the panels without a chart) and the meta it is
    drawn with (its run and vs)."""
    lead = [first] if first is not None else []
    a = _window(conn, run, from_ts, to_ts, threshold_ms)
    meta: Meta = {"run": run, "vs": vs, "from": _ts(a.from_ts), "to": _ts(a.to_ts),
                  "intervals": len(a.ends), "server_version": a.server_version,
                  "generated": "", "headline": []}
    if a.steady_from is not None:
        meta["warmup"] = _warmup(a, relative=vs is not None)
    early: Callable[[Panel], None] | None = None
    if ready is not None and vs is None:
        def early(p: Panel) -> None:
            ready(p, {**meta})
        for p in lead:
            if not p["charts"]:
                early(p)
    if vs is None:
        with db.translated():
            ra = collect(conn, a, ready=early)
            meta["generated"], meta["headline"] = _ts(datetime.now(UTC)), ra.headline
            return meta, lead + ra.in_order(), [a]
    b = _window(conn, vs, None, None, threshold_ms)
    with db.translated():
        ra, rb = _collect_both(conn, a, b)
        meta["generated"], meta["headline"] = _ts(datetime.now(UTC)), ra.headline
        meta["vs_from"], meta["vs_to"] = _ts(b.from_ts), _ts(b.to_ts)
        meta["vs_intervals"], meta["vs_server_version"] = len(b.ends), b.server_version
        meta["vs_headline"] = rb.headline
        if b.steady_from is not None:
            meta["vs_warmup"] = _warmup(b, relative=True)
        return meta, lead + _merge(ra, rb, a, b, conn), [a, b]


def write_report(conn: Conn, run: str, vs: str | None, from_ts: str | None,
                 to_ts: str | None, outdir: pathlib.Path,
                 first: Panel | None = None, threshold_ms: float | None = None) -> pathlib.Path:
    """Writes outdir/<panel>.png/.svg and outdir/index.html; returns the
    index.html path.  An unknown run or an empty window is a ClientError.
    A panel whose picture cannot be drawn is a warning on stderr, and the
    page says so in that panel: the rest of the report is written.  first:
    a panel before the others (trials_panel())."""
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    outdir = pathlib.Path(outdir)
    made: list[pathlib.Path] = []      # the folder, when this report made it
    lock = threading.Lock()

    def mkdir() -> None:
        with lock:
            if outdir.is_dir():
                return
            try:
                outdir.mkdir(parents=True)
            except OSError as exc:
                raise ClientError(f"cannot create the output folder {outdir}: {exc.strerror}") from exc
            made.append(outdir)

    # the pictures of the panels final before the queries are done are drawn
    # meanwhile (the processes fork here, before the queries' threads)
    drawer = drawing.Drawer(outdir)

    def ready(p: Panel, m: Meta) -> None:
        mkdir()
        drawer.submit(p, m)

    try:
        meta, panel_list, _ = build(conn, run, vs, from_ts, to_ts, first, threshold_ms, ready)
    except BaseException:
        drawer.close()
        for pid in drawer.done:
            for ext in ("png", "svg"):
                (outdir / f"{pid}.{ext}").unlink(missing_ok=True)
        if made:
            with contextlib.suppress(OSError):
                outdir.rmdir()
        raise
    timings["queries"] = time.monotonic() - t0
    t1 = time.monotonic()
    try:
        mkdir()
    except ClientError:
        drawer.close()
        raise
    failed = drawer.finish(meta, panel_list)
    for pid, why in failed.items():
        echo(f"pg-chronicle: warning: the picture of panel {pid} could not be drawn "
             f"({visible(why)}); the rest of the report is written", file=sys.stderr)
    panel_list = [{**p, "picture_error": failed[p["id"]]} if p["id"] in failed else p
                  for p in panel_list]
    timings["pictures"] = time.monotonic() - t1
    t2 = time.monotonic()
    index = outdir / "index.html"
    try:
        index.write_text(html.render(meta, panel_list), encoding="utf-8")
    except OSError as exc:
        raise ClientError(f"cannot write {index}: {exc.strerror}") from exc
    timings["html"] = time.monotonic() - t2
    write_report.timings = timings  # type: ignore[attr-defined]  # read by bench/report.sh
    return index


def trials_panel(conn: Conn, run: str, vs: str | None, from_ts: str | None,
                 to_ts: str | None) -> tuple[str, str | None, Panel | None]:
    """What run and vs stand for (trials.resolve), their windows checked:
    the runs the report's panels show (a configuration's trial with the
    median tps) and, when either is a configuration of trials, the panel
    of the trials."""
    ca = trials.resolve(conn, run)
    if not ca.trials:
        db.run_window(conn, run, from_ts, to_ts)
    cb = trials.resolve(conn, vs) if vs is not None else None
    if cb is not None and not cb.trials:
        db.run_window(conn, cb.name)
    if not ca.trials and (cb is None or not cb.trials):
        return run, vs, None
    # each configuration's trials in a session of its own, side by side
    loaded: dict[str, trials.TrialSet] = {}

    def load(key: str, config: trials.Config) -> Task:
        def task(c: Conn) -> None:
            loaded[key] = trials.load(c, config)
        return task

    _run_tasks(conn, [load("a", ca)] + ([load("b", cb)] if cb is not None else []))
    sa = loaded["a"]
    sb = loaded.get("b")
    shown_a = sa.representative()
    shown_b = sb.representative() if sb is not None else None
    note = trials.within_note(conn, [ca] if cb is None else [ca, cb])
    return shown_a, shown_b, trials.report_panel(sa, sb, shown_a, shown_b, note)


def write_checked(conninfo: str | None, run: str, vs: str | None, from_ts: str | None,
                  to_ts: str | None, outdir: pathlib.Path,
                  threshold_ms: float | None = None) -> pathlib.Path:
    """Checks the runs and the window, then writes the report (for
    pg-chronicle report and bench --report).  run and vs may name
    configurations of trials: the panels show the trial of each with the
    median tps, a first panel the trials."""
    with db.connect(conninfo) as conn:
        run, vs, first = trials_panel(conn, run, vs, from_ts, to_ts)
        db.run_window(conn, run, from_ts, to_ts)
        with db.translated():
            return write_report(conn, run, vs, from_ts, to_ts, outdir, first, threshold_ms)
