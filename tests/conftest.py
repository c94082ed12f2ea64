"""One local Spark session for every test module that needs one (starting one costs seconds)."""
import pytest

import flamespark as fs
from tests.kafka_broker import kafka_broker  # noqa: F401 (a fixture)


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
