"""pg-chronicle compare A B: two runs side by side in the terminal.

Three tables, each from a function of the extension (so psql users get the
same answers): the load profile per second and per transaction with the
ratio B/A (chronicle.compare_load_profile; '*' marks a difference beyond
10 %), the settings that differ (chronicle.compare_settings) and the
environment that differs (chronicle.compare_environment).

When A or B names a configuration recorded as trials (runs A#1, A#2, ...;
trials.py), the first table is the trials' instead: per metric the median
of each configuration's trials, their range, the ratio of the medians, the
interval of the pairwise ratios and the verdict; the settings and the
environment are those of the trial of each with the median tps.
"""

from __future__ import annotations

from typing import Any

import psycopg

from pg_chronicle import text, trials
from pg_chronicle.db import query, run_window


def _value(v: float | None, unit: str | None) -> str:
    if v is None:
        return "-"
    if unit is not None and unit.startswith("bytes"):
        return text.nbytes(v)
    return text.num(v)


def _ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}"


def load_profile_table(rows: list[dict[str, Any]]) -> str:
    return text.table(
        ["metric", "unit", "A per s", "B per s", "A per tx", "B per tx", "B/A", ""],
        [[r["metric"], r["unit"] or "",
          _value(r["a_per_second"], r["unit"]), _value(r["b_per_second"], r["unit"]),
          _value(r["a_per_transaction"], r["unit"]), _value(r["b_per_transaction"], r["unit"]),
          _ratio(r["ratio"]), "*" if r["marked"] else ""] for r in rows],
        right=[False, False, True, True, True, True, True, False])


def _pairs_table(rows: list[dict[str, Any]], a: str, b: str) -> str:
    return text.table(["name", a, b],
                      [[r["name"], "-" if r["value_a"] is None else r["value_a"],
                        "-" if r["value_b"] is None else r["value_b"]] for r in rows],
                      right=[False, False, False])


def compare_text(conn: psycopg.Connection[Any], a: str, b: str) -> str:
    ca, cb = trials.resolve(conn, a), trials.resolve(conn, b)
    for c in (ca, cb):
        if not c.trials:
            run_window(conn, c.name)
    if ca.trials or cb.trials:
        table, a, b = trials.compare_text(conn, ca, cb)
        out = [table, ""]
        what = f" (between {a} and {b}, the trials with the median tps)"
    else:
        profile = query(conn, "SELECT * FROM chronicle.compare_load_profile(%s, %s)", (a, b))
        out = [f"load profile: A = {a}, B = {b} (* = B/A differs from 1 by more than 10 %)",
               load_profile_table(profile), ""]
        what = ""
    settings = query(conn, "SELECT name, value_a, value_b FROM chronicle.compare_settings(%s, %s)",
                     (a, b))
    env = query(conn, "SELECT name, value_a, value_b FROM chronicle.compare_environment(%s, %s)",
                (a, b))
    if settings:
        out += [f"settings that differ{what}:", _pairs_table(settings, "A", "B"), ""]
    else:
        out += [f"settings: no difference{what}", ""]
    if env:
        out += [f"environment that differs{what}:", _pairs_table(env, "A", "B")]
    else:
        out += [f"environment: no difference{what}"]
    if not (ca.trials or cb.trials):
        out += ["", "one run each: no spread is known (pg-chronicle bench --trials N records "
                    "a configuration's trials, compared with an interval)"]
    return "\n".join(out)
