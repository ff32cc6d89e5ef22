"""Which of a run's steps the judge may send before it has read the answers to the ones before.

A fixture's steps are known before the run: the judge sends each one as ``wire.wire_step``
writes it, and the only part of a step that depends on earlier answers is a produce's
automatic id (``p{n}``, n counting the produces *accepted* so far). So the judge plans the
wire steps once, assuming each step is accepted or refused as the reference does, and an
adapter that pipelines (``Adapter.send_ahead``: stdio with protocol 4's ``pipelining``) is
sent a step ahead only when no answer still unread can change it:

- a step that is not a produce with an automatic id never changes;
- a produce with an automatic id changes only if a produce before it is answered otherwise
  than the reference answers it; so it is sent ahead only when every produce before it
  has been answered;
- once a produce was answered otherwise (the run goes on only at ``settled``, from a
  reference state that does the same), the count of accepted produces is not the plan's:
  a step where the counts differ is written from the answers, as without pipelining, and
  nothing is sent ahead from it.

Steps sent ahead of a run that ends early are dropped by the adapter's next ``reset``
(their answers are read and not judged), so the implementation's judged run is exactly the
steps a judge without pipelining sends. ``tests/test_pipelining.py`` checks that every
verdict is the same either way.
"""

from __future__ import annotations

from reference_impl.steps import Produce

from ..adapters.base import Adapter
from ..adapters.wire import WireStep, wire_step
from .coarsen import Plan


class Lookahead:
    """The wire steps of one run, planned, and which of them went to the adapter ahead."""

    def __init__(self, adapter: Adapter, lowered: Plan) -> None:
        self.adapter = adapter
        self.steps = [ps.step for ps in lowered.steps]
        self.planned: list[WireStep | None] = []
        """Per plan step, the wire step if the answers are the reference's (None: an
        internal step, never sent)."""
        self.counts: list[int] = []
        """Per plan step, the produces the reference accepts before it."""
        self.produces: list[bool] = []
        """Per plan step: a produce sent to the implementation."""
        self.automatic: list[bool] = []
        """Per plan step: a produce whose id depends on the earlier answers."""
        produced = 0
        for ps in lowered.steps:
            is_produce = type(ps.step) is Produce and not ps.internal
            self.counts.append(produced)
            self.produces.append(is_produce)
            self.automatic.append(is_produce and getattr(ps.step, "id", None) is None)
            self.planned.append(None if ps.internal else wire_step(ps.step, produced))
            produced += is_produce and ps.rejected is None
        self.sent = 0
        """Plan steps before this one were sent ahead (or are internal)."""
        self.unanswered_produces = 0
        """Produces sent ahead whose answers are not read yet."""

    def take(self, n: int, produced: int) -> WireStep:
        """The wire step to send as plan step ``n`` (not internal), ``produced`` produces
        having been accepted before it; sends ahead first what may go, ``n`` included."""
        planned = self.planned[n]
        assert planned is not None
        if n < self.sent:  # sent ahead: the adapter answers for this very object
            return planned
        if produced != self.counts[n]:  # a produce was answered otherwise: the plan's ids are off
            return wire_step(self.steps[n], produced)
        self.sent = self._fill(n)
        return planned

    def answered(self, n: int) -> None:
        """Plan step ``n`` (a sent step) was answered."""
        if self.produces[n] and n < self.sent:
            self.unanswered_produces -= 1

    def _fill(self, n: int) -> int:
        """Send plan steps from ``n`` on while the adapter takes them and no unread answer
        can change them; the first plan step not sent."""
        j = n
        while j < len(self.planned):
            planned = self.planned[j]
            if planned is not None:
                if self.automatic[j] and self.unanswered_produces:
                    break
                if not self.adapter.send_ahead(planned):
                    break
                self.unanswered_produces += self.produces[j]
            j += 1
        return j


def pipelines(adapter: Adapter) -> bool:
    """The adapter takes steps ahead (a stdio program that opted into ``pipelining``)."""
    return getattr(adapter, "pipelining", False) is True
