# Reads a Parquet dataset of `event-dump export --to parquet` with one engine and prints, as
# JSON, what the test compares with `event-dump stats` and `print`:
#   {"tables": {TABLE: {LOG: [rows, {COLUMN: "sum"}]}},   every integer parameter column summed
#    "logs": {LOG: {COLUMN: value}},                      the logs table's integer columns
#    "threads": {LOG: events},                            the threads table's events summed
#    "types": {TABLE: {COLUMN: "type as the engine names it"}},
#    "spans": {LOG: rows},                                the spans table's rows per log
#    "span_stats": {LOG: {SPAN: [...]}},                  DuckDB and ClickHouse (chdb) only: one
#                                                         query over the spans table (SPANS_SQL)
#    "pruned": rows}                                      a count with `date` filtered (see below)
# Usage: python3 parquet_engines.py ENGINE DATASET [TRAP DATE]
# ENGINE: duckdb, datafusion, polars, spark or chdb. Sums are exact (as decimal strings). With TRAP
# and DATE, "pruned" is the count of TRAP's `logs` rows WHERE date = DATE: TRAP holds a
# partition of another date whose file is not Parquet, which only pruning keeps the engine
# from reading.
import json
import os
import sys

engine, root = sys.argv[1], sys.argv[2]
trap, prune = (sys.argv[3], sys.argv[4]) if len(sys.argv) > 4 else (None, None)
FIXED = {"log", "thread", "ticks", "ns", "time", "date", "fields_json"}
# Per log and span name: spans, their total duration, errors, events, links, spans with a
# parent, attributes, the earliest start (ns since the epoch) and the largest thread.id
# attribute: written in each engine's SQL (its map and array functions), compared by the test.
SPANS_SQL = {
    "duckdb": """SELECT log, SpanName, count(*), sum(Duration)::VARCHAR, count(*) FILTER (StatusCode = 'STATUS_CODE_ERROR'),
        sum(len("Events.Name")), sum(len("Links.SpanId")), count(*) FILTER (ParentSpanId <> ''),
        sum(cardinality(SpanAttributes)), min(epoch_ns(Timestamp))::VARCHAR,
        max(CAST(SpanAttributes['thread.id'] AS BIGINT))
        FROM {spans} GROUP BY log, SpanName""",
    "chdb": """SELECT log, SpanName, count(), toString(sum(Duration)), countIf(StatusCode = 'STATUS_CODE_ERROR'),
        sum(length(`Events.Name`)), sum(length(`Links.SpanId`)), countIf(ParentSpanId != ''),
        sum(length(mapKeys(SpanAttributes))), toString(min(toUnixTimestamp64Nano(Timestamp))),
        max(toInt64(SpanAttributes['thread.id']))
        FROM {spans} GROUP BY log, SpanName""",
}
tables = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
# EVENT_PARQUET_TABLES (comma-separated) reads only those tables (Spark: each costs jobs).
only = os.environ.get("EVENT_PARQUET_TABLES")
if only:
    tables = [t for t in tables if t in only.split(",")]
result = {"tables": {}, "logs": {}, "threads": {}, "types": {}, "pruned": None}


def integer_type(name):
    name = name.lower().replace(" ", "")
    if name.startswith("decimal"):
        return name.endswith(",0)")
    return any(t in name for t in ("int", "long", "short", "byte")) and "interval" not in name


if engine == "duckdb":
    import duckdb

    con = duckdb.connect()

    def rel(t):
        return f"read_parquet('{root}/{t}/*/*.parquet', hive_partitioning = true)"

    def types(t):
        return {r[0]: r[1] for r in con.execute(f"DESCRIBE SELECT * FROM {rel(t)}").fetchall()}

    def grouped(t, ints):
        sums = "".join(f", sum(\"{c}\")::HUGEINT::VARCHAR" for c in ints)
        return con.execute(f"SELECT log, count(*){sums} FROM {rel(t)} GROUP BY log").fetchall()

    def rows(t, cols):
        return con.execute(f"SELECT {', '.join(cols)} FROM {rel(t)}").fetchall()

    def pruned(date):
        logs = f"read_parquet('{trap}/logs/*/*.parquet', hive_partitioning = true)"
        return con.execute(f"SELECT count(*) FROM {logs} WHERE date = DATE '{date}'").fetchone()[0]

elif engine == "datafusion":
    import datafusion
    import pyarrow as pa

    ctx = datafusion.SessionContext()
    # A name with a dot is a schema and a table to DataFusion: each table is registered as
    # t0, t1, ...
    alias = {t: f"t{i}" for i, t in enumerate(tables)}
    for t in tables:
        ctx.register_parquet(
            alias[t], os.path.join(root, t) + "/", table_partition_cols=[("date", pa.string())], file_extension=".parquet"
        )

    def types(t):
        return {f.name: str(f.type) for f in ctx.table(alias[t]).schema()}

    def grouped(t, ints):
        sums = "".join(f", CAST(sum(CAST(\"{c}\" AS DECIMAL(38, 0))) AS VARCHAR)" for c in ints)
        batches = ctx.sql(f"SELECT log, count(*){sums} FROM {alias[t]} GROUP BY log").collect()
        return [tuple(row) for b in batches for row in zip(*(col.to_pylist() for col in b.columns))]

    def rows(t, cols):
        batches = ctx.sql(f"SELECT {', '.join(cols)} FROM {alias[t]}").collect()
        return [tuple(row) for b in batches for row in zip(*(col.to_pylist() for col in b.columns))]

    def pruned(date):
        # The schema given, as a user gives it: inferring it would read every file.
        schema = ctx.table(alias["logs"]).schema()
        schema = pa.schema([f for f in schema if f.name != "date"])
        ctx.register_parquet(
            "trap",
            os.path.join(trap, "logs") + "/",
            table_partition_cols=[("date", pa.string())],
            file_extension=".parquet",
            schema=schema,
        )
        batches = ctx.sql(f"SELECT count(*) FROM trap WHERE date = '{date}'").collect()
        return batches[0].column(0).to_pylist()[0]

