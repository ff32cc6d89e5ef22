"""Corpora at scale: traces as JSON Lines, seeded generation, and replay on any backend.

- ``format.py``: one trace per line and its conversion to a runnable fixture;
- ``reading.py``: corpus files (``.jsonl``, ``.jsonl.gz``, YAML fixture folders) cut into
  splits, the unit of work of every backend;
- ``generate.py``: seeded random walks over the reference (or recorded from any
  implementation);
- ``replay.py``: one split replayed on the implementations through the fixture runner;
- ``aggregate.py``: mergeable per-split totals (outcomes, per-rule coverage and failures,
  the first failures) and the results document built from them;
- ``backends.py``: the same split function run inline, on a process pool or on Spark;
- ``spark.py``: the Spark session, set up in code;
- ``shrink.py``: failing traces cut down to small YAML fixtures;
- ``cli.py``: ``kconform generate`` and ``kconform replay``.
"""
