"""pg-chronicle sweep: one recorded run per value of one variable, and the curve.

    sweep --label NAME --clients 1,2,4 -- ARGS
        ->  for each value v, in the order given: bench's run (bench.main)
            labelled NAME@clients=v (with --trials N: NAME@clients=v#1 ..
            #N), pgbench given -c v (and -j min(v, CPUs) unless ARGS has a
            -j) before ARGS; --rate gives -R v
        ->  the sweep found again in the database (find()), one row per
            value: tps, latency p50/p99, average active sessions by class
        ->  with -o DIR: DIR/sweep.png, DIR/sweep.svg and DIR/index.html
    sweep-report NAME [--vs OTHER] [-o DIR]: the same from the database only

A point is a configuration of trials.py: the run NAME@VAR=VALUE, or its
trials NAME@VAR=VALUE#k.  Its numbers are chronicle.load_profile()'s
(trials.load(), one call per run): "pgbench tps" per second (from
app_summary()), "latency p50" and "latency p99" per transaction, "DB time"
and each wait class per second, i.e. the average number of active
sessions of that class (the sampler's samples / its ticks); with trials,
the median of the point's trials (trials.spread()).

A sweep is found by its runs' meta (sweep = NAME, sweep_var, sweep_value,
which sweep writes) or by the label prefix NAME@ (runs recorded from SQL
with such labels); the variable and the value come from the label
NAME@VAR=VALUE when it has that form, else from the meta.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import html as _html
import math
import os
import pathlib
import re
import sys
import textwrap
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import psycopg

from pg_chronicle import bench, db, text, trials
from pg_chronicle.db import EXIT_INTERRUPTED, RUN_OF_SERVER, ClientError, connect, query

if TYPE_CHECKING:                   # matplotlib: imported only when drawing
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

VARIABLES = ("clients", "rate")
# the pgbench option each variable sets
OPTION = {"clients": "-c", "rate": "-R"}

# ---------------------------------------------------------------------------
# pgbench's options, as its getopt_long() reads them (PostgreSQL 17; the
# options looked for here, -c, -j and -R, are alike in 13 .. 18)

_SHORT = "b:c:Cd:D:f:F:h:iI:j:lL:M:nNp:P:qrR:s:St:T:U:v"
_SHORT_WITH_ARG = {ch for ch, nxt in zip(_SHORT, _SHORT[1:] + " ", strict=True)
                   if ch != ":" and nxt == ":"}
# long name: (key, takes an argument); the key is the short option's letter
# when there is one
_LONG: dict[str, tuple[str, bool]] = {
    "builtin": ("b", True), "client": ("c", True), "connect": ("C", False),
    "dbname": ("d", True), "define": ("D", True), "file": ("f", True),
    "fillfactor": ("F", True), "host": ("h", True), "initialize": ("i", False),
    "init-steps": ("I", True), "jobs": ("j", True), "log": ("l", False),
    "latency-limit": ("L", True), "no-vacuum": ("n", False), "port": ("p", True),
    "progress": ("P", True), "protocol": ("M", True), "quiet": ("q", False),
    "report-per-command": ("r", False), "rate": ("R", True), "scale": ("s", True),
    "select-only": ("S", False), "skip-some-updates": ("N", False), "time": ("T", True),
    "transactions": ("t", True), "username": ("U", True), "vacuum-all": ("v", False),
    "unlogged-tables": ("unlogged-tables", False), "tablespace": ("tablespace", True),
    "index-tablespace": ("index-tablespace", True), "sampling-rate": ("sampling-rate", True),
    "aggregate-interval": ("aggregate-interval", True),
    "progress-timestamp": ("progress-timestamp", False), "log-prefix": ("log-prefix", True),
    "foreign-keys": ("foreign-keys", False), "random-seed": ("random-seed", True),
    "show-script": ("show-script", True), "partitions": ("partitions", True),
    "partition-method": ("partition-method", True),
    "failures-detailed": ("failures-detailed", False), "max-tries": ("max-tries", True),
    "verbose-errors": ("verbose-errors", False), "exit-on-abort": ("exit-on-abort", False),
    "debug": ("debug", False),
}


def _long(name: str) -> tuple[str, bool] | None:
    """A long option as getopt_long() takes it: its exact name, or an
    abbreviation of exactly one (None: unknown or ambiguous)."""
    if name in _LONG:
        return _LONG[name]
    found = [v for k, v in _LONG.items() if k.startswith(name)]
    return found[0] if len(found) == 1 else None


def pgbench_options(args: Sequence[str]) -> list[tuple[str, str | None]]:
    """The options in pgbench's arguments as (key, value): short ones
    bundled or not (-nc4, -c 4), long ones abbreviated or not (--cl=4,
    --client 4); up to a "--".  Arguments that are not options, and
    unknown options, are left out (pgbench says what is wrong with them)."""
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            break
        if a.startswith("--"):
            name, eq, val = a[2:].partition("=")
            opt = _long(name)
            if opt is None:
                continue
            key, with_arg = opt
            if with_arg and not eq:
                val = args[i] if i < len(args) else ""
                i += 1
            out.append((key, val if with_arg else None))
        elif a.startswith("-") and len(a) > 1:
            for j in range(1, len(a)):
                if a[j] in _SHORT_WITH_ARG:
                    val = a[j + 1:]
                    if not val:
                        val = args[i] if i < len(args) else ""
                        i += 1
                    out.append((a[j], val))
                    break
                out.append((a[j], None))
    return out


# ---------------------------------------------------------------------------
# The values and the labels

def value_text(v: float) -> str:
    """A value as labels and tables show it: 4, 12.5."""
    v = float(v)
    return str(int(v)) if v.is_integer() else repr(v)


def parse_values(var: str, spec: str) -> list[float]:
    """--clients 1,2,4 (positive integers) or --rate 100,250.5 (positive
    numbers): the values in their order; an empty or invalid list, a value
    not above 0 or one given twice is a ClientError."""
    items = [s.strip() for s in spec.split(",")]
    if not spec.strip() or any(not s for s in items):
        raise ClientError(f"--{var} wants a comma-separated list of values, such as 1,2,4; "
                          f"got {spec!r}")
    values: list[float] = []
    for s in items:
        if var == "clients":
            if not re.fullmatch(r"[+-]?[0-9]+", s):
                raise ClientError(f"--clients: {s!r} is not a whole number of clients")
            v = float(int(s))
        else:
            try:
                v = float(s)
            except ValueError:
                raise ClientError(f"--rate: {s!r} is not a number of transactions per second") from None
            if not math.isfinite(v):
                raise ClientError(f"--rate: {s!r} is not a finite number")
        if v <= 0:
            raise ClientError(f"--{var}: {s} is not above 0")
        if v in values:
            raise ClientError(f"--{var}: {s} is given twice (each value is one point of the sweep)")
        values.append(v)
    return values


def check_name(name: str) -> None:
    if not name:
        raise ClientError("--label: the sweep's name must not be empty")
    for ch, why in (("@", "it separates the sweep's name from the variable in its runs' labels "
                          "(NAME@clients=4)"),
                    (trials.SEP, "it separates a configuration from its trial number (NAME@clients=4#1)")):
        if ch in name:
            raise ClientError(f"--label {name!r}: a sweep's name cannot hold {ch!r}: {why}")


def point_label(name: str, var: str, value: float) -> str:
    """The configuration of one point: NAME@clients=4."""
    return f"{name}@{var}={value_text(value)}"


def point_args(var: str, value: float, pgbench_args: list[str]) -> list[str]:
    """pgbench's arguments of one point: -c v (and -j min(v, CPUs) when the
    user gave no -j) or -R v, before the user's (whose "--" may end the
    options)."""
    if var == "clients":
        own = ["-c", value_text(value)]
        if not any(k == "j" for k, _ in pgbench_options(pgbench_args)):
            own += ["-j", str(min(int(value), os.cpu_count() or 1))]
    else:
        own = ["-R", value_text(value)]
    return own + pgbench_args


def check_pgbench_args(var: str, pgbench_args: list[str]) -> None:
    """bench's checks, and none of the option the sweep sets."""
    bench.check_args(pgbench_args)
    key = OPTION[var][1]
    given = [k for k, _ in pgbench_options(pgbench_args) if k == key]
    if given:
        long = "--client" if var == "clients" else "--rate"
        raise ClientError(f"the pgbench arguments set {OPTION[var]}/{long} already: the sweep "
                          f"sets it for each point (--{var}); leave it out")


