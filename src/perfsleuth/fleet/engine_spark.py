"""Fleet queries on Apache Spark (`--engine spark`): the DuckDB engine's work, done in Spark.

The store picks the files (store/fleet/reading.py: partition pruning by dt/hour, the
rollup level, skipping files a compaction replaced), so both engines read exactly the
same rows. Spark reads them with its own Parquet reader (`s3a://` on S3), filters by
time and labels, sums per stack and joins the stacks; the driver receives only those
per-stack sums and the frames they use, never a raw sample.

One SparkSession per process. Spark's JVM writes its log to an anonymous temporary file,
never to the user's terminal; the last lines of it explain a JVM that did not start.

An S3 store needs Hadoop's S3A connector, which the pyspark wheel lacks: the JVM is
started with `spark.jars.packages` naming the hadoop-aws of pyspark's own Hadoop (Spark
fetches it and its AWS SDK bundle from Maven Central once, into ~/.ivy2*), unless the
user's Spark configuration names hadoop-aws already. Endpoint, region and credentials
are the store's: --endpoint / $AWS_ENDPOINT_URL, $AWS_REGION, and the credentials boto3
finds (environment, ~/.aws profiles, instance roles).
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shlex
import shutil
import socket
import tempfile
from collections.abc import Sequence
from typing import IO, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from ..errors import UserError
from ..model.fleet import DEFAULT_TYPE, LABELS
from ..store.fleet.layout import FRAMES_SCHEMA
from ..store.fleet.reading import Selection
from .engine import BUCKETS_SCHEMA, SCHEMAS, RangeQuery, StackWeights, check_frames, to_ms
from .filters import TYPE_KEY, Condition

try:
    import pyspark
    from py4j.protocol import Py4JError
    from pyspark import SparkConf, SparkContext
    from pyspark.errors import PySparkException
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
except ImportError:
    raise UserError(
        "--engine spark needs pyspark: pip install pyspark (or use --engine duckdb)"
    ) from None

LOCAL_MASTER = re.compile(r"local(\[(\d+|\*)(,\d+)?\])?")
CLUSTER_MASTER = re.compile(r"spark://([^/:,\s]+:\d+)(,[^/:,\s]+:\d+)*")
PROBE_TIMEOUT_S = 3.0
LOG_TAIL_LINES = 3
COMMON_CONF = {
    "spark.app.name": "perfsleuth",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",  # per-stack sums are small; few reducers win
}
# Local mode only: a cluster's executors must reach the driver at a routable address.
LOCAL_CONF = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
WEIGHTS_SCHEMA = pa.schema(
    [
        ("stack_id", pa.int64()),
        ("frame_ids", pa.list_(pa.int64())),
        ("samples", pa.int64()),
        ("cpu_ns", pa.int64()),
    ]
)

S3A_ARTIFACT = "org.apache.hadoop:hadoop-aws"
HADOOP_JAR = re.compile(r"hadoop-client-api-(\d+\.\d+\.\d+)\.jar")

_gateway: Any = None  # the JVM, started once per process (again to add S3A)
_gateway_s3a = False  # whether it was started with the S3A connector
_log: IO[bytes] | None = None
_session: tuple[str, SparkSession] | None = None


class Spark:
    """Fleet queries on the Spark master `master` (local[N] or spark://host:port)."""

    def __init__(self, master: str, endpoint: str | None = None) -> None:
        self.master = check_master(master)
        self.endpoint = endpoint or os.environ.get("AWS_ENDPOINT_URL")

    def stack_weights(self, query: RangeQuery) -> StackWeights:
        if query.selection.empty:
            return StackWeights(WEIGHTS_SCHEMA.empty_table(), FRAMES_SCHEMA.empty_table())
        spark, s3 = self._session(query.selection)
        try:
            return _weights(spark, query, s3)
        except (PySparkException, Py4JError) as e:
            raise _translated(e) from None

    def label_weights(self, query: RangeQuery, labels: Sequence[str]) -> pa.Table:
        schema = pa.schema(
            [*((k, pa.string()) for k in labels), *WEIGHTS_SCHEMA.remove(1)]  # no frame_ids
        )
        if query.selection.empty:
            return schema.empty_table()
        spark, s3 = self._session(query.selection)
        try:
            samples = _samples(spark, query, s3)
            keys = [_label(k).alias(k) for k in labels]
            table = (
                samples.groupBy(*keys, "stack_id")
                .agg(F.sum("samples").alias("samples"), F.sum("cpu_ns").alias("cpu_ns"))
                .orderBy(*labels, "stack_id")
                .toArrow()
            )
        except (PySparkException, Py4JError) as e:
            raise _translated(e) from None
        return table.cast(schema)

    def bucket_weights(self, query: RangeQuery, step_ms: int) -> pa.Table:
        if query.selection.empty:
            return BUCKETS_SCHEMA.empty_table()
        spark, s3 = self._session(query.selection)
        try:
            samples = _samples(spark, query, s3)
            bucket = F.floor(F.unix_millis(F.col("time")) / F.lit(step_ms)).alias("bucket")
            table = (
                samples.groupBy(bucket, "stack_id")
                .agg(F.sum("samples").alias("samples"), F.sum("cpu_ns").alias("cpu_ns"))
                .toArrow()
            )
        except (PySparkException, Py4JError) as e:
            raise _translated(e) from None
        return table.cast(BUCKETS_SCHEMA)

    def _session(self, selection: Selection) -> tuple[SparkSession, bool]:
        """The session that reads `selection`, and whether its files are on S3."""
        s3 = isinstance(selection.fs, pafs.S3FileSystem)
        spark = session(self.master, s3)
        if s3:
            _configure_s3a(spark, self.endpoint)
        return spark, s3


def check_master(master: str) -> str:
    """`master` when it is local[N], or spark://host:port with a master answering there."""
    if LOCAL_MASTER.fullmatch(master):
        return master
    if CLUSTER_MASTER.fullmatch(master):
        _probe(master)
        return master
    raise UserError(
        f"bad --spark-master {master!r}: give local, local[N], local[*] or spark://HOST:PORT"
    )


def session(master: str, s3: bool = False) -> SparkSession:
    """This process's SparkSession on `master` (a session on another master is stopped);
    with `s3`, one whose JVM has the S3A connector (a JVM without it is restarted)."""
    global _session
    s3a = s3 and not _user_names_s3a()
    if s3a and _gateway is not None and not _gateway_s3a:
        stop()
        _stop_jvm()
    if _session is not None and _session[0] == master:
        return _session[1]
    if _session is not None:
        _session[1].stop()
        _session = None
    conf = SparkConf().setMaster(master).setAll(list(_conf(master).items()))
    if s3a:
        conf.set("spark.jars.packages", s3a_package())
    spark = SparkSession(SparkContext(conf=conf, gateway=_jvm(conf, s3a)))
    spark.sparkContext.setLogLevel("ERROR")
    _session = (master, spark)
    return spark


def stop() -> None:
    """Stop this process's SparkSession, if one runs."""
    global _session
    if _session is not None:
        _session[1].stop()
        _session = None


def _conf(master: str) -> dict[str, str]:
    return {**COMMON_CONF, **LOCAL_CONF} if LOCAL_MASTER.fullmatch(master) else COMMON_CONF


def _probe(master: str) -> None:
    """Fail fast when no master answers (Spark itself would retry for a minute, then hang)."""
    for address in master.removeprefix("spark://").split(","):
        host, port = address.rsplit(":", 1)
        try:
            socket.create_connection((host, int(port)), PROBE_TIMEOUT_S).close()
            return
        except OSError:
            continue
    raise UserError(
        f"no Spark master answers at {master}: start one (sbin/start-master.sh) or fix"
        " --spark-master"
    )


def s3a_package() -> str:
    """The Maven coordinates of the S3A connector matching pyspark's Hadoop."""
    jars = glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "hadoop-client-api-*"))
    found = [m.group(1) for j in jars if (m := HADOOP_JAR.search(os.path.basename(j)))]
    if not found:
        raise UserError(
            "cannot tell pyspark's Hadoop version (no hadoop-client-api jar in pyspark/jars):"
            f" add {S3A_ARTIFACT}:<that version> with --packages; see docs/fleet.md"
        )
    return f"{S3A_ARTIFACT}:{found[0]}"


