"""my-broker behind kconform's adapter seam.

Used twice: by ``conftest.py`` (the pytest plugin) and on the command line
(``kconform run --impl kconform_adapter:adapter``): both give the same results.
"""

from __future__ import annotations

import my_broker

from kconform import Description, FunctionAdapter


def adapter() -> FunctionAdapter:
    return FunctionAdapter(
        Description(
            name="my-broker",
            version="0.1.0",
            language="python",
            generations=my_broker.GENERATIONS,
            steps=my_broker.STEPS,
            fields=("leader", "leader_epoch", "isr", "replicas", "producer", "in_flight"),
            replica_fields=("online", "role", "leader", "leader_epoch", "leo", "hw", "log", "epoch_cache"),
        ),
        init=my_broker.start,
        apply=my_broker.handle,
        observe=my_broker.snapshot,
        refusals=(my_broker.Refused,),
    )