# ---------------------------------------------------------------------------
# A sweep in the database

# the numbers of a point: (key, load_profile()'s metric, its column)
NUMBERS = [("tps", trials.TPS, "per_second"), ("p50", "latency p50", "per_transaction"),
           ("p99", "latency p99", "per_transaction"), ("sessions", "DB time", "per_second")]
# the wait classes, as the table and the pictures name them, and their
# load_profile() metric (per second: average active sessions)
CLASSES = [("CPU", "CPU"), ("IO", "IO waits"), ("Lock", "Lock waits"), ("LWLock", "LWLock waits"),
           ("IPC", "IPC waits"), ("Client", "Client waits"), ("Timeout", "Timeout waits"),
           ("other", "other waits")]
_CLASS_NAMES = [c for c, _ in CLASSES]


@dataclasses.dataclass(frozen=True)
class Point:
    value: float
    config: trials.Config
    numbers: dict[str, float | None]    # NUMBERS' and CLASSES' keys: the median of the trials
    ranges: dict[str, tuple[float, float] | None]   # and the trials' min and max

    @property
    def text(self) -> str:
        return value_text(self.value)


@dataclasses.dataclass(frozen=True)
class Sweep:
    name: str
    var: str
    points: list[Point]                 # by value

    @property
    def runs(self) -> int:
        return sum(len(p.config.labels) for p in self.points)

    def series(self, key: str) -> list[float | None]:
        return [p.numbers[key] for p in self.points]

    def ranges(self, key: str) -> list[tuple[float, float] | None]:
        return [p.ranges[key] for p in self.points]


