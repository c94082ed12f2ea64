"""The SparkSession FlameSpark runs on: RocksDB state store (changelog checkpointing), checkpoint files through
Hadoop's FileSystem, quiet logs, workers that see our code and import PySpark compiled (`spark_home`)."""
import os
import shutil
import sys
import tempfile
from pathlib import Path

from flamespark.core.errors import FlameSparkError
from flamespark.engines.spark.interrupt import quiet_interrupts
from flamespark.engines.spark.spark_home import spark_home_for

LOG_DIR = Path(tempfile.gettempdir()) / "flamespark-logs"
CHECKPOINT_FILE_MANAGER = "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
LOG_FILE = LOG_DIR / "spark.log"
# The state store that `transformWithStateInPandas`, and so every FlameSpark query, needs.
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def check_java():
    """Raise a clear error when no Java runtime is on this machine."""
    java_home = os.environ.get("JAVA_HOME")
    if shutil.which("java") or (java_home and Path(java_home, "bin", "java").exists()):
        return
    raise FlameSparkError(
        "the Spark engine needs a Java 17+ runtime and none was found: install one "
        "(e.g. `apt-get install openjdk-17-jre-headless`) or run with --engine local"
    )


def _expose_python_path():
    """Spark's Python workers inherit the JVM's environment: give them this interpreter and path."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    entries = [entry for entry in sys.path if entry and os.path.isdir(entry)]
    known = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(known + entries).keys()).strip(os.pathsep)


def spark_session(master: str | None = None, shards: int | None = None):
    """Get or build the session; Spark's own output goes to LOG_FILE, not the terminal, and Ctrl-C
    is quiet (`interrupt.quiet_interrupts`)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    check_java()
    _expose_python_path()
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    log4j = LOG_DIR / "log4j2.properties"
    log4j.write_text(_LOG4J)
    master = master or "local[*]"
    builder = (
        SparkSession.builder.master(master)
        .appName("flamespark")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}")
        .config("spark.sql.shuffle.partitions", str(shards or os.cpu_count() or 2))
        .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
        # A commit writes the batch's changes, not a snapshot of the store: every stage commits every batch.
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
        # FlameSpark's checkpoints are local directories, where FileSystem's rename is atomic, as a checkpoint
        # needs. Spark's default manager, through FileContext, took 50-70 ms a task to commit a state store
        # here, against 3-15 ms.
        .config("spark.sql.streaming.checkpointFileManagerClass", CHECKPOINT_FILE_MANAGER)
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.streaming.numRecentProgressUpdates", "100000")
    )
    # The JVM and the Python workers it forks inherit file descriptor 2: point it at the log
    # file while the JVM starts, so Spark's banner and worker chatter stay off the terminal.
    sys.stderr.flush()
    saved = os.dup(2)
    log = os.open(LOG_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 2)
    os.close(log)
    try:
        with spark_home_for(master):
            session = builder.getOrCreate()
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise FlameSparkError(f"Spark did not start: {first[:300]} (Spark's log: {LOG_FILE})") from None
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    session.sparkContext.setLogLevel("ERROR")
    quiet_interrupts()
    return session
