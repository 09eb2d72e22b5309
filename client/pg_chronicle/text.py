"""Terminal text: aligned tables, human-readable numbers, and the one door
to the terminal (echo), which shows control characters as escapes."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from datetime import date
from typing import Any, TextIO

# C0 (tab and newline too), DEL and C1: what a terminal may act on (ESC
# starts a sequence, 0x9b is a CSI of its own)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def visible(s: str) -> str:
    """s with every control character shown as an escape (ESC as \\x1b):
    text from the database (labels, meta, settings, the environment, server
    messages) can hold any character, and a terminal acts on some."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", s)


def echo(s: str = "", file: TextIO | None = None, flush: bool = False) -> None:
    """Prints s, every line through visible(): everything the client writes
    to the terminal goes through here."""
    print("\n".join(visible(line) for line in s.split("\n")),
          file=sys.stdout if file is None else file, flush=flush)


def when(value: date | str, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    """A timestamp as fmt says; one Python cannot hold (infinity, -infinity,
    BC, after year 9999) comes as the server's text (db.ADAPTERS), shown
    as it is."""
    return value if isinstance(value, str) else value.strftime(fmt)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]],
          right: Sequence[bool] | None = None) -> str:
    """An aligned table with a header line and a rule; None shows as ''.
    Columns are right-aligned where right[i] (default: numbers are)."""
    cells = [[("" if v is None else visible(str(v))) for v in r] for r in rows]
    if right is None:
        right = [bool(rows) and all(isinstance(r[i], (int, float)) or r[i] is None
                                    for r in rows) for i in range(len(headers))]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(vals: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if right[i] else v.ljust(w)
                         for i, (v, w) in enumerate(zip(vals, widths, strict=True))).rstrip()

    out = [line(list(headers)), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    return "\n".join(out)


def num(value: float | int | None, digits: int = 3) -> str:
    """A number with about `digits` significant digits, no exponent for
    everyday magnitudes; '-' for unknown."""
    if value is None:
        return "-"
    v = float(value)
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 10 ** digits:
        return f"{v:,.0f}"
    decimals = max(0, digits - 1 - int(_floor_log10(a)))
    return f"{v:.{decimals}f}"


def _floor_log10(a: float) -> float:
    import math
    return math.floor(math.log10(a))


def nbytes(value: float | int | None, suffix: str = "") -> str:
    """Bytes in B, kB, MB, GB (powers of 1024, as PostgreSQL prints them)."""
    if value is None:
        return "-"
    v = float(value)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(v) < 1024 or unit == "TB":
            return f"{num(v)} {unit}{suffix}"
        v /= 1024
    raise AssertionError("unreachable")


def pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = float(seconds)
    if s < 120:
        return f"{s:.1f} s"
    m, s = divmod(round(s), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d} min"
