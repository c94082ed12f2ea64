"""One copy of a graph's operators on the local engine, with the barrier in front of its sinks."""
from functools import partial
from math import inf

from barrier.barrier import Barrier
from flamespark.runtime.plan import PhysicalPlan


class Pipeline:
    """The operators of `plan` with their states, the items that wait for them, and a barrier.

    A run applies an event with `apply` (deliver it, then let every operator
    settle, `flush`) and issues a punctuation with `punctuate`, then
    `release`. `note(sink, item)`, if given, sees every item and tombstone
    the barrier takes (a changelog's or the corrections' notes).

    Within a step, the boundary operators take the items that reached them in
    topological order, each all of its own before the next takes any, then
    do the work they left waiting (`flush`): so an operator's results for a
    sink reach it without waiting for the operators downstream of it on
    other paths (the inverted index's postings for its collectors).
    """

    def __init__(self, plan: PhysicalPlan, note=None):
        self.plan = plan
        self.note = note
        self.states = {name: op.new_state() for name, op in plan.operators.items() if op.boundary}
        self.barrier = Barrier()
        # The items that reached each boundary operator and wait for it to take them (`flush`, in topological order).
        self.waiting = {name: [] for name, op in plan.operators.items() if op.boundary}
        self.deliver = plan.wire(self._boundary)
        self.issued = -inf
        self.buffers = [self.states[buffer.name] for buffer in plan.buffers()]
        buffers = {buffer.name for buffer in plan.buffers()}
        # Per boundary operator, in topological order: how it takes items, finishes, punctuates, and whether it
        # punctuates at +inf (a keyed operator would only forget state the run is about to drop whole).
        self._operators = [
            (op.take, op.flush, op.punctuate, self.states[name], self.deliver[name], self.waiting[name],
             name in buffers)
            for name, op in plan.operators.items() if op.boundary
        ]

    def _boundary(self, target, send):
        """What takes the items reaching `target`: the barrier for a sink, else the list where they wait for the
        operator to take them at the end of the step (`flush`)."""
        if send is None:
            sink, push, note = self.plan.sinks[target], self.barrier.push, self.note
            if note is None:
                return partial(push, sink)  # no frame of its own, where a lambda would add one an output

            def push_and_note(item):
                push(sink, item)
                note(sink, item)

            return push_and_note
        return self.waiting[target].append

    def apply(self, source: str, item):
        """Deliver an event's item from `source`, and let the operators settle."""
        self.deliver[source](item)
        self.flush()

    def flush(self):
        """End a step: every boundary operator, in topological order, takes the items that reached it and does
        the work it left waiting. So an operator's results all leave before the operators after it take any."""
        for take, flush, _, state, send, waiting, _ in self._operators:
            _take(take, flush, state, send, waiting)

    def punctuate(self, time):
        """Hand the operators the punctuation `time` (above the last one issued); what they release reaches the
        barrier, which `release` then releases. At +inf, the operators' state is dropped."""
        self.issued = time
        sent = False  # every operator was flushed at the end of the last step: until one sends, none need be
        for take, flush, punctuate, state, send, waiting, at_inf in self._operators:
            if sent:
                _take(take, flush, state, send, waiting)
            if at_inf or time < inf:
                for item in punctuate(time, state):
                    send(item)
                    sent = True
        if time == inf:  # every operator has taken what reached it, in the loop above
            self._drop_operators()

    def release(self, time) -> list:
        """The barrier's release at `time`: the surviving items at or below it, in meta order."""
        return self.barrier.punctuate(time)

    def buffered(self) -> int:
        """Items held: by the barrier, and in the buffered mode by the sort buffers."""
        held = len(self.barrier)
        for buffer in self.buffers:
            held += len(buffer)
        return held

    def _drop_operators(self):
        """After +inf nothing reaches an operator: free their state, by reference counting, before the barrier's
        last release makes the last outputs, so that the run never holds both; and let go of the notes, which
        may refer to the run."""
        self.states = self.deliver = self.waiting = self._operators = self.note = None
        self.buffers = []


def _take(take, flush, state, send, waiting: list):
    """A boundary operator takes the items `waiting` for it (none reach it meanwhile: the graph has no cycle),
    then does the work it left waiting; what it makes goes on to `send`."""
    if waiting:
        take(waiting, state, send)
        waiting.clear()
    for out in flush(state):
        send(out)
