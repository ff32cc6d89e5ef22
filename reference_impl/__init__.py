"""kconform's reference implementation of Kafka partition replication.

A pure state machine: ``initial_state(config)`` builds the start, ``apply(state, step)``
returns the next state (or raises ``StepRejected`` saying which rule's guard failed),
``observe(state)`` gives plain data, ``enabled_steps(state)`` lists what may happen
next, and ``invariants.check(state, before)`` lists violated invariants. No I/O, no
clock, no randomness: time is the ``Tick`` step and every choice is a step field.

Rules are specified in ``spec/replication.md``; each rule id appears in this package
where the rule is implemented.
"""

from .apply import apply, run
from .config import Config, Generation, config_from_dict
from .enabled import enabled_steps
from .errors import ConfigError, KconformModelError, StepFormatError, StepRejected
from .given import InitialStateError
from .initial import initial_state
from .invariants import Violation, check
from .observe import OBSERVATION_FIELDS, REPLICA_FIELDS, observe
from .state import State
from .steps import STEP_TYPES, Step, step_from_dict, step_to_dict

__version__ = "0.1.0"

__all__ = [
    "OBSERVATION_FIELDS",
    "REPLICA_FIELDS",
    "STEP_TYPES",
    "Config",
    "ConfigError",
    "Generation",
    "InitialStateError",
    "KconformModelError",
    "State",
    "Step",
    "StepFormatError",
    "StepRejected",
    "Violation",
    "apply",
    "check",
    "config_from_dict",
    "enabled_steps",
    "initial_state",
    "observe",
    "run",
    "step_from_dict",
    "step_to_dict",
]
