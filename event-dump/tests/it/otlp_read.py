# Reads OTLP written by `event-dump export --to otlp` with OpenTelemetry's own protobuf
# classes (PyPI opentelemetry-proto) and prints, as JSON, what the test compares:
#   {"resources": [{ATTRIBUTE: value}], "spans": [SPAN], "metrics": [METRIC]}
# SPAN: {"trace", "span", "parent", "name", "kind", "start", "end", "flags", "scope",
#        "attributes": {KEY: value}, "events": [[name, time, {KEY: value}]],
#        "links": [[trace, span, {KEY: value}]], "status": [code, message], "resource": i}
# METRIC: [name, unit, [[time, value], ...]]
# Usage: python3 otlp_read.py traces|metrics|json-traces|json-metrics FILE...
#   traces/metrics: each FILE one protobuf request (a file, or a body a receiver got);
#   json-*: each FILE lines of OTLP JSON (ids in hex, 64-bit integers as strings), read
#   with the protobuf classes' JSON parser after the ids are made base64, as the protobuf
#   JSON mapping has bytes.
import base64
import json
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def attributes(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


def hex_ids(obj):
    """OTLP JSON's hex ids as the protobuf JSON mapping's base64."""
    if isinstance(obj, dict):
        for k, v in list(obj.items()):
            if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str):
                obj[k] = base64.b64encode(bytes.fromhex(v)).decode()
            else:
                hex_ids(v)
    elif isinstance(obj, list):
        for v in obj:
            hex_ids(v)
    return obj


def requests(kind, files):
    cls = ExportTraceServiceRequest if kind.endswith("traces") else ExportMetricsServiceRequest
    for f in files:
        data = open(f, "rb").read()
        if kind.startswith("json"):
            for line in data.decode().splitlines():
                if line.strip():
                    yield json_format.Parse(json.dumps(hex_ids(json.loads(line))), cls())
        else:
            r = cls()
            r.ParseFromString(data)
            yield r


kind, files = sys.argv[1], sys.argv[2:]
out = {"resources": [], "spans": [], "metrics": []}
resources = {}


def resource_index(res):
    attrs = attributes(res.attributes)
    key = json.dumps(attrs, sort_keys=True)
    if key not in resources:
        resources[key] = len(out["resources"])
        out["resources"].append(attrs)
    return resources[key]


for request in requests(kind, files):
    if kind.endswith("traces"):
        for rs in request.resource_spans:
            r = resource_index(rs.resource)
            for ss in rs.scope_spans:
                for s in ss.spans:
                    out["spans"].append(
                        {
                            "trace": s.trace_id.hex(),
                            "span": s.span_id.hex(),
                            "parent": s.parent_span_id.hex(),
                            "trace_state": s.trace_state,
                            "name": s.name,
                            "kind": s.kind,
                            "start": s.start_time_unix_nano,
                            "end": s.end_time_unix_nano,
                            "flags": s.flags,
                            "scope": [ss.scope.name, ss.scope.version],
                            "attributes": attributes(s.attributes),
                            "events": [[e.name, e.time_unix_nano, attributes(e.attributes)] for e in s.events],
                            "links": [[l.trace_id.hex(), l.span_id.hex(), attributes(l.attributes)] for l in s.links],
                            "status": [s.status.code, s.status.message],
                            "resource": r,
                        }
                    )
    else:
        for rm in request.resource_metrics:
            resource_index(rm.resource)
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    assert m.WhichOneof("data") == "gauge", m
                    points = [
                        [p.time_unix_nano, p.as_int if p.WhichOneof("value") == "as_int" else p.as_double]
                        for p in m.gauge.data_points
                    ]
                    out["metrics"].append([m.name, m.unit, points])
print(json.dumps(out))
