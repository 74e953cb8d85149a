"""Each statement of the columnar engine timed in a child process of a benchmark (`bench_logs.py
--statements`): `TIMER` and `REPORT` go into the child's code around the command, `statements_of` reads
what `REPORT` printed on the child's stderr."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["REPORT", "STATEMENT", "TIMER", "Statement", "statements_of"]

#: Put in the child before the command: every statement the engine runs is timed (the engine's calls
#: wrapped). `REPORT`, put after it (it reads the child's ``start`` and ``elapsed``), prints on stderr one
#: line per statement (its wall time and the time since the one before, which is Python's: the engine runs
#: nothing between statements), then the time after the last.
TIMER = """
from pytest_embeval.files import columnar
statements = []
def timed(method):
    def run(self, sql, *args, **kwargs):
        begun = time.perf_counter()
        try:
            return method(self, sql, *args, **kwargs)
        finally:
            statements.append((begun, time.perf_counter(), " ".join(sql.split())))
    return run
for name in ("execute", "rows", "arrays", "named_rows"):
    setattr(columnar.Engine, name, timed(getattr(columnar.Engine, name)))
"""
REPORT = """
before = start
for begun, ended, sql in statements:
    print(f"{STATEMENT} {ended - begun} {begun - before} {sql}", file=sys.stderr)
    before = ended
print(f"{STATEMENT} 0 {start + elapsed - before} (after the last statement)", file=sys.stderr)
"""
#: What starts a statement's line on the child's stderr (`TIMER`).
STATEMENT = "bench_logs-statement:"


class Statement(NamedTuple):
    """One statement the engine ran: its wall time, and the time before it since the one before (Python's)."""

    seconds: float
    before: float
    sql: str


def statements_of(stderr: str) -> tuple[Statement, ...]:
    """The statements `REPORT` printed on a child's ``stderr`` (none without `TIMER`); the last is no
    statement, its ``before`` the time after the last one."""
    timed = [line.split(maxsplit=3)[1:] for line in stderr.splitlines() if line.startswith(STATEMENT)]
    return tuple(Statement(float(seconds), float(gap), sql) for seconds, gap, sql in timed)
