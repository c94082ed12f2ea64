"""One copy of a graph's operators on the local engine, with the barrier in front of its sinks."""
from math import inf

from barrier.barrier import Barrier
from flamespark.core.batch import Batch
from flamespark.runtime.plan import PhysicalPlan


class Pipeline:
    """The operators of `plan` with their states, the batches that wait for them, and a barrier.

    A run applies a batch of events with `apply` (each source's part of it) and
    issues a punctuation with `punctuate`, then `release`. `note(sink,
    batch)`, if given, sees every batch the barrier takes for a sink (a
    changelog's or the corrections' notes).

    Within a batch, the boundary operators take what reached them in
    topological order, each all of its own at once (one batch) before the next
    takes any: so an operator's results for a sink reach it without waiting
    for the operators downstream of it on other paths.
    """

    def __init__(self, plan: PhysicalPlan, note=None):
        self.plan = plan
        self.note = note
        self.states = {name: op.new_state() for name, op in plan.operators.items() if op.boundary}
        self.barrier = Barrier()
        # The batches that reached each boundary operator in this batch, in topological order of the operators.
        self.waiting = {name: [] for name, op in plan.operators.items() if op.boundary}
        self.issued = -inf
        self.buffers = [self.states[buffer.name] for buffer in plan.buffers()]
        buffers = {buffer.name for buffer in plan.buffers()}
        # Per boundary operator, in topological order: it, its state, its waiting batches, and whether it
        # punctuates at +inf (a keyed operator would only forget state the run is about to drop whole; a buffer or
        # a window releases).
        self._operators = [(name, op, self.states[name], self.waiting[name], name in buffers or op.kind == "window")
                           for name, op in plan.operators.items() if op.boundary]

    def _reached(self, target, batch):
        """Take a batch that reached `target`: into the barrier for a sink (and the note), else to wait for its
        operator."""
        sink = self.plan.sinks.get(target)
        if sink is None:
            self.waiting[target].append(batch)
            return
        self.barrier.push(sink, batch)
        if self.note is not None:
            self.note(sink, batch)

    def apply(self, batches: dict):
        """Apply one batch of events: `{source: batch}`; every boundary operator then takes what
        reached it."""
        for source, batch in batches.items():
            self.plan.route(source, batch, self._reached)
        self._take_waiting()

    def _take_waiting(self):
        for name, operator, state, waiting, _ in self._operators:
            if waiting:
                self._take(name, operator, state, waiting)

    def _take(self, name, operator, state, waiting: list):
        """Operator `name` takes the batches waiting for it, as one; what it makes goes on."""
        batch = Batch.concat(waiting)
        waiting.clear()
        made = operator.take(batch, state)
        if made:
            self.plan.route(name, made, self._reached)

    def punctuate(self, time):
        """Hand the operators the punctuation `time` (above the last one issued); what they release reaches the
        barrier, which `release` then releases. At +inf, the operators' state is dropped."""
        self.issued = time
        for name, operator, state, waiting, at_inf in self._operators:
            if waiting:
                self._take(name, operator, state, waiting)
            if at_inf or time < inf:
                released = operator.punctuate(time, state)
                if released:
                    self.plan.route(name, released, self._reached)
        if time == inf:  # every operator has taken what reached it, in the loop above
            self._drop_operators()

    def release(self, time) -> list:
        """The barrier's release at `time`: the surviving rows at or below it, in meta order."""
        return self.barrier.punctuate(time)

    def buffered(self) -> int:
        """Rows held: by the barrier, and in the buffered mode by the sort buffers."""
        held = len(self.barrier)
        for buffer in self.buffers:
            held += len(buffer)
        return held

    def _drop_operators(self):
        """After +inf nothing reaches an operator: free their state, by reference counting, before the barrier's
        last release makes the last outputs, so that the run never holds both; and let go of the notes, which
        may refer to the run."""
        self.states = self.waiting = self._operators = self.note = None
        self.buffers = []
