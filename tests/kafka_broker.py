"""A real Apache Kafka broker for the tests (scripts/kafka-broker.sh), one per session, on a free loopback port.

Tests that use it are marked `kafka`. Each test takes topics of its own
(`new_topic`), so tests never see each other's records.
"""
import itertools
import os
import socket
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "kafka-broker.sh"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Broker:
    """A broker started by scripts/kafka-broker.sh, with its files under `directory`."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self._topics = itertools.count()

    def _script(self, command: str):
        env = dict(os.environ, KAFKA_BROKER_DIR=str(self.directory))
        done = subprocess.run([str(SCRIPT), command, str(self.port)], env=env, capture_output=True, text=True)
        if done.returncode:
            pytest.fail(f"scripts/kafka-broker.sh {command} {self.port} failed:\n{done.stderr}", pytrace=False)

    def start(self):
        self._script("start")

    def stop(self):
        self._script("stop")

    def new_topic(self, name: str, partitions: int = 1) -> str:
        """A topic no other test uses, `name-<n>`, made with `partitions` partitions."""
        from confluent_kafka.admin import AdminClient, NewTopic

        topic = f"{name}-{next(self._topics)}"
        admin = AdminClient({"bootstrap.servers": self.address, "log_level": 0})
        for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
            future.result(30)
        return topic

    def url(self, topic: str, query: str = "") -> str:
        return f"kafka://{self.address}/{topic}" + (f"?{query}" if query else "")


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    broker = Broker(tmp_path_factory.mktemp("kafka-broker"))
    broker.start()
    yield broker
    broker.stop()
