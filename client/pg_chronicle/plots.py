"""One PNG and one SVG per panel (matplotlib, Agg backend), for slides and papers.

A line with more points than the axes has pixels is drawn as its min/max
envelope per pixel column (never a mean, so a one-second spike stays
visible); stacked charts are drawn at full resolution.
"""

from __future__ import annotations

import math
import pathlib
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter, LogLocator, MultipleLocator, NullFormatter

from pg_chronicle import text
from pg_chronicle.model import Cell, Chart, Mark, Meta, Panel, Value

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#ad494a", "#637939", "#7b4173"]
WIDTH_IN, DPI = 12.0, 100
CHART_IN = 2.6          # height of one chart with its labels
# columns of the envelope: about the axes' width in pixels at DPI
ENVELOPE_COLUMNS = 1000

# every text as it is: no mathtext between two "$" (statements hold $1, $2),
# no LaTeX; glyphs not hinted: matplotlib renders text a glyph at a time,
# and hinting each took half of a table panel's PNG (a character's advance
# is then the font's own, in the PNG as in the SVG)
plt.rcParams.update({"font.size": 9, "axes.titlesize": 10, "axes.grid": True, "grid.alpha": 0.3,
                     "svg.fonttype": "none", "legend.fontsize": 7.5,
                     "text.parse_math": False, "text.usetex": False, "text.hinting": "no_hinting"})



# how each kind of mark (chronicle.marks) is drawn: colour, line style, width
# (as report.js draws them on the page)
MARK_STYLE: dict[str, tuple[str, str, float]] = {
    "mark": ("#803caa", "-", 1.1),
    "checkpoint_start": ("#555555", "--", 0.7),
    "checkpoint_end": ("#111111", "-", 0.7),
    "recording_start": ("#aa1414", ":", 0.9),
    "long_interval": ("#e6780a", "-.", 0.9),
    "stall": ("#d62728", "-", 2.0),
    "vacuum_start": ("#2ca02c", "--", 0.9),
    "vacuum_end": ("#1a6e1a", "-", 0.9),
    "analyze_start": ("#1f9bb4", "--", 0.9),
    "analyze_end": ("#12687a", "-", 0.9),
    "p50": ("#282828", "--", 0.8),
    "p99": ("#282828", "-", 1.1),
}

def byte_step(lo: float, hi: float, ticks: int = 5) -> float:
    """The tick step of a byte axis from lo to hi: a power of two (so that
    the labels, in units of 1024, read 4 MB, 8 MB, 16 MB and not 4.77, 9.54,
    19.1), about `ticks` ticks over the range."""
    span = max(hi - lo, 1.0)
    return float(2 ** max(0, math.ceil(math.log2(span / ticks))))


def _plain(v: object) -> str:
    """A string as a picture shows it, for every text of a picture: control
    characters as escapes (text.visible()), and a leading "_" kept in the legend
    (which leaves out labels starting with "_")."""
    s = text.visible(str(v))
    return " " + s if s.startswith("_") else s


X = TypeVar("X")


