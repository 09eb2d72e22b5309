"""The report page: one self-contained index.html (uPlot's JS and CSS inlined,
the data as inline JSON, no network).

The page is report_assets/page.html with its @@NAME@@ placeholders filled:
the title, the data (model.PageData as JSON), uPlot (vendor/) and the
page's own stylesheet and script (report_assets/report.css, report.js).
"""

from __future__ import annotations

import html as _html
import json
import math
import re
from functools import cache
from importlib import resources
from typing import Any, cast

from pg_chronicle.model import Chart, Meta, PageChart, PageData, PagePanel, Panel, Value


@cache
def asset(folder: str, name: str) -> str:
    """A text file of the package (vendor/ or report_assets/), read once."""
    return resources.files("pg_chronicle").joinpath(folder, name).read_text("utf-8")


def _compact(v: Value) -> Value:
    """A value as the page needs it: 5 significant digits, integers as
    integers, None for what JSON cannot hold (NaN, infinities)."""
    if v is None or isinstance(v, (bool, int)):
        return v
    if math.isnan(v) or math.isinf(v):
        return None
    if v.is_integer() and abs(v) < 1e15:
        return int(v)
    return float(f"{v:.5g}")


def compact_chart(c: Chart) -> Chart:
    """c with its values compacted and a time chart's x (epoch seconds) to
    the millisecond. A distribution's x, bin edges in ms, stays exact: to
    the microsecond, a bin's upper edge could fall below the fastest
    transaction in it."""
    x = [round(v, 3) for v in c["x"]] if c["kind"] == "time" else c["x"]
    return {**c, "x": x,
            "series": [{**s, "values": [_compact(v) for v in s["values"]]} for s in c["series"]]}


# In JSON inside the page, the characters HTML acts on as JSON escapes: "<"
# ("</script>" ends the element, "<!--<script" makes the parser skip past
# the next "</script>"), ">", "&", and the line separators of old JavaScript.
_HTML_UNSAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                              "\u2028": "\\u2028", "\u2029": "\\u2029"})


def json_for_html(obj: Any) -> str:
    """obj as JSON that can stand inside a <script> element of the page,
    whatever its strings hold: the only way JSON goes into the page."""
    s = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, default=str)
    return s.translate(_HTML_UNSAFE)


def fill(template: str, values: dict[str, str]) -> str:
    """template with each @@NAME@@ replaced by values[NAME], in one pass:
    a value holding "@@NAME@@" (a run label, a statement) stays as it is."""
    return re.sub(r"@@([A-Z_]+)@@", lambda m: values[m.group(1)], template)


def page_data(meta: Meta, panels: list[Panel]) -> PageData:
    """What the page embeds: the panels with their values compacted and the
    time charts' shared x values (the window's interval ends) stored once in
    "xs", each chart naming its array by index ("xref")."""
    xs: list[list[float]] = []
    index: dict[tuple[float, ...], int] = {}
    out: list[PagePanel] = []
    for p in panels:
        charts: list[PageChart] = []
        for c in map(compact_chart, p["charts"]):
            key = tuple(c["x"])
            if key not in index:
                index[key] = len(xs)
                xs.append(c["x"])
            # the chart's keys in their order, x replaced by xref
            pc = cast(PageChart, {k: v for k, v in c.items() if k != "x"})
            pc["xref"] = index[key]
            charts.append(pc)
        out.append({**p, "charts": charts})
    return {"meta": meta, "xs": xs, "panels": out}


def render(meta: Meta, panels: list[Panel]) -> str:
    """index.html of the report."""
    title = f"pg_chronicle report: {meta['run']}" + (f" vs {meta['vs']}" if meta.get("vs") else "")
    return fill(asset("report_assets", "page.html"), {
        "TITLE": _html.escape(title),
        "UPLOT_CSS": asset("vendor", "uPlot.min.css"),
        "REPORT_CSS": asset("report_assets", "report.css"),
        "DATA": json_for_html(page_data(meta, panels)),
        "UPLOT_JS": asset("vendor", "uPlot.iife.min.js"),
        "APP_JS": asset("report_assets", "report.js"),
    })
