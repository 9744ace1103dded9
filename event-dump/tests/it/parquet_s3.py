# Serves a Parquet dataset of `event-dump export --to parquet` from an S3-compatible server
# (moto's server mode, on a free local port), copied there as `aws s3 sync` would, and reads
# every table back with Polars over s3://. Prints, as JSON, {TABLE: {LOG: rows}}.
# Usage: python3 parquet_s3.py DATASET
import json
import os
import socket
import subprocess
import sys
import time

root = sys.argv[1]
probe = socket.socket()
probe.bind(("127.0.0.1", 0))
port = probe.getsockname()[1]
probe.close()
server = subprocess.Popen(
    [sys.executable, "-m", "moto.server", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
)
try:
    import boto3
    import polars as pl

    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    keys = {"aws_access_key_id": "test", "aws_secret_access_key": "test"}
    s3 = boto3.client("s3", endpoint_url=url, region_name="us-east-1", **keys)
    s3.create_bucket(Bucket="fleet")
    for d, _, files in os.walk(root):
        for f in files:
            path = os.path.join(d, f)
            s3.upload_file(path, "fleet", os.path.relpath(path, root))
    options = {"aws_endpoint_url": url, "aws_region": "us-east-1", "aws_allow_http": "true", **keys}
    out = {}
    for table in sorted(t for t in os.listdir(root) if os.path.isdir(os.path.join(root, t))):
        frame = pl.scan_parquet(f"s3://fleet/{table}/*/*.parquet", hive_partitioning=True, storage_options=options)
        counts = frame.group_by("log").agg(pl.len()).collect()
        out[table] = {log: n for log, n in counts.rows()}
    print(json.dumps(out))
finally:
    server.terminate()
    server.wait()
