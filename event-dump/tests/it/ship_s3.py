# The S3 side of `ship`'s tests (ship.rs), with AWS's own SDK (boto3) against moto's server:
#
#   python3 ship_s3.py mb URL BUCKET            makes the bucket
#   python3 ship_s3.py ls URL BUCKET PREFIX     prints, as JSON, {KEY: {size, sha256, meta,
#                                               modified}} of the objects under PREFIX, each
#                                               one's SHA-256 that of its bytes as downloaded
#   python3 ship_s3.py fetch URL BUCKET PREFIX DIR
#                                               downloads the objects under PREFIX into DIR,
#                                               each by its key's last part (as `aws s3 cp
#                                               --recursive` does)
#   python3 ship_s3.py create-only URL BUCKET   puts one key twice with If-None-Match: *;
#                                               prints `honoured` if the second is refused (412)
#   python3 ship_s3.py proxy PORT UPSTREAM [race-head] [fail-put] [slow-put=SECONDS]
#                                               forwards 127.0.0.1:PORT to 127.0.0.1:UPSTREAM,
#                                               and: `race-head` answers each key's first HEAD
#                                               404 (as if another shipper's put landed just
#                                               after it), `fail-put` each key's first PUT 503
#                                               (a transient failure), `slow-put` holds each
#                                               PUT's answer (after the upstream wrote it) for
#                                               SECONDS; prints `ready`, serves until killed.
import hashlib
import http.client
import http.server
import json
import os
import sys
import threading
import time


def client(url):
    import boto3

    keys = {"aws_access_key_id": "test", "aws_secret_access_key": "test"}
    return boto3.client("s3", endpoint_url=url, region_name="us-east-1", **keys)


def listing(url, bucket, prefix):
    s3 = client(url)
    out = {}
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    for page in pages:
        for o in page.get("Contents", []):
            got = s3.get_object(Bucket=bucket, Key=o["Key"])
            body = got["Body"].read()
            out[o["Key"]] = {
                "size": o["Size"],
                "sha256": hashlib.sha256(body).hexdigest(),
                "meta": got.get("Metadata", {}),
                "modified": o["LastModified"].isoformat(),
                "etag": o["ETag"],
            }
    return out


def create_only(url, bucket):
    from botocore.exceptions import ClientError

    s3 = client(url)
    s3.put_object(Bucket=bucket, Key="create-only-probe", Body=b"first", IfNoneMatch="*")
    try:
        s3.put_object(Bucket=bucket, Key="create-only-probe", Body=b"second", IfNoneMatch="*")
    except ClientError as e:
        code = e.response["ResponseMetadata"]["HTTPStatusCode"]
        body = s3.get_object(Bucket=bucket, Key="create-only-probe")["Body"].read()
        return "honoured" if code == 412 and body == b"first" else f"refused with {code}"
    return "ignored"


def proxy(port, upstream, flags):
    race_head = "race-head" in flags
    fail_put = "fail-put" in flags
    slow = [float(f.split("=", 1)[1]) for f in flags if f.startswith("slow-put=")]
    seen = set()
    lock = threading.Lock()

    def first(what, path):
        with lock:
            if (what, path) in seen:
                return False
            seen.add((what, path))
            return True

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def answer(self, status, body=b""):
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def forward(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            path = self.path.split("?")[0]
            if self.command == "HEAD" and race_head and first("HEAD", path):
                return self.answer(404)
            if self.command == "PUT" and fail_put and first("PUT", path):
                return self.answer(503, b"<Error><Code>SlowDown</Code></Error>")
            up = http.client.HTTPConnection("127.0.0.1", upstream, timeout=60)
            headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
            up.request(self.command, self.path, body=body, headers=headers)
            got = up.getresponse()
            data = got.read()
            if self.command == "PUT" and slow:
                time.sleep(slow[0])
            self.send_response(got.status)
            for k, v in got.getheaders():
                if k.lower() not in ("content-length", "connection", "transfer-encoding", "date", "server"):
                    self.send_header(k, v)
            # A HEAD's length is the object's, as the store said it.
            length = got.getheader("Content-Length", "0") if self.command == "HEAD" else str(len(data))
            self.send_header("Content-Length", length)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "mb":
        client(args[0]).create_bucket(Bucket=args[1])
    elif command == "ls":
        print(json.dumps(listing(args[0], args[1], args[2])))
    elif command == "fetch":
        s3 = client(args[0])
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=args[1], Prefix=args[2]):
            for o in page.get("Contents", []):
                s3.download_file(args[1], o["Key"], os.path.join(args[3], o["Key"].rsplit("/", 1)[-1]))
    elif command == "create-only":
        print(create_only(args[0], args[1]))
    elif command == "proxy":
        proxy(int(args[0]), int(args[1]), args[2:])
    else:
        sys.exit(f"unknown command {command}")
