"""The pictures of a report's panels drawn in processes, as the panels are
ready: those without a time chart (tables: the load profile, the
statements, the settings) while the other queries still run, the rest
once every query is done.  matplotlib is imported in the processes
(pg_chronicle.plots), not here: the queries do not wait for it.

    d = Drawer(outdir)          (before any thread: the processes fork here)
    d.submit(panel, meta)       a final panel
    failed = d.finish(meta, every_panel)   the others; {id: why} of failures
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.pool
import os
import pathlib
from typing import Any

from pg_chronicle.model import Meta, Panel

# the processes that draw: one per CPU, at most 4 (matplotlib renders in one
# thread)
MAX_PROCESSES = 4


def _draw(args: tuple[Panel, Meta, pathlib.Path]) -> tuple[str, str | None]:
    from pg_chronicle import plots  # matplotlib: imported in the process that draws
    return plots.write_panel(args)


def _size(p: Panel) -> int:
    return sum(len(c["x"]) * len(c["series"]) for c in p["charts"])


def shaded(meta: Meta, panel_list: list[Panel]) -> list[Panel]:
    """The panels as drawn: in a report of one run, every time chart shades
    the slowest intervals that stand out (the marked rows of the slowest
    panel's table; the others are there for reference)."""
    slow = [(s0, s1) for p in panel_list for t in p["tables"] if t["id"] == "slowest.table"
            and t.get("x") for i, (s0, s1) in enumerate(zip(t["x_start"], t["x"], strict=True))
            if i in t["marked"]] if not meta.get("vs") else []
    if not slow:
        return panel_list
    return [{**p, "charts": [{**c, "slow": slow} if c["kind"] == "time" else c for c in p["charts"]]}
            for p in panel_list]


class Drawer:
    """Draws panels into outdir in up to processes processes (default: one
    per CPU, at most MAX_PROCESSES; 1: in this process, at finish())."""

    def __init__(self, outdir: pathlib.Path, processes: int | None = None) -> None:
        self.outdir = outdir
        n = processes or min(MAX_PROCESSES, os.cpu_count() or 1)
        self.pool: multiprocessing.pool.Pool | None = (
            multiprocessing.get_context("fork").Pool(n) if n > 1 else None)
        self.done: dict[str, Any] = {}

    def submit(self, p: Panel, meta: Meta) -> None:
        """Draws p (final: nothing of it changes after) now, in a process."""
        args = (p, meta, self.outdir)
        self.done[p["id"]] = self.pool.apply_async(_draw, (args,)) if self.pool else args

    def finish(self, meta: Meta, panel_list: list[Panel]) -> dict[str, str]:
        """Draws the panels of panel_list not submitted (the biggest first,
        so that the processes finish together), waits for every picture;
        returns the panels that could not be drawn, each with why."""
        rest = sorted((p for p in shaded(meta, panel_list) if p["id"] not in self.done),
                      key=lambda p: -_size(p))
        for p in rest:
            self.submit(p, meta)
        failed: dict[str, str] = {}
        try:
            for r in self.done.values():
                pid, why = r.get() if self.pool else _draw(r)
                if why is not None:
                    failed[pid] = why
        finally:
            self.close()
        return failed

    def close(self) -> None:
        """Ends the processes (what they draw is left unfinished)."""
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
            self.pool = None


def write_all(meta: Meta, panel_list: list[Panel], outdir: pathlib.Path,
              processes: int | None = None) -> dict[str, str]:
    """<panel id>.png and .svg for every panel; returns the panels that
    could not be drawn, each with why (the others are drawn all the same).
    The panels are drawn by one process per CPU (at most 4): matplotlib
    renders in one thread (a report starts its Drawer before its queries)."""
    return Drawer(outdir, processes).finish(meta, panel_list)
