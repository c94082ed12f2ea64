"""A run's options, checked once for every engine before any engine starts."""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

from flamespark.core.errors import OptionError
from flamespark.runtime.punctuations import POLICIES

ENGINES = ("local", "spark")
# Events an unpaced local run applies in one step, unless `batch_size` says otherwise.
BATCH_SIZE = 1000
MODES = ("optimistic", "buffered")
# The keyword arguments of flamespark.engines.spark.query.run_spark (apart from the graph, inputs, these options
# and the Kafka sinks).
SPARK_OPTIONS = ("master", "checkpoint", "spark", "shards", "timeout", "max_rows_per_batch", "follow", "output",
                 "output_format", "ingest_partitions")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class RunOptions:
    """What `flamespark.run` was asked for; constructing one checks it, so engines take it as valid.

    The same mistake raises the same OptionError on every engine: values are
    checked first, then what the chosen engine does not take.
    `engine_options` holds the engine's own options (Spark's: SPARK_OPTIONS).
    """

    engine: str = "local"
    mode: str = "optimistic"
    reorder_latency: int = 0
    late: str = "drop"
    batch_size: int | None = None  # events a local unpaced run applies per batch; None: BATCH_SIZE
    idle_timeout: float | None = None
    rate: float | None = None
    changes: bool = False
    progress: bool | None = None  # a status line on stderr while the run goes on; None: if stderr is a terminal
    engine_options: dict = field(default_factory=dict, hash=False)

    @classmethod
    def of(cls, engine="local", mode="optimistic", reorder_latency=0, late="drop", batch_size=None,
           idle_timeout=None, rate=None, changes=False, progress=None, **engine_options) -> RunOptions:
        """The options of a `flamespark.run(...)` call, checked. Several reorder latencies are kept as a tuple,
        a sequence of one as its number."""
        if isinstance(reorder_latency, (tuple, list)):
            reorder_latency = reorder_latency[0] if len(reorder_latency) == 1 else tuple(reorder_latency)
        return cls(engine, mode, reorder_latency, late, batch_size, idle_timeout, rate, changes, progress,
                   engine_options)

    @property
    def latencies(self) -> tuple:
        """The reorder latencies, one per level (a single latency is one level)."""
        latency = self.reorder_latency
        return latency if isinstance(latency, tuple) else (latency,)

    @property
    def shows_progress(self) -> bool:
        """Whether the run shows its progress: as asked, else if stderr is a terminal."""
        return sys.stderr.isatty() if self.progress is None else self.progress

    def __post_init__(self):
        self._check_values()
        self._check_engine()

    def _check_values(self):
        if self.engine not in ENGINES:
            raise OptionError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.mode not in MODES:
            raise OptionError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        latencies = self.latencies
        if not latencies or not all(_is_int(latency) and latency >= 0 for latency in latencies):
            raise OptionError(f"reorder_latency must be a non-negative integer (ms) or an increasing sequence of "
                              f"them, got {self.reorder_latency!r}")
        if any(later <= earlier for earlier, later in zip(latencies, latencies[1:])):
            raise OptionError(f"several reorder latencies must increase, got {self.reorder_latency!r}")
        if self.late not in POLICIES:
            raise OptionError(f"late policy must be one of {', '.join(POLICIES)}, got {self.late!r}")
        if self.batch_size is not None and (not _is_int(self.batch_size) or self.batch_size < 1):
            raise OptionError(f"batch_size must be a positive integer, got {self.batch_size!r}")
        idle = self.idle_timeout
        if idle is not None and (isinstance(idle, bool) or not isinstance(idle, (int, float)) or not idle > 0):
            raise OptionError(f"idle_timeout must be a positive number of seconds, got {idle!r}")
        rate = self.rate
        if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate < math.inf):
            raise OptionError(f"rate must be a positive number of events per second, got {rate!r}")
        if not isinstance(self.changes, bool):
            raise OptionError(f"changes must be True or False, got {self.changes!r}")
        if not (self.progress is None or isinstance(self.progress, bool)):
            raise OptionError(f"progress must be True, False or None (if stderr is a terminal), got {self.progress!r}")
        partitions = self.engine_options.get("ingest_partitions")
        if partitions is not None and (not _is_int(partitions) or partitions < 1):
            raise OptionError(f"ingest_partitions must be a positive integer, got {partitions!r}")
        unknown = [name for name in self.engine_options if name not in SPARK_OPTIONS]
        if unknown:
            raise OptionError(f"unknown option(s) {', '.join(unknown)}; flamespark.run takes engine, mode, "
                              f"reorder_latency, late, batch_size, idle_timeout, rate, changes, progress and, "
                              f"on engine='spark', {', '.join(SPARK_OPTIONS)}")

    def _check_engine(self):
        if self.engine == "local":
            if self.engine_options:
                raise OptionError(f"the local engine takes no engine options, got {', '.join(self.engine_options)} "
                                  f"(options of the Spark engine)")
            if self.idle_timeout is not None:
                raise OptionError("idle_timeout needs engine='spark': the local engine reads its finite inputs "
                                  "in turn, waiting on each, so no source falls silent while the others go on")
            if self.rate is not None and self.batch_size is not None:
                raise OptionError("batch_size is for unpaced runs: a paced run applies in one batch whatever has "
                                  "arrived while it worked")
            return
        if len(self.latencies) > 1 and self.idle_timeout is not None:
            raise OptionError("idle_timeout takes one reorder latency: an idle source's punctuation is raised to "
                              "the others', which differ from level to level")
        if self.batch_size is not None:
            raise OptionError("batch_size is taken by the local engine only: on Spark a batch is a micro-batch "
                              "(max_rows_per_batch makes them smaller)")
        if self.idle_timeout is not None and self.mode == "buffered":
            raise OptionError("idle_timeout needs mode='optimistic': the buffered baseline follows Spark's "
                              "watermark, which waits for every input")
