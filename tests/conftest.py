"""One local Spark session for every test module that needs one (starting one costs seconds), and the `spark` mark
on every test that starts Spark: those under tests/spark/ and those using the session, besides those marked by hand;
`kafka` and `slow` on every Kafka test (those using the broker, besides those marked `kafka` by hand)."""
from pathlib import Path

import pytest

import flamespark as fs
from tests import processes
from tests.kafka_broker import kafka_broker  # noqa: F401 (a fixture)

SPARK_TESTS = Path(__file__).resolve().parent / "spark"


def pytest_collection_modifyitems(items):
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "spark" in fixtures or SPARK_TESTS in Path(item.path).parents:
            item.add_marker(pytest.mark.spark)
        if "kafka_broker" in fixtures or item.get_closest_marker("kafka"):
            # a broker is a JVM of its own, seconds to start, and a client waits seconds for one that is not there
            item.add_marker(pytest.mark.kafka)
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def spark():
    from flamespark.engines.spark.session import check_java, spark_session

    try:
        check_java()
    except fs.FlameSparkError as exc:  # a failure, not a skip: the Spark tests did not pass
        pytest.fail(f"the Spark tests need Java 17 or later (README, Quick start): {exc}", pytrace=False)
    session = spark_session("local[2]", 2)
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def stop_children():
    """Whatever a test started through tests.processes and left running is killed when it ends."""
    yield
    processes.stop_all()