def _point(value: float, ts: trials.TrialSet) -> Point:
    """A point's numbers: per metric, the median of its trials' values
    (trials.spread()), and their range."""
    metrics = [*NUMBERS, *[(key, metric, "per_second") for key, metric in CLASSES]]
    numbers: dict[str, float | None] = {}
    ranges: dict[str, tuple[float, float] | None] = {}
    for key, metric, col in metrics:
        vals = [float(r[col]) for rows in ts.profiles for r in rows
                if r["metric"] == metric and r[col] is not None]
        s = trials.spread(vals)
        numbers[key] = None if s is None else s.median
        ranges[key] = None if s is None else (s.low, s.high)
    return Point(value, ts.config, numbers, ranges)


def _runs_of(conn: psycopg.Connection[Any], name: str) -> list[dict[str, Any]]:
    """The runs of sweep NAME: meta sweep = NAME, or labelled NAME@..., oldest first."""
    return query(conn,
                 "SELECT r.label, r.ended IS NULL AS open, r.meta->>'sweep_var' AS var, "
                 "       r.meta->>'sweep_value' AS value "
                 "  FROM chronicle.run r "
                 " WHERE ((jsonb_typeof(r.meta) = 'object' AND r.meta->>'sweep' = %(n)s) "
                 "        OR left(r.label, length(%(n)s) + 1) = %(n)s || '@') "
                 "   AND " + RUN_OF_SERVER +
                 " ORDER BY r.started, r.run_id", {"n": name})


