"""The CPU of a report's pictures, panel by panel: every panel of a written
report (its index.html's data, what the page draws) drawn again into PNG and
SVG, one after the other in this one process, by the client tree given.

    python3 bench/report_pictures.py CLIENT_DIR REPORT/index.html OUT_DIR

Prints one JSON line: the seconds of all panels ("total") and of each.  Run
it for two client trees in turns (git archive REV client | tar -x) to compare
two versions of the drawing on the same data.
"""

import json
import pathlib
import re
import sys
import time

client, index, out = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
sys.path.insert(0, client)
page = index.read_text("utf-8")
m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
if m is None:
    sys.exit(f"{index}: no report data")
data = json.loads(m.group(1))
for p in data["panels"]:
    for c in p["charts"]:
        c["x"] = data["xs"][c["xref"]]

import matplotlib.pyplot  # noqa: E402,F401  imported before the clock, as the report's processes do

from pg_chronicle import plots  # noqa: E402

out.mkdir(parents=True, exist_ok=True)
per: dict[str, float] = {}
t0 = time.perf_counter()
for p in data["panels"]:
    t = time.perf_counter()
    pid, why = plots.write_panel((p, data["meta"], out))
    if why is not None:
        sys.exit(f"panel {pid}: {why}")
    per[pid] = round(time.perf_counter() - t, 3)
print(json.dumps({"total": round(time.perf_counter() - t0, 3), **per}))
