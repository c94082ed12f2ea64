"""The linked Spark home: what it links and leaves out, when it is used, and that Spark's workers then import
the installed PySpark rather than its zip archive."""
import os
from pathlib import Path

import pytest

from flamespark.engines.spark import spark_home
from flamespark.engines.spark.spark_home import linked_home, spark_home_for


def fake_installation(root: Path) -> Path:
    installed = root / "pyspark"
    for directory in ("jars", "bin", "python/lib", "python/pyspark"):
        (installed / directory).mkdir(parents=True)
    (installed / "python" / "lib" / "pyspark.zip").write_bytes(b"")
    (installed / "jars" / "spark-core.jar").write_bytes(b"")
    return installed


def test_a_linked_home_links_everything_but_the_archives_and_is_made_once(tmp_path):
    installed = fake_installation(tmp_path)
    home = linked_home(installed, tmp_path / "cache")
    assert sorted(path.name for path in home.iterdir()) == ["bin", "jars", "python"]
    assert [path.name for path in (home / "python").iterdir()] == ["pyspark"]
    assert (home / "jars" / "spark-core.jar").resolve() == installed / "jars" / "spark-core.jar"
    made = home.stat().st_ino
    assert linked_home(installed, tmp_path / "cache") == home and home.stat().st_ino == made
    assert [path.name for path in (tmp_path / "cache").iterdir()] == [home.name]  # no half-built directory left


def test_an_installation_with_other_entries_gets_a_home_of_its_own(tmp_path):
    installed = fake_installation(tmp_path)
    before = linked_home(installed, tmp_path / "cache")
    (installed / "conf").mkdir()
    after = linked_home(installed, tmp_path / "cache")
    assert after != before and (after / "conf").is_symlink()


@pytest.fixture
def installation(tmp_path, monkeypatch):
    installed = fake_installation(tmp_path)
    monkeypatch.setattr(spark_home, "installed_home", lambda: installed)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SPARK_HOME", raising=False)
    return installed


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]"])
def test_a_local_master_starts_from_the_linked_home_only_while_spark_starts(installation, master):
    with spark_home_for(master):
        home = Path(os.environ["SPARK_HOME"])
        assert home.parent == spark_home.cache_root() and (home / "jars").resolve() == installation / "jars"
    assert "SPARK_HOME" not in os.environ


@pytest.mark.parametrize("master", ["spark://host:7077", "yarn", "local-cluster[2,1,1024]", "k8s://host:443"])
def test_other_masters_keep_sparks_own_home(installation, master):
    # Submitting to a cluster ships `python/lib/pyspark.zip` from the home: it must stay.
    with spark_home_for(master):
        assert "SPARK_HOME" not in os.environ


def test_a_spark_home_the_user_set_is_used_as_it_is(installation, monkeypatch, tmp_path):
    monkeypatch.setenv("SPARK_HOME", str(tmp_path / "theirs"))
    with spark_home_for("local[2]"):
        assert os.environ["SPARK_HOME"] == str(tmp_path / "theirs")
    assert os.environ["SPARK_HOME"] == str(tmp_path / "theirs")


def test_where_no_home_can_be_made_sparks_own_is_used(installation, monkeypatch, tmp_path):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))  # a file: no directory can be made under it
    with spark_home_for("local[2]"):
        assert "SPARK_HOME" not in os.environ


def test_spark_workers_import_the_installed_pyspark_not_its_archive(spark):
    import pyspark

    files = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("pyspark").__file__).collect()
    assert files == [pyspark.__file__]