def find(conn: psycopg.Connection[Any], name: str) -> Sweep:
    """The sweep NAME recorded in the database: its points by value, each
    point's runs checked (ended, a window with snapshots) as compare and
    report check them.  No such sweep, one mixing two variables, or two
    configurations of one value are a ClientError."""
    rows = _runs_of(conn, name)
    if not rows:
        raise ClientError(f'no sweep "{name}": no run labelled {name}@clients=... or {name}@rate=..., '
                          f"nor with meta sweep = {name} (pg-chronicle runs lists the runs)")
    pattern = re.compile(re.escape(name) + r"@(clients|rate)=([0-9][0-9.]*)", re.S)
    points: dict[str, tuple[str, float]] = {}
    for r in rows:
        if r["open"]:
            raise ClientError(f'run {r["label"]} of sweep "{name}" is still open (a sweep still '
                              "running?): end it first (chronicle.run_end)")
        t = trials.parse_trial(r["label"])
        config = t[0] if t is not None else r["label"]
        m = pattern.fullmatch(config)
        var, val = (m.group(1), m.group(2)) if m else (r["var"], r["value"])
        try:
            value = float(val) if var in VARIABLES and val is not None else math.nan
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0:
            text.echo(f"pg-chronicle: warning: run {r['label']} is left out of sweep \"{name}\": "
                      "neither its label (NAME@clients=N, NAME@rate=R) nor its meta (sweep_var, "
                      "sweep_value) names a variable and a value", file=sys.stderr)
            continue
        points.setdefault(config, (var, value))
    if not points:
        raise ClientError(f'sweep "{name}" has no run that names its variable and value')
    variables = sorted({v for v, _ in points.values()})
    if len(variables) > 1:
        raise ClientError(f'sweep "{name}" mixes points of {" and ".join(variables)}: '
                          "a sweep varies one variable")
    by_value: dict[float, str] = {}
    for config, (_var, value) in points.items():
        if value in by_value:
            raise ClientError(f'sweep "{name}" has two configurations of {variables[0]} = '
                              f"{value_text(value)}: {by_value[value]} and {config}")
        by_value[value] = config
    out = []
    for value in sorted(by_value):
        cfg = trials.resolve(conn, by_value[value])
        if not cfg.trials:
            db.run_window(conn, cfg.name)
        out.append(_point(value, trials.load(conn, cfg)))
    return Sweep(name, variables[0], out)


def exists(conn: psycopg.Connection[Any], name: str) -> list[str]:
    """The labels of the runs of a sweep NAME (meta or label prefix)."""
    return [r["label"] for r in _runs_of(conn, name)]


# ---------------------------------------------------------------------------
# The terminal

UNIT = {"clients": "clients", "rate": "rate (tps)"}


def table_text(sw: Sweep) -> str:
    """The sweep in the terminal: one row per value."""
    many = any(len(p.config.labels) > 1 for p in sw.points)
    head = [UNIT[sw.var], *(["trials"] if many else []), "tps", "p50 ms", "p99 ms", "sessions",
            *[c for c, _ in CLASSES]]
    rows = []
    for p in sw.points:
        g = p.numbers.get
        rows.append([p.text, *([str(len(p.config.labels))] if many else []),
                     text.num(g("tps")), text.num(g("p50")), text.num(g("p99")),
                     text.num(g("sessions")), *[text.num(g(c)) for c, _ in CLASSES]])
    runs = f"{sw.runs} runs" if sw.runs != 1 else "1 run"
    lines = [f"sweep {sw.name}: {len(sw.points)} point(s) of {sw.var} ({runs})"
             + ("; each number the median of the point's trials" if many else ""),
             text.table(head, rows, right=[True] * len(head)),
             *textwrap.wrap("tps and latency (nearest-rank percentiles) from pgbench's log; sessions: "
                            "average active sessions (DB time per second), then by wait class; "
                            "from chronicle.load_profile() of each run", 100)]
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# The pictures and the page

FIGURE = "sweep"        # DIR/sweep.png, DIR/sweep.svg


def _x_axis(ax: Axes, sweeps: Sequence[Sweep]) -> None:
    values = sorted({p.value for s in sweeps for p in s.points})
    if values[0] > 0 and values[-1] / values[0] >= 8:
        ax.set_xscale("log")
    ax.set_xticks(values, labels=[value_text(v) for v in values])
    ax.minorticks_off()
    ax.set_xlabel(UNIT[sweeps[0].var])


