"""Plug my-broker into kconform's pytest plugin as an ordinary pytest fixture.

``pytest.ini`` names this fixture in ``kconform_impl``; every kconform case asks for it,
so it may use any other fixture of this project (a temporary directory, a started
server, ...).
"""

from __future__ import annotations

from collections.abc import Iterator

import kconform_adapter
import pytest

from kconform import Adapter


@pytest.fixture(scope="session")
def my_broker_adapter() -> Iterator[Adapter]:
    adapter = kconform_adapter.adapter()
    yield adapter
    adapter.close()
