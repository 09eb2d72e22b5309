"""pg-chronicle compare A B: the load profile, settings and environment of
two runs side by side, in the terminal."""

from __future__ import annotations

from typing import Any

import psycopg

from pg_chronicle import text
from pg_chronicle.db import query, run_window


def compare_text(conn: psycopg.Connection[Any], a: str, b: str, threshold: float = 0.10) -> str:
    raise NotImplementedError