def figure(sweeps: Sequence[Sweep]) -> Figure:
    """One figure: tps, latency p50/p99 (log y) and, per sweep, the average
    active sessions by wait class stacked, against the variable; the
    second sweep's curves dashed over the first's.  The lines and stacks
    carry ids (gid) in the SVG: sweep-tps-A, sweep-p50-B, sweep-sessions-A,
    sweep-waits-A-CPU, ..."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import LogLocator, NullFormatter

    from pg_chronicle import plots  # Agg, and its rcParams: text as it is
    classes = [c for c, _ in CLASSES
               if any((v or 0) > 0 for s in sweeps for v in s.series(c))]
    n = 2 + len(sweeps)
    h = plots.CHART_IN * n + 1.1
    fig, axes = plt.subplots(n, 1, figsize=(plots.WIDTH_IN, h), dpi=plots.DPI, squeeze=False)
    fig.subplots_adjust(left=0.8 / plots.WIDTH_IN, right=1 - 2.6 / plots.WIDTH_IN, top=1 - 0.75 / h,
                        bottom=0.45 / h, hspace=0.75 / (plots.CHART_IN - 0.75))
    ax_tps, ax_lat = axes[0, 0], axes[1, 0]
    log_lat = False
    for i, s in enumerate(sweeps):
        side = "AB"[i]
        style = "-" if i == 0 else "--"
        xs = [p.value for p in s.points]
        who = plots._plain(s.name)
        for ax, key, color, label in (
                (ax_tps, "tps", ("#1f77b4", "#d62728")[i], who),
                (ax_lat, "p50", ("#1f77b4", "#d62728")[i], f"{who}: p50"),
                (ax_lat, "p99", ("#ff7f0e", "#9467bd")[i], f"{who}: p99")):
            vals = s.series(key)
            if key != "tps":
                log_lat = log_lat or any(v is not None and v > 0 for v in vals)
            ax.plot(xs, plots._nan(vals), style, marker="o", color=color, label=label,
                    gid=f"sweep-{key}-{side}")
            # with trials: the range of the point's trials
            bars = [(x, v, r) for x, v, r, p in zip(xs, vals, s.ranges(key), s.points, strict=True)
                    if v is not None and r is not None and len(p.config.labels) > 1]
            if bars:
                ax.errorbar([b[0] for b in bars], [b[1] for b in bars],
                            yerr=[[b[1] - b[2][0] for b in bars], [b[2][1] - b[1] for b in bars]],
                            fmt="none", ecolor=color, elinewidth=0.9, capsize=3)
        ax_w = axes[2 + i, 0]
        stacked = [[v or 0.0 for v in s.series(c)] for c in classes]
        if stacked:
            polys = ax_w.stackplot(xs, stacked, labels=classes, alpha=0.8,
                                   colors=[plots.PALETTE[_CLASS_NAMES.index(c)] for c in classes])
            for c, poly in zip(classes, polys, strict=True):
                poly.set_gid(f"sweep-waits-{side}-{c}")
        ax_w.plot(xs, plots._nan(s.series("sessions")), ":", marker="o", color="#222222",
                  linewidth=0.9, label="all (DB time)", gid=f"sweep-sessions-{side}")
        ax_w.set_ylim(bottom=0)
        ax_w.set_title(plots._plain(f"{s.name}: average active sessions by wait class"), loc="left")
    ax_tps.set_title("pgbench tps", loc="left")
    ax_tps.set_ylim(bottom=0)
    ax_tps.yaxis.set_major_formatter(plots._fmt("1/s"))
    ax_lat.set_title("latency p50 and p99 (ms, log)", loc="left")
    if log_lat:
        # ticks at 1, 2, 5 times a power of 10, labelled as numbers (the
        # default labels are mathtext, which the pictures do not parse)
        ax_lat.set_yscale("log")
        ax_lat.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax_lat.yaxis.set_major_formatter(plots._fmt("ms"))
        ax_lat.yaxis.set_minor_formatter(NullFormatter())
    for ax in axes[:, 0]:
        _x_axis(ax, sweeps)
        ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False)
    if len(sweeps) > 1:         # one scale for both sweeps' sessions
        top = max(max(p.numbers["sessions"] or 0.0, sum(p.numbers[c] or 0.0 for c in classes))
                  for s in sweeps for p in s.points)
        for ax in axes[2:, 0]:
            ax.set_ylim(0, top * 1.05 if top > 0 else 1)
    title = f"sweep {sweeps[0].name}" + (f" vs {sweeps[1].name}" if len(sweeps) > 1 else "")
    fig.suptitle(plots._plain(title), x=0.01, ha="left", fontsize=11, fontweight="bold")
    return fig


def data(sweeps: Sequence[Sweep]) -> dict[str, Any]:
    """What the page embeds (as JSON, element #sweep-data): every sweep's
    points with their runs and numbers."""
    return {"sweeps": [{"name": s.name, "var": s.var,
                        "points": [{"value": int(p.value) if p.value.is_integer() else p.value,
                                    "config": p.config.name, "runs": p.config.labels,
                                    **p.numbers, "ranges": p.ranges} for p in s.points]}
                       for s in sweeps],
            "classes": [c for c, _ in CLASSES], "generated": datetime.now(UTC).isoformat(timespec="seconds")}


def _html_table(sw: Sweep) -> str:
    e = _html.escape
    head = [UNIT[sw.var], "runs", "tps", "p50 ms", "p99 ms", "sessions", *[c for c, _ in CLASSES]]
    out = [f"<h2>{e(sw.name)}</h2>", '<table class="t">',
           "<tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>"]
    for p in sw.points:
        g = p.numbers.get
        cells = [p.text, ", ".join(p.config.labels), text.num(g("tps")), text.num(g("p50")),
                 text.num(g("p99")), text.num(g("sessions")), *[text.num(g(c)) for c, _ in CLASSES]]
        out.append("<tr>" + "".join(f'<td class="txt">{e(c)}</td>' if i == 1 else f"<td>{e(c)}</td>"
                                    for i, c in enumerate(cells)) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def page(sweeps: Sequence[Sweep], svg: bytes) -> str:
    """index.html: the figure (its SVG, inline as an image), one table per
    sweep and the data as JSON; every text from the database escaped."""
    from pg_chronicle import html as page_html
    e = _html.escape
    title = f"pg_chronicle sweep: {sweeps[0].name}" + (f" vs {sweeps[1].name}" if len(sweeps) > 1 else "")
    many = any(len(p.config.labels) > 1 for s in sweeps for p in s.points)
    about = ("One point per value of " + sweeps[0].var + ": pgbench's tps and latency percentiles "
             "(nearest rank) from its per-transaction log, the average number of active sessions "
             "(DB time per second) and its split by wait class from the wait sampler, all from "
             "chronicle.load_profile() of each run" + ("; with trials, each number is the median "
                                                      "of the point's trials" if many else "")
             + ". The pictures: sweep.png, sweep.svg.")
    img = base64.b64encode(svg).decode("ascii")
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f"<title>{e(title)}</title>",
        "<style>\n" + page_html.asset("report_assets", "report.css")
        + "\nimg.sweep { max-width: 100%; height: auto; }\n</style>",
        "</head>", "<body>",
        f"<header><h1>{e(title)}</h1></header>",
        '<script type="application/json" id="sweep-data">' + page_html.json_for_html(data(sweeps))
        + "</script>",
        "<main>", "<section>", f'<p class="about">{e(about)}</p>',
        f'<img class="sweep" alt="{e(title)}" src="data:image/svg+xml;base64,{img}">',
        "</section>",
        *[f"<section>\n{_html_table(s)}\n</section>" for s in sweeps],
        "</main>", "</body>", "</html>", ""])


def default_dir(name: str) -> pathlib.Path:
    """sweep-report's folder when no -o is given: ./sweep-NAME (other
    characters than letters, digits and -_.= as _)."""
    return pathlib.Path("sweep-" + "".join(ch if ch.isalnum() or ch in "-_.=" else "_" for ch in name))


def write(sweeps: Sequence[Sweep], outdir: pathlib.Path) -> pathlib.Path:
    """DIR/sweep.png, DIR/sweep.svg and DIR/index.html; the path of index.html."""
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ClientError(f"cannot create the output folder {outdir}: {exc.strerror}") from exc
    fig = figure(sweeps)
    import matplotlib.pyplot as plt
    try:
        for ext in ("png", "svg"):
            fig.savefig(outdir / f"{FIGURE}.{ext}", format=ext)
    finally:
        plt.close(fig)
    index = outdir / "index.html"
    index.write_text(page(sweeps, (outdir / f"{FIGURE}.svg").read_bytes()), encoding="utf-8")
    return index


def _check_vs(a: Sweep, b: Sweep | None) -> None:
    if b is not None and b.var != a.var:
        raise ClientError(f'sweep "{b.name}" varies {b.var}, "{a.name}" {a.var}: '
                          "only sweeps of one variable overlay")


def show(conninfo: str | None, name: str, vs: str | None, outdir: pathlib.Path | None) -> None:
    """The table of sweep NAME (and of OTHER), and with outdir the pictures and page."""
    with connect(conninfo) as conn:
        a = find(conn, name)
        b = find(conn, vs) if vs is not None else None
    _check_vs(a, b)
    text.echo(table_text(a))
    if b is not None:
        text.echo("\n" + table_text(b))
    if outdir is not None:
        path = write([a] if b is None else [a, b], outdir)
        text.echo(f"report: {path}")


# ---------------------------------------------------------------------------
# Recording

def _writable(outdir: pathlib.Path) -> None:
    """-o DIR checked before anything is recorded."""
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ClientError(f"cannot create the output folder {outdir}: {exc.strerror}") from exc
    if not os.access(outdir, os.W_OK):
        raise ClientError(f"cannot write into the output folder {outdir}")


def main(conninfo: str | None, args: argparse.Namespace, pgbench_args: list[str]) -> int:
    """pg-chronicle sweep: every check first, then one bench run (or N
    trials) per value in the order given, then the table (and the page)."""
    name: str = args.label
    check_name(name)
    var = "clients" if args.clients is not None else "rate"
    values = parse_values(var, args.clients if var == "clients" else args.rate)
    n: int | None = args.trials
    if n is not None and n < 1:
        raise ClientError(f"--trials wants 1 or more, got {n}")
    check_pgbench_args(var, pgbench_args)
    bench.find_pgbench(args.pgbench)
    bench.pgbench_env(conninfo)
    if args.vs is not None and args.vs == name:
        raise ClientError("--vs names the sweep being recorded: give an earlier sweep")
    with connect(conninfo) as conn:
        old = exists(conn, name)
        if old:
            raise ClientError(f'sweep "{name}" exists already (runs {", ".join(old[:3])}'
                              + (", ..." if len(old) > 3 else "") + "): choose another label")
        for v in values:
            trials.check_new_labels(conn, point_label(name, var, v), trials=n is not None)
        other = find(conn, args.vs) if args.vs is not None else None
    if other is not None and other.var != var:
        raise ClientError(f'sweep "{other.name}" varies {other.var}, this one {var}: '
                          "only sweeps of one variable overlay")
    if args.output is not None:
        _writable(args.output)

    rc = 0
    failure: ClientError | None = None
    for i, v in enumerate(values):
        label = point_label(name, var, v)
        text.echo(f"pg-chronicle: sweep {name}: point {i + 1} of {len(values)}, {var} = {value_text(v)}",
                  file=sys.stderr, flush=True)
        ns = argparse.Namespace(label=label, trials=n, meta=args.meta, pgbench=args.pgbench,
                                keep_logs=None, report=None, vs=None,
                                warmup=getattr(args, "warmup", None),
                                archive=getattr(args, "archive", None))
        extra = {"tool": "pg-chronicle sweep", "sweep": name, "sweep_var": var,
                 "sweep_value": int(v) if v.is_integer() else v}
        try:
            rc = bench.main(conninfo, ns, point_args(var, v, pgbench_args), extra_meta=extra)
        except ClientError as exc:
            failure, rc = exc, exc.exit_code
        if rc != 0:
            if i + 1 < len(values):
                rest = ", ".join(value_text(x) for x in values[i + 1:])
                text.echo(f"pg-chronicle: sweep {name} stopped at {var} = {value_text(v)}"
                          + (" (interrupted)" if rc == EXIT_INTERRUPTED else "")
                          + f": {var} = {rest} not recorded", file=sys.stderr)
            break
    with connect(conninfo) as conn:
        if failure is not None and not exists(conn, name):
            raise failure
        sw = find(conn, name)
        b = find(conn, args.vs) if args.vs is not None else None
    text.echo("\n" + table_text(sw), flush=True)
    if args.output is not None:
        path = write([sw] if b is None else [sw, b], args.output)
        text.echo(f"report: {path}")
    if failure is not None:
        raise failure
    return rc
