"""The model behaves as when ``tests/data/reference_traces.json`` was recorded.

Regenerates the seeded random traces of ``reference_traces.py`` (steps, rejections,
fired rules, observations, invariant violations and enabled steps after every step)
and compares each chunk's digest with the recorded one. By default a sample of the
chunks (about 1,500 traces, a few seconds); with ``KCONFORM_HYPOTHESIS_PROFILE=thorough``
all of them (10,000 traces).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from reference_traces import SEED, TRACES_PER_CHUNK, chunk_digest

RECORDED = json.loads((Path(__file__).parent / "data" / "reference_traces.json").read_text(encoding="utf-8"))
THOROUGH = os.environ.get("KCONFORM_HYPOTHESIS_PROFILE") == "thorough"
CHUNKS = range(len(RECORDED["chunks"])) if THOROUGH else range(0, len(RECORDED["chunks"]), 7)


def test_recording_parameters_match_the_generator() -> None:
    assert (RECORDED["seed"], RECORDED["traces_per_chunk"]) == (SEED, TRACES_PER_CHUNK)
    assert len(RECORDED["chunks"]) * TRACES_PER_CHUNK >= 10_000


@pytest.mark.parametrize("chunk", CHUNKS)
def test_chunk_matches_the_recording(chunk: int) -> None:
    assert chunk_digest(chunk) == RECORDED["chunks"][chunk], (
        f"traces {chunk * TRACES_PER_CHUNK}..{(chunk + 1) * TRACES_PER_CHUNK - 1} behave differently from the "
        "recording: run `python tests/reference_traces.py --dump CHUNK` here and on the recording's commit and diff"
    )
