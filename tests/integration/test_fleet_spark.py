"""Fleet queries on Spark (local[2], one session for the file) give DuckDB's answers:
top by every grouping, self and total, flame, where-filters, time ranges, before and
after compaction, with rollups, and with files a crashed compaction left behind; and on
a real S3 server (SeaweedFS) through the S3A connector perfsleuth fetches itself."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from s3server import s3_server, s3_url  # noqa: F401 -- fixtures
from unit.test_fleet_store import T0, fleet

from perfsleuth.errors import UserError
from perfsleuth.fleet import queries, trends
from perfsleuth.fleet.engine import Engine
from perfsleuth.fleet.engines import engine_of
from perfsleuth.present.folded import lines
from perfsleuth.store.fleet import FleetStore

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]
engine_spark = pytest.importorskip("perfsleuth.fleet.engine_spark")

WHERE = (
    None,
    "service=api",
    "host!=web-1",
    "host=~web-[02]",
    "host!~web-.",  # nothing
    "version=~1\\.[12]",
    "version!=1.0,pid=100",
    "comm=~api-1",  # partial matches do not count: nothing
    "nosuchlabel=",
)
PERFSLEUTH = Path(sys.executable).parent / "perfsleuth"
RANGES = ((T0, T0 + 7200), (T0 + 600, T0 + 4200), (T0 + 1234.5, T0 + 4000), (T0, T0 + 3600))


@pytest.fixture(scope="module")
def spark() -> Iterator[Engine]:
    engine_spark.session("local[2]")
    try:
        yield engine_of("spark", "local[2]")
    finally:
        engine_spark.stop()


def assert_same(store: FleetStore, spark: Engine, start: float, end: float, where=None) -> None:
    for by in ("function", "dso", "line", "file", "library", "service", "host"):
        for sort in ("self", "total"):
            kw = {"where": where, "by": by, "sort": sort, "n": 0}
            duck = queries.top(store, start, end, **kw)
            assert queries.top(store, start, end, engine=spark, **kw) == duck, kw
    duck_flame = lines(queries.flame(store, start, end, where))
    assert lines(queries.flame(store, start, end, where, spark)) == duck_flame


def test_spark_equals_duckdb_before_and_after_compaction(spark: Engine, tmp_path: Path) -> None:
    store = FleetStore(str(tmp_path / "fleet"))
    windows = fleet(24, 3, spacing=290)  # about two hours, windows at odd seconds
    for w in windows[: len(windows) // 2]:
        store.append(w)
    store.compact()
    for w in windows[len(windows) // 2 :]:
        store.append(w)  # raw window files beside compacted ones
    assert_same(store, spark, T0, T0 + 7200)
    for where in WHERE:
        duck = queries.top(store, T0, T0 + 7200, where=where, n=0)
        assert queries.top(store, T0, T0 + 7200, where=where, n=0, engine=spark) == duck, where
    store.compact()
    levels = {}
    for start, end in RANGES:
        assert_same(store, spark, start, end, "service=api")
        levels[(start, end)] = store.select(start, end).levels
    for step in (90, 3600):  # one bucketed query: each bucket at its own grain
        duck_series = trends.series(store, "malloc", T0, T0 + 7200, step=step)
        assert trends.series(store, "malloc", T0, T0 + 7200, step=step, engine=spark) == duck_series
    assert levels[RANGES[0]] == {"hour": 2}  # rollups were read
    assert levels[RANGES[1]] == {"minute": 2}
    assert levels[RANGES[2]] == {"raw": 2}


def test_spark_skips_files_a_crashed_compaction_left(spark: Engine, tmp_path: Path) -> None:
    store = FleetStore(str(tmp_path / "fleet"))
    for w in fleet(6, 2):
        store.append(w)
    raw = next((tmp_path / "fleet" / "samples" / "level=raw").rglob("hour=*"))
    originals = {p.name: p.read_bytes() for p in raw.glob("w-*.parquet")}
    store.compact()
    for name, data in originals.items():  # as if the compactor died before deleting
        (raw / name).write_bytes(data)
    assert_same(store, spark, T0, T0 + 3600)


def test_spark_on_an_empty_range(spark: Engine, tmp_path: Path) -> None:
    store = FleetStore(str(tmp_path / "fleet"))
    store.append(fleet(1, 1)[0])
    doc = queries.top(store, T0 + 86400, T0 + 90000, engine=spark)
    assert (doc["total"], doc["rows"]) == (0, [])
    assert queries.top(store, T0, T0 + 60, where="host=nobody", engine=spark)["rows"] == []


def test_cli_spark_json_equals_duckdb_and_stderr_stays_quiet(tmp_path: Path) -> None:
    store = FleetStore(str(tmp_path / "fleet"))
    for w in fleet(4, 2):
        store.append(w)

    def top(*extra: str) -> subprocess.CompletedProcess:
        command = [str(PERFSLEUTH), "fleet", "top", "--store", store.root]
        command += ["--from", str(T0), "--to", str(T0 + 3600), "--format", "json", *extra]
        return subprocess.run(command, capture_output=True, text=True, check=True)

    spark = top("--engine", "spark", "--spark-master", "local[1]", "--where", "host=~web-.*")
    assert spark.stderr == ""
    assert json.loads(spark.stdout) == json.loads(top("--where", "host=~web-.*").stdout)


@pytest.mark.parametrize(
    "master, message",
    [
        ("locl[2]", "bad --spark-master"),
        ("spark://", "bad --spark-master"),
        ("spark://127.0.0.1:9", "no Spark master answers at spark://127.0.0.1:9"),
    ],
)
def test_bad_master_is_a_user_error(master: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        engine_of("spark", master)


def test_no_java_is_a_user_error(tmp_path: Path) -> None:
    store = FleetStore(str(tmp_path / "fleet"))
    store.append(fleet(1, 1)[0])
    command = [str(PERFSLEUTH), "fleet", "flame", "--store", store.root]
    command += ["--from", str(T0), "--to", str(T0 + 60), "--engine", "spark"]
    env = {"PATH": "/nonexistent", "JAVA_HOME": str(tmp_path)}
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    assert done.returncode != 0
    assert done.stderr.startswith("perfsleuth: --engine spark needs Java 17")
    assert "Traceback" not in done.stderr


def test_spark_through_s3a_equals_duckdb_with_no_spark_configuration(
    spark: Engine,
    s3_url: str,  # noqa: F811
) -> None:
    """The JVM is started again with hadoop-aws of pyspark's Hadoop (from Maven Central,
    cached in ~/.ivy2*); endpoint, region and credentials are the store's."""
    store = FleetStore(s3_url)
    for w in fleet(6, 2, spacing=500):
        store.append(w)
    assert_same(store, spark, T0, T0 + 3600)
    store.compact()
    assert_same(store, spark, T0, T0 + 3600, "service=api")
    assert engine_spark.s3a_package() == f"org.apache.hadoop:hadoop-aws:{_hadoop_version()}"


def _hadoop_version() -> str:
    jars = Path(engine_spark.pyspark.__file__).parent / "jars"
    return next(jars.glob("hadoop-client-api-*.jar")).name.split("-")[-1].removesuffix(".jar")