def envelope(x: Sequence[X], y: Sequence[Value], columns: int = ENVELOPE_COLUMNS
             ) -> tuple[list[X], list[float], list[float]] | None:
    """(xs, mins, maxs) per column when there are more points than columns,
    None values left out (NaN for a column without any); None when the
    series fits as it is.  xs: the middle point's x of each column."""
    n = len(x)
    if n <= columns:
        return None
    xs: list[X] = []
    lo: list[float] = []
    hi: list[float] = []
    for c in range(columns):
        a, b = c * n // columns, (c + 1) * n // columns
        vals = [v for v in y[a:b] if v is not None]
        xs.append(x[(a + b - 1) // 2])
        if vals:
            lo.append(min(vals))
            hi.append(max(vals))
        else:
            lo.append(math.nan)
            hi.append(math.nan)
    return xs, lo, hi


def _fmt(unit: str) -> FuncFormatter:
    """The y axis' tick labels of a unit: bytes in B/kB/MB (powers of 1024),
    other numbers with k and M."""
    def f(v: float, _pos: int | None = None) -> str:
        a = abs(v)
        if unit in ("bytes/s", "bytes"):
            for u in ("B", "kB", "MB", "GB", "TB"):
                if a < 1024 or u == "TB":
                    s = f"{v:.0f}" if a >= 100 or u == "B" else f"{v:.1f}"
                    return f"{s} {u}" + ("/s" if unit == "bytes/s" else "")
                v /= 1024
                a /= 1024
        if a >= 1e6:
            return f"{v / 1e6:.1f}M"
        if a >= 1e4:
            return f"{v / 1e3:.0f}k"
        return f"{v:g}"
    return FuncFormatter(f)


def _nan(vals: Sequence[Value]) -> list[float]:
    return [math.nan if v is None else v for v in vals]


def _draw_marks(ax: Axes, marks: Sequence[Mark], dates: bool) -> None:
    """The marks as vertical lines over the whole height, one collection per
    style (a Line2D per mark was a third of a time chart's drawing: an hour
    has dozens of checkpoints), not counted in the axes' limits; a script's
    own marks with their text beside the line.  dates: x in epoch seconds
    on a date axis."""
    lines: dict[tuple[str, str, float], list[float]] = {}
    for m in marks:
        x: Any = datetime.fromtimestamp(m["x"], UTC) if dates else m["x"]
        style = MARK_STYLE.get(m["kind"], MARK_STYLE["checkpoint_end"])
        lines.setdefault(style, []).append(float(mdates.date2num(x)) if dates else float(x))
        if m["kind"] == "mark":
            ax.annotate(_plain(m["label"][:40]), xy=(x, 1.0), xycoords=("data", "axes fraction"),
                        xytext=(2, -2), textcoords="offset points", rotation=90, va="top",
                        fontsize=6.5, color=style[0], clip_on=True)
    for (color, linestyle, width), xs in lines.items():
        ax.add_collection(LineCollection([[(x, 0.0), (x, 1.0)] for x in xs],
                                         transform=ax.get_xaxis_transform(), colors=color,
                                         linestyles=linestyle, linewidths=width, alpha=0.7),
                          autolim=False)


def _draw_chart(ax: Axes, chart: Chart, meta: Meta) -> None:
    time_chart = chart["kind"] == "time"
    compare = bool(meta.get("vs"))
    # datetimes on a time axis, else floats: Any, as matplotlib takes
    # datetimes (its units converter) where its stubs say numbers
    xs: list[Any]
    if time_chart and not compare:
        xs = [datetime.fromtimestamp(x, UTC) for x in chart["x"]]
    else:
        xs = list(chart["x"])
    series = chart["series"]
    if chart.get("stack"):
        acc = [0.0] * len(xs)
        for i, s in enumerate(series):
            lower = list(acc)
            acc = [a + (v or 0.0) for a, v in zip(acc, s["values"], strict=True)]
            # every interval drawn; in the SVG as pixels when there are more
            # intervals than pixels (thousands of polygon vertices otherwise)
            ax.fill_between(xs, lower, acc, color=PALETTE[i % len(PALETTE)], alpha=0.8,
                            linewidth=0, label=_plain(s["label"]),
                            rasterized=len(xs) > ENVELOPE_COLUMNS)
        ax.set_ylim(bottom=0, top=chart["y_max"] * 1.05 if chart.get("y_max") else None)
    else:
        runs = list(dict.fromkeys(s["run"] for s in series))
        for i, s in enumerate(series):
            color = PALETTE[i % len(PALETTE)]
            style = "--" if compare and len(runs) > 1 and s["run"] == runs[-1] and \
                len([t for t in series if t["run"] == s["run"]]) > 1 else "-"
            if compare and all(len([t for t in series if t["run"] == r]) == 1 for r in runs):
                color = ("#1f77b4", "#d62728")[runs.index(s["run"]) % 2]
            # in a comparison, each series has values at its own run's points only
            pts = [(x, v) for x, v in zip(xs, s["values"], strict=True) if v is not None] if compare \
                else list(zip(xs, s["values"], strict=True))
            px = [p[0] for p in pts]
            py = [p[1] for p in pts]
            env = envelope(px, py) if time_chart else None
            if env:
                ex, lo, hi = env
                ax.fill_between(ex, lo, hi, color=color, alpha=0.45, linewidth=0.6,
                                edgecolor=color, label=_plain(s["label"]))
            else:
                ax.plot(px, _nan(py), style, color=color, linewidth=1.0, label=_plain(s["label"]),
                        drawstyle="default")
    _draw_marks(ax, chart.get("marks", []), time_chart and not compare)
    if time_chart:
        # a comparison's split stacks (X, X.vs): each its own run's warm-up
        split_b = compare and chart.get("stack") and chart["id"].endswith(".vs")
        keys = ("warmup", "vs_warmup") if not (compare and chart.get("stack")) else \
            (("vs_warmup",) if split_b else ("warmup",))
        for key in keys:
            wu = meta.get(key)
            if isinstance(wu, list) and len(wu) == 2:
                w0: Any = datetime.fromtimestamp(wu[0], UTC) if not compare else wu[0]
                w1: Any = datetime.fromtimestamp(wu[1], UTC) if not compare else wu[1]
                ax.axvspan(w0, w1, color="#777777", alpha=0.14, linewidth=0)
    for s0, s1 in chart.get("slow", []):
        t0: Any = datetime.fromtimestamp(s0, UTC)
        t1: Any = datetime.fromtimestamp(s1, UTC)
        ax.axvspan(t0, t1,
                   color="#d62728", alpha=0.15, linewidth=0)
    if chart.get("log_y"):
        ax.set_yscale("log")
        # the log axis' own labels are mathtext ("10^2"), which parse_math
        # off would print raw: numbers, as on a linear axis
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(_fmt(chart["unit"]))
        ax.yaxis.set_minor_formatter(NullFormatter())
    else:
        ax.yaxis.set_major_formatter(_fmt(chart["unit"]))
        if chart["unit"] in ("bytes/s", "bytes"):
            ax.yaxis.set_major_locator(MultipleLocator(byte_step(*ax.get_ylim())))
    if chart.get("log_x"):
        ax.set_xscale("log")
        if "x_min" in chart and chart["x"]:
            ax.set_xlim(chart["x_min"], chart["x"][-1])
        # 1, 2, 5 of each decade as plain numbers (a narrow range may hold
        # no power of ten; mathtext labels would print raw)
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(f"latency ({chart.get('x_unit', 'ms')})")
    elif time_chart and not compare:
        ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M:%S", tz=UTC))
        ax.set_xlabel("time (UTC)")
    elif time_chart:
        ax.set_xlabel("seconds since run start")
    ax.set_title(_plain(f"{chart['title']} ({chart['unit']})"), loc="left")
    if len(series) <= 16:
        ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False)


# tables: monospace text, a line a row as the terminal shows the table (no
# text measured: matplotlib's Table measured every cell at every draw, and
# the constrained layout drew again: half of a report's drawing time)
TABLE_FONT = 7.0        # points
TABLE_FONT_MIN = 4.5
TABLE_LINE = 1.45       # line spacing, in lines of the font
TABLE_ROWS = 30         # rows of a table drawn at most
CHAR_W = 0.602          # DejaVu Sans Mono's advance (1233/2048), in ems
MARGIN_IN = 0.15


def _table_lines(panel: Panel) -> int:
    """The lines the tables of a panel take: per table its title, header,
    rule, rows (at most TABLE_ROWS, one line when none) and a blank line."""
    return sum(max(min(len(t["rows"]), TABLE_ROWS), 1) + 4
               for t in panel["tables"] if not t.get("fold"))


def _draw_tables(fig: Figure, panel: Panel, top_in: float) -> None:
    """The tables of a panel from top_in inches below the figure's top:
    each a text of a line a row, as the terminal shows it (text.table():
    numbers right-aligned, a rule under the header), a marked row shaded."""
    w_in, h_in = fig.get_size_inches()
    y = h_in - top_in           # inches from the bottom, the next line's top
    for t in (t for t in panel["tables"] if not t.get("fold")):
        raw = t["rows"][:TABLE_ROWS]
        n = len(t["columns"])
        right = [bool(raw) and all(isinstance(r[i], (int, float)) or r[i] is None for r in raw)
                 for i in range(n)]
        lines = text.table([_plain(c) for c in t["columns"]],
                           [[_cell(v) for v in r] for r in raw] or [["(none)"] + [""] * (n - 1)],
                           right).split("\n")
        chars = max(len(s) for s in lines)
        # smaller to fit the width, down to TABLE_FONT_MIN (then cut at the right)
        font = max(TABLE_FONT_MIN, min(TABLE_FONT, (w_in - 2 * MARGIN_IN) * 72 / ((CHAR_W + 0.05) * chars)))
        line = font * TABLE_LINE / 72
        width = min(chars * CHAR_W * font / 72, w_in - 2 * MARGIN_IN) / w_in
        fig.text(MARGIN_IN / w_in, y / h_in, _plain(t["title"]), va="top", ha="left", fontsize=9)
        y -= 9 * 1.5 / 72
        for i in t.get("marked", []):
            if 0 <= i < len(raw):
                fig.add_artist(Rectangle((MARGIN_IN / w_in, (y - (i + 3) * line) / h_in), width, line / h_in,
                                         transform=fig.transFigure, facecolor="#fde2e1", linewidth=0,
                                         zorder=0))
        fig.text(MARGIN_IN / w_in, y / h_in, "\n".join(lines), va="top", ha="left", family="monospace",
                 fontsize=font, linespacing=TABLE_LINE, clip_on=True)
        y -= (len(lines) + 1.4) * line


def _cell(v: Cell) -> str:
    """A table cell as a picture shows it: 4 significant digits, text cut
    at 90 characters."""
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    s = _plain(v)
    return s if len(s) <= 90 else s[:89] + "…"


def figure(panel: Panel, meta: Meta) -> Figure:
    """The matplotlib figure of one panel."""
    charts = panel["charts"]
    title = f"{panel['title']}: {meta['run']}" + (f" vs {meta['vs']}" if meta.get("vs") else "")
    if charts:
        # margins in inches, fixed: the constrained layout engine cost a third
        # of a report's drawing time; the legends go right of the axes
        h = CHART_IN * len(charts) + 1.1
        fig, axes = plt.subplots(len(charts), 1, figsize=(WIDTH_IN, h), dpi=DPI, squeeze=False)
        fig.subplots_adjust(left=0.8 / WIDTH_IN, right=1 - 2.6 / WIDTH_IN, top=1 - 0.75 / h,
                            bottom=0.45 / h, hspace=0.75 / (CHART_IN - 0.75))
        for ax, c in zip(axes[:, 0], charts, strict=True):
            _draw_chart(ax, c, meta)
    elif panel["tables"]:
        h = max(2.0, _table_lines(panel) * TABLE_FONT * TABLE_LINE / 72 + 0.8)
        fig = plt.figure(figsize=(WIDTH_IN, h), dpi=DPI)
        _draw_tables(fig, panel, 0.55)
    else:
        fig = plt.figure(figsize=(WIDTH_IN, 1.5), dpi=DPI)
        fig.text(0.5, 0.5, _plain(panel.get("empty") or "No data."), ha="center", va="center")
    fig.suptitle(_plain(title), x=0.01, ha="left", fontsize=11, fontweight="bold")
    return fig


def write_panel(args: tuple[Panel, Meta, pathlib.Path]) -> tuple[str, str | None]:
    """Draws one panel: (its id, None), or (its id, why it could not be
    drawn, in one line), and then neither of its files is left."""
    p, meta, outdir = args
    paths = [outdir / f"{p['id']}.{ext}" for ext in ("png", "svg")]
    try:
        fig = figure(p, meta)
        try:
            for path in paths:
                # zlib level 3: of every PNG of a report, 0.6 of level 6's
                # time (the default) and no bigger
                if path.suffix == ".png":
                    fig.savefig(path, format="png", pil_kwargs={"compress_level": 3})
                else:
                    fig.savefig(path, format=path.suffix[1:])
        finally:
            plt.close(fig)
    except Exception as exc:  # noqa: BLE001  whatever it was, the other panels are drawn
        for path in paths:
            path.unlink(missing_ok=True)
        return p["id"], " ".join(f"{type(exc).__name__}: {exc}".split())
    return p["id"], None