def _user_names_s3a() -> bool:
    """Whether the user's own Spark configuration brings hadoop-aws (then theirs is used)."""
    given = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    for folder in (os.environ.get("SPARK_CONF_DIR"), os.environ.get("SPARK_HOME")):
        for path in (f"{folder}/spark-defaults.conf", f"{folder}/conf/spark-defaults.conf"):
            if folder and os.path.isfile(path):
                with open(path, errors="replace") as f:
                    given += f.read()
    return "hadoop-aws" in given


def _jvm(conf: SparkConf, s3a: bool) -> Any:
    """Spark's JVM gateway, its output sent to an anonymous log file."""
    global _gateway, _gateway_s3a, _log
    if _gateway is not None:
        return _gateway
    _check_java()
    _log = tempfile.TemporaryFile()  # noqa: SIM115 -- the JVM writes to it while it lives
    try:
        _gateway = launch_gateway(conf, popen_kwargs={"stdout": _log, "stderr": _log})
    except PySparkException:
        if s3a:
            raise UserError(_no_connector(conf.get("spark.jars.packages") or "")) from None
        raise UserError(f"Spark's JVM did not start: {_log_tail()}") from None
    _gateway_s3a = s3a
    return _gateway


def _no_connector(package: str) -> str:
    return (
        f"Spark could not fetch the S3A connector {package} from Maven Central"
        f" ({_log_tail()}): where there is no Maven access, download hadoop-aws and the"
        " AWS SDK bundle it needs and name them in spark.jars (spark-defaults.conf or"
        f" PYSPARK_SUBMIT_ARGS={shlex.quote('--jars A.jar,B.jar pyspark-shell')});"
        " see docs/fleet.md"
    )


