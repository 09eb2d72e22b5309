"""pg-chronicle: the client of the pg_chronicle extension.

Records a pgbench run in one command (bench), lists runs (runs), compares two
(compare) and writes a report with plots (report).  See docs/client.md.
"""

__version__ = "0.3.0"
