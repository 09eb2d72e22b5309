"""The shapes the report passes around: from panels.py (the data of each
panel) through report.py (a comparison merges two runs' panels) to
html.py (the page's inline JSON, read by report_assets/report.js) and
plots.py (the pictures).

They are TypedDicts, not classes: the page's JSON is exactly these dicts
(json.dumps of them), and a key that is not required is absent when it has
nothing to say (a panel's "picture_error" only when its picture failed).
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

# A table cell as the page shows it: text, a number (int or float;
# formatted by the page, the exact value in its tooltip) or nothing.
Cell = str | float | None

# A point of a series (int or float): None where the source recorded
# nothing (a gap, never a zero).
Value = float | None

# chronicle.marks(): a mark made by a script (chronicle.mark), a
# checkpoint's start or end, a recording that starts (restart or gap), an
# interval twice as long as the window's median (the collector was late), a
# stall (no pgbench transaction ended while the run was active), a VACUUM's
# or an ANALYZE's start or end (manual or autovacuum, any database); on the
# latency distribution, a run's p50 and p99
MarkKind = Literal["mark", "checkpoint_start", "checkpoint_end", "recording_start", "long_interval",
                   "stall", "vacuum_start", "vacuum_end", "analyze_start", "analyze_end", "p50", "p99"]


class Mark(TypedDict):
    """A vertical line on every time chart: an event of the window."""

    x: float            # epoch seconds (seconds since the run's start in a comparison; ms
                        # on a latency distribution)
    label: str
    kind: MarkKind


class Series(TypedDict):
    label: str
    values: list[Value]  # one per x, None where nothing was recorded
    run: str             # the run it belongs to (colours and dashes in a comparison)


class _ChartBase(TypedDict):
    id: str
    title: str
    unit: str           # "bytes/s", "bytes", "1/s", "ms", "%", "fraction", ...
    kind: Literal["time", "distribution"]
    series: list[Series]
    stack: bool
    log_y: bool
    log_x: bool
    marks: list[Mark]
    x_unit: NotRequired[str]    # distribution charts: "ms"
    x_min: NotRequired[float]   # distribution charts: the lowest bin's lower edge
    y_max: NotRequired[float]   # a comparison's pair of stacked charts: one y scale for both


class Chart(_ChartBase):
    x: list[float]      # time: interval ends (epoch s); distribution: bin upper edges
    slow: NotRequired[list[tuple[float, float]]]  # pictures only: shaded (start, end)


class PageChart(_ChartBase):
    """A chart as the page embeds it: its x values are PageData.xs[xref]."""

    xref: int


class Table(TypedDict):
    id: str
    title: str
    columns: list[str]
    rows: list[list[Cell]]
    marked: list[int]               # indexes of the rows drawn red
    note: str | None
    fold: NotRequired[bool]         # long tables folded on the page, left out of pictures
    x: NotRequired[list[float]]     # slowest.table: each row's interval end (epoch s)
    x_start: NotRequired[list[float]]  # and start


class _PanelBase(TypedDict):
    id: str
    title: str
    about: str
    tables: list[Table]
    empty: str | None               # why the panel has nothing to show
    note: NotRequired[str | None]
    picture_error: NotRequired[str]  # why its PNG/SVG could not be drawn


class Panel(_PanelBase):
    charts: list[Chart]


class PagePanel(_PanelBase):
    charts: list[PageChart]


# The report's header: label, window, server, headline numbers (pairs of
# name and formatted value), and B's with --vs.  "from" is a keyword.
Meta = TypedDict("Meta", {
    "run": str,
    "vs": str | None,
    "from": str,
    "to": str,
    "intervals": int,
    "server_version": str | None,
    "generated": str,
    "headline": list[list[str]],
    "vs_from": NotRequired[str],
    "vs_to": NotRequired[str],
    "vs_intervals": NotRequired[int],
    "vs_server_version": NotRequired[str | None],
    "vs_headline": NotRequired[list[list[str]]],
    # the warm-up the time charts shade: (start, end), epoch seconds (seconds
    # since the run's start in a comparison); B's
    "warmup": NotRequired[list[float]],
    "vs_warmup": NotRequired[list[float]],
})


class PageData(TypedDict):
    """What index.html embeds: the charts' x arrays stored once in xs, each
    chart naming its array by index (xref) instead of holding x."""

    meta: Meta
    xs: list[list[float]]
    panels: list[PagePanel]
