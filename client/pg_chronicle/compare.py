"""pg-chronicle compare A B: two runs side by side in the terminal.

Three tables, each from a function of the extension (so psql users get the
same answers): the load profile per second and per transaction with the
ratio B/A (chronicle.compare_load_profile; '*' marks a difference beyond
10 %), the settings that differ (chronicle.compare_settings) and the
environment that differs (chronicle.compare_environment).
"""

from __future__ import annotations

from typing import Any

import psycopg

from pg_chronicle import text
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
    run_window(conn, a)
    run_window(conn, b)
    profile = query(conn, "SELECT * FROM chronicle.compare_load_profile(%s, %s)", (a, b))
    settings = query(conn, "SELECT name, value_a, value_b FROM chronicle.compare_settings(%s, %s)",
                     (a, b))
    env = query(conn, "SELECT name, value_a, value_b FROM chronicle.compare_environment(%s, %s)",
                (a, b))
    out = [f"load profile: A = {a}, B = {b} (* = B/A differs from 1 by more than 10 %)",
           load_profile_table(profile), ""]
    if settings:
        out += ["settings that differ:", _pairs_table(settings, "A", "B"), ""]
    else:
        out += ["settings: no difference", ""]
    if env:
        out += ["environment that differs:", _pairs_table(env, "A", "B")]
    else:
        out += ["environment: no difference"]
    return "\n".join(out)
