"""pytest configuration: fast by default; hypothesis profiles for CI and local runs."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

from hypothesis import HealthCheck, settings

settings.register_profile("default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("KCONFORM_HYPOTHESIS_PROFILE", "default"))

# conformance/fixtures/validated.py remembers fixture texts that fit the schemas: a fresh cache per
# session, never the user's (a test must see the schema check run).
if "KCONFORM_CACHE_DIR" not in os.environ:
    os.environ["KCONFORM_CACHE_DIR"] = tempfile.mkdtemp(prefix="kconform-test-cache-")
    atexit.register(shutil.rmtree, os.environ["KCONFORM_CACHE_DIR"], ignore_errors=True)
