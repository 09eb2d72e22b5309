"""pg-chronicle bench: pgbench as a recorded run."""

from __future__ import annotations

import argparse
from typing import Any


def main(conninfo: str | None, args: argparse.Namespace, pgbench_args: list[str]) -> int:
    raise NotImplementedError