def _stop_jvm() -> None:
    """End the JVM (its stdin closing ends it) so the next session starts a new one."""
    global _gateway, _gateway_s3a
    if _gateway is None:
        return
    _gateway.shutdown()
    if getattr(_gateway, "proc", None) is not None:
        _gateway.proc.stdin.close()
        _gateway.proc.wait(60)
    _gateway, _gateway_s3a = None, False
    SparkContext._gateway = None
    SparkContext._jvm = None


def _check_java() -> None:
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.access(java, os.X_OK):
        raise UserError(
            "--engine spark needs Java 17 or newer: install openjdk-17-jre-headless"
            " or set JAVA_HOME (or use --engine duckdb)"
        )


def _log_tail() -> str:
    assert _log is not None
    _log.seek(0)
    lines = [line.strip() for line in _log.read().decode(errors="replace").splitlines()]
    return " / ".join([line for line in lines if line][-LOG_TAIL_LINES:]) or "no output"


def _configure_s3a(spark: SparkSession, endpoint: str | None) -> None:
    """Point S3A at the store's endpoint, region and credentials (boto3's, as the store's)."""
    if endpoint:
        spark.conf.set("fs.s3a.endpoint", endpoint)
        spark.conf.set("fs.s3a.path.style.access", "true")
        spark.conf.set("fs.s3a.connection.ssl.enabled", str(endpoint.startswith("https")).lower())
    spark.conf.set("fs.s3a.endpoint.region", os.environ.get("AWS_REGION", "us-east-1"))
    credentials = _credentials()
    if credentials is None:
        return  # S3A's own chain (instance roles, ...) may still find some
    spark.conf.set("fs.s3a.access.key", credentials.access_key)
    spark.conf.set("fs.s3a.secret.key", credentials.secret_key)
    if credentials.token:
        spark.conf.set("fs.s3a.session.token", credentials.token)
        spark.conf.set(
            "fs.s3a.aws.credentials.provider",
            "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider",
        )


def _credentials() -> Any:
    import boto3  # the store's own S3 client library: the same credential chain

    found = boto3.session.Session().get_credentials()
    return found.get_frozen_credentials() if found is not None else None