elif engine == "polars":
    import polars as pl

    def frame(t, at=root):
        return pl.scan_parquet(os.path.join(at, t, "*", "*.parquet"), hive_partitioning=True)

    def types(t):
        return {k: str(v) for k, v in frame(t).collect_schema().items()}

    def grouped(t, ints):
        # Polars' sums of 64-bit columns are 64-bit: the values are summed exactly in Python.
        df = frame(t).select(["log", *ints]).collect()
        out = {}
        for row in df.iter_rows():
            entry = out.setdefault(row[0], [0, [0] * len(ints)])
            entry[0] += 1
            entry[1] = [s + v for s, v in zip(entry[1], row[1:])]
        return [(log, n, *map(str, sums)) for log, (n, sums) in out.items()]

    def rows(t, cols):
        return frame(t).select(cols).collect().rows()

    def pruned(date):
        import datetime

        day = datetime.date.fromisoformat(date)
        return frame("logs", trap).filter(pl.col("date") == day).select(pl.len()).collect().item()

elif engine == "spark":
    os.environ.setdefault("PYSPARK_SUBMIT_ARGS", "--driver-memory 1g pyspark-shell")
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.session.timeZone", "UTC")
        # Spark reads no nanosecond timestamps (the spans table's, as otel_traces has them):
        # this reads them as bigint nanoseconds, as docs/OUTPUT.md says.
        .config("spark.sql.legacy.parquet.nanosAsLong", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    for t in tables:
        spark.read.parquet(os.path.join(root, t)).createOrReplaceTempView(f"`{t}`")

    def types(t):
        return {f.name: f.dataType.simpleString() for f in spark.table(f"`{t}`").schema.fields}

    def grouped(t, ints):
        sums = "".join(f", CAST(sum(CAST(`{c}` AS DECIMAL(38, 0))) AS STRING)" for c in ints)
        return [tuple(r) for r in spark.sql(f"SELECT log, count(*){sums} FROM `{t}` GROUP BY log").collect()]

    def rows(t, cols):
        return [tuple(r) for r in spark.sql(f"SELECT {', '.join(cols)} FROM `{t}`").collect()]

    def pruned(date):
        # The schema given, as a user gives it: merging schemas would read every file.
        schema = spark.table("logs").schema
        frame = spark.read.schema(schema).parquet(os.path.join(trap, "logs"))
        return frame.where(f"date = DATE '{date}'").count()

elif engine == "chdb":
    import chdb

    HIVE = " SETTINGS use_hive_partitioning = 1"

    def rel(t, at=root):
        return f"file('{at}/{t}/*/*.parquet', Parquet)"

    def query(sql):
        out = chdb.query(sql + HIVE, "JSONCompact")
        return [tuple(r) for r in json.loads(out.bytes() or b'{"data": []}')["data"]]

    def types(t):
        return {r[0]: r[1] for r in query(f"DESCRIBE {rel(t)}")}

    def grouped(t, ints):
        sums = "".join(f", toString(sum(toInt256(`{c}`)))" for c in ints)
        return query(f"SELECT log, count(){sums} FROM {rel(t)} GROUP BY log")

    def rows(t, cols):
        return query(f"SELECT {', '.join(cols)} FROM {rel(t)}")

    def pruned(date):
        return query(f"SELECT count() FROM {rel('logs', trap)} WHERE date = '{date}'")[0][0]

else:
    sys.exit(f"unknown engine {engine}")

for t in tables:
    ty = types(t)
    result["types"][t] = ty
    if t == "logs":
        cols = [c for c, v in ty.items() if integer_type(v) and c != "date"]
        logs = rows(t, ["log", *cols])
        result["logs_rows"] = len(logs)
        for row in logs:
            result["logs"][row[0]] = dict(zip(cols, (None if v is None else int(v) for v in row[1:])))
        continue
    if t == "spans":
        result["spans"] = {}
        for (log,) in rows(t, ["log"]):
            result["spans"][log] = result["spans"].get(log, 0) + 1
        if engine in SPANS_SQL:
            spans = rel(t) if engine == "chdb" else f"read_parquet('{root}/spans/*/*.parquet', hive_partitioning = true)"
            stats = {}
            for r in (query if engine == "chdb" else lambda q: con.execute(q).fetchall())(SPANS_SQL[engine].format(spans=spans)):
                stats.setdefault(r[0], {})[r[1]] = [str(v) for v in r[2:]]
            result["span_stats"] = stats
        continue
    if t == "threads":
        for log, events in rows(t, ["log", "events"]):
            result["threads"][log] = result["threads"].get(log, 0) + int(events)
        continue
    ints = [c for c, v in ty.items() if integer_type(v) and c not in FIXED]
    result["tables"][t] = {
        r[0]: [int(r[1]), {c: str(v) for c, v in zip(ints, r[2:])}] for r in grouped(t, ints)
    }
if prune:
    result["pruned"] = int(pruned(prune))
print(json.dumps(result))
