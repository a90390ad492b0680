"""`waldump._tally`: each record's bytes to its relation, in the run's database only (relation
numbers repeat across the databases of a shared server)."""

from __future__ import annotations

from tocsin_bench.waldump import _tally

OURS, THEIRS = "16384", "16999"
LINES = [
    "rmgr: Heap len (rec/tot): 54/ 120, tx: 7, lsn: 0/01, prev 0/00, desc: INSERT off 3, "
    f"blkref #0: rel 1663/{OURS}/2001 blk 0",
    "rmgr: Heap len (rec/tot): 54/ 8250, tx: 7, lsn: 0/02, prev 0/01, desc: DELETE off 4, "
    f"blkref #0: rel 1663/{OURS}/2002 blk 9 FPW",
    # Another database's relation with the same number as ours: not ours.
    "rmgr: Heap len (rec/tot): 54/ 9000, tx: 8, lsn: 0/03, prev 0/02, desc: INSERT off 1, "
    f"blkref #0: rel 1663/{THEIRS}/2001 blk 5 FPW",
    "rmgr: Transaction len (rec/tot): 34/ 34, tx: 7, lsn: 0/04, prev 0/03, desc: COMMIT",
    "not a record",
]


def test_records_go_to_their_relation_in_the_runs_database_only() -> None:
    names = {"2001": "public.firings", "2002": "public.due"}
    tallied = _tally(LINES, names, OURS, 2)
    assert tallied == {
        "public.due": {"bytes": 4125.0, "fpi": 0.5},
        "public.firings": {"bytes": 60.0, "fpi": 0.0},
        "(no relation)": {"bytes": 17.0, "fpi": 0.0},
        "(other databases)": {"bytes": 4500.0, "fpi": 0.5},
    }