def _weights(spark: SparkSession, query: RangeQuery, s3: bool) -> StackWeights:
    samples = _samples(spark, query, s3)
    weights = (
        samples.groupBy("stack_id")
        .agg(F.sum("samples").alias("samples"), F.sum("cpu_ns").alias("cpu_ns"))
        .join(_rows(spark, query.selection, "stacks", s3).distinct(), "stack_id")
        .select("stack_id", "frame_ids", "samples", "cpu_ns")
        .cache()
    )
    try:
        stacks = weights.orderBy("stack_id").toArrow()
        check_frames(pc.sum(pc.list_value_length(stacks["frame_ids"])).as_py())
        used = weights.select(F.explode("frame_ids").alias("frame_id")).distinct()
        frames = (
            _rows(spark, query.selection, "frames", s3)
            .join(used, "frame_id", "left_semi")
            .distinct()
            .orderBy("frame_id")
            .toArrow()
        )
    finally:
        weights.unpersist()
    return StackWeights(stacks.cast(WEIGHTS_SCHEMA), frames.cast(FRAMES_SCHEMA))


def _read(spark: SparkSession, files: list[str], schema: pa.Schema, s3: bool) -> DataFrame:
    paths = [f"s3a://{f}" if s3 else f for f in files]
    return spark.read.schema(_ddl(schema)).parquet(*paths)


def _rows(spark: SparkSession, selection: Selection, name: str, s3: bool) -> DataFrame:
    """Table `name`'s rows in the selected files and in the head (the log not yet
    flushed: store/fleet/head.py)."""
    schema = _ddl(SCHEMAS[name])
    head = getattr(selection.head, name)
    files = getattr(selection, name)
    parts = [_read(spark, files, SCHEMAS[name], s3)] if files else []
    if head.num_rows or not parts:
        parts.append(spark.createDataFrame(head.to_pylist(), schema))
    return functools.reduce(DataFrame.unionByName, parts)


def _samples(spark: SparkSession, query: RangeQuery, s3: bool) -> DataFrame:
    """The selected samples of the query's range that meet its conditions."""
    samples = _rows(spark, query.selection, "samples", s3).where(
        (F.col("time") >= F.timestamp_millis(F.lit(to_ms(query.start))))
        & (F.col("time") < F.timestamp_millis(F.lit(to_ms(query.end))))
    )
    for c in query.where:
        samples = samples.where(_condition(c))
    return samples


def _ddl(schema: pa.Schema) -> T.StructType:
    types = {
        pa.timestamp("ms"): T.TimestampType(),
        pa.string(): T.StringType(),
        pa.int64(): T.LongType(),
        pa.int32(): T.IntegerType(),
        pa.bool_(): T.BooleanType(),
        pa.list_(pa.int64()): T.ArrayType(T.LongType()),
    }
    return T.StructType([T.StructField(f.name, types[f.type]) for f in schema])


def _label(key: str) -> Column:
    if key == TYPE_KEY:  # files written before the column hold CPU profiles
        return F.coalesce(F.col("type"), F.lit(DEFAULT_TYPE))
    if key == "pid":
        return F.col("pid").cast("string")
    if key in LABELS:
        return F.col(key)
    labels = F.from_json(F.col("labels"), T.MapType(T.StringType(), T.StringType()))
    return F.coalesce(labels.getItem(key), F.lit(""))


def _condition(c: Condition) -> Column:
    value = _label(c.key)
    # rlike finds a match anywhere; the filter language matches the whole value.
    match = value.rlike(rf"\A(?:{c.value})\z")
    return {"=": value == c.value, "!=": value != c.value, "=~": match, "!~": ~match}[c.op]


def _translated(error: Exception) -> Exception:
    """A Spark failure as FileNotFoundError (a compaction replaced a file: select again)
    or as a one-line UserError."""
    text = str(error)
    if "PATH_NOT_FOUND" in text or "FileNotFoundException" in text or "FILE_NOT_EXIST" in text:
        return FileNotFoundError(text.splitlines()[0])
    if "s3a" in text and ("S3AFileSystem" in text or "No FileSystem for scheme" in text):
        return UserError(
            f"Spark has no S3A connector: add {s3a_package()} with --packages or spark.jars"
            " (the hadoop-aws your Spark configuration names did not load); see docs/fleet.md"
        )
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(error).__name__)
    return UserError(f"Spark failed: {first}")
