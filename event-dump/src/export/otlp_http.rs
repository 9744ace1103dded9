//! OTLP/HTTP with protobuf bodies ([OTLP's specification](https://opentelemetry.io/docs/specs/otlp/#otlphttp)):
//! each request a `POST` of `application/x-protobuf` to the signal's URL, by ureq (a small
//! synchronous client; no OTel SDK, no async runtime).
//!
//! The endpoint and its options come from the variables the OpenTelemetry SDKs read, a
//! command line's flags first ([`HttpSink::from_environment`]):
//!
//! | variable | meaning |
//! |---|---|
//! | `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `..._METRICS_ENDPOINT` | the signal's URL, as it is |
//! | `OTEL_EXPORTER_OTLP_ENDPOINT` | a base URL: `v1/traces` and `v1/metrics` are appended (default `http://localhost:4318`) |
//! | `OTEL_EXPORTER_OTLP_HEADERS`, `..._TRACES_HEADERS`, `..._METRICS_HEADERS` | `key=value,...` headers of every request (percent-encoded) |
//! | `OTEL_EXPORTER_OTLP_TIMEOUT`, `..._TRACES_TIMEOUT`, `..._METRICS_TIMEOUT` | milliseconds a request may take (default 10000) |
//! | `OTEL_EXPORTER_OTLP_COMPRESSION`, `..._TRACES_COMPRESSION`, `..._METRICS_COMPRESSION` | `gzip` or `none` (default) |
//! | `OTEL_EXPORTER_OTLP_PROTOCOL`, `..._TRACES_PROTOCOL`, `..._METRICS_PROTOCOL` | only `http/protobuf` is spoken; another is refused in one line |
//!
//! **Retries** (OTLP's rules): a request answered 429, 502, 503 or 504, or that could not be
//! sent (no connection, a timeout), is sent again after the answer's `Retry-After` (seconds)
//! or else after 1, 2, 4, 8 and 16 seconds; after [`RETRIES`] retries the export stops with
//! an error. Any other answer that is not a success refuses the batch: it is counted as
//! refused and the export goes on. A success that is a partial one (`partial_success` with
//! `rejected_spans` or `rejected_data_points`) counts those as refused.
//!
//! [`export`] is `export --to otlp` to an endpoint. This module stands on `otlp` (the
//! messages, their batches, the [`Sink`] it implements), which names nothing of it.

use super::Window;
use super::otlp::{self, Batcher, Body, Encoding, Signal, Sink, key_value_list, report, say_counts, send_logs};
use crate::log::{DumpError, Log};
use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Duration;

/// Retries of one request before the export gives up.
pub(crate) const RETRIES: u32 = 5;
/// The longest wait a `Retry-After` is taken at.
const MOST_WAIT: Duration = Duration::from_secs(60);

/// One signal's URL and options.
struct Target {
    url: String,
    headers: Vec<(String, String)>,
    timeout: Duration,
    gzip: bool,
}

/// Requests sent to an OTLP/HTTP endpoint.
pub(crate) struct HttpSink {
    agent: ureq::Agent,
    traces: Target,
    metrics: Target,
    /// Requests sent again (each retry), for the report.
    pub(crate) retries: u64,
    /// Why the last refused batch was refused.
    pub(crate) last_refusal: Option<String>,
}

/// A variable of `signal` (`OTEL_EXPORTER_OTLP_TRACES_<what>`), else the general one.
fn variable(signal: Signal, what: &str) -> Option<String> {
    let specific = match signal {
        Signal::Traces => format!("OTEL_EXPORTER_OTLP_TRACES_{what}"),
        Signal::Metrics => format!("OTEL_EXPORTER_OTLP_METRICS_{what}"),
    };
    std::env::var(specific)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .or_else(|| std::env::var(format!("OTEL_EXPORTER_OTLP_{what}")).ok().filter(|v| !v.trim().is_empty()))
}

/// `base` with `path` appended, one `/` between.
fn join(base: &str, path: &str) -> String {
    format!("{}/{path}", base.trim_end_matches('/'))
}

impl HttpSink {
    /// The sink of the endpoint `url` (a base URL given on the command line) or, without
    /// one, of the environment (module docs); `headers` (`key=value`, from `--header`) are
    /// added to the environment's.
    pub(crate) fn from_environment(url: Option<&str>, headers: &[String]) -> Result<HttpSink, DumpError> {
        let mut flag_headers = Vec::new();
        for h in headers {
            let Some((k, v)) = h.split_once('=') else {
                return Err(DumpError::new(format!("--header {h:?}: give it as NAME=VALUE")));
            };
            flag_headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
        let target = |signal: Signal| -> Result<Target, DumpError> {
            if let Some(protocol) = variable(signal, "PROTOCOL")
                && protocol.trim() != "http/protobuf"
            {
                return Err(DumpError::new(format!(
                    "OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: event-dump sends OTLP over HTTP with protobuf only \
                     (http/protobuf, usually port 4318); unset it or set it to http/protobuf"
                )));
            }
            let url = match url {
                Some(base) => join(base, signal.path()),
                None => {
                    let set = |name: String| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
                    match set(format!("OTEL_EXPORTER_OTLP_{}_ENDPOINT", signal_name(signal))) {
                        Some(url) => url,
                        None => {
                            let base = set("OTEL_EXPORTER_OTLP_ENDPOINT".to_owned());
                            join(base.as_deref().unwrap_or("http://localhost:4318"), signal.path())
                        }
                    }
                }
            };
            let url = url.trim().to_owned();
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(DumpError::new(format!("{url}: an OTLP/HTTP endpoint is an http:// or https:// URL")));
            }
            if url.starts_with("https://") && !cfg!(feature = "otlp-tls") {
                return Err(DumpError::new(format!(
                    "{url}: this event-dump was built without TLS; build it with `--features otlp-tls` for an \
                     https:// endpoint, or send to a collector over http://"
                )));
            }
            let mut headers = variable(signal, "HEADERS").map(|h| key_value_list(&h)).unwrap_or_default();
            headers.extend(flag_headers.iter().cloned());
            let timeout = match variable(signal, "TIMEOUT") {
                Some(ms) => Duration::from_millis(ms.trim().parse::<u64>().map_err(|_| {
                    DumpError::new(format!("OTEL_EXPORTER_OTLP_TIMEOUT={ms}: give milliseconds, such as 10000"))
                })?),
                None => Duration::from_secs(10),
            };
            let gzip = match variable(signal, "COMPRESSION").as_deref().map(str::trim) {
                None | Some("none") => false,
                Some("gzip") => true,
                Some(other) => {
                    return Err(DumpError::new(format!("OTEL_EXPORTER_OTLP_COMPRESSION={other}: give gzip or none")));
                }
            };
            Ok(Target { url, headers, timeout, gzip })
        };
        let traces = target(Signal::Traces)?;
        let metrics = target(Signal::Metrics)?;
        let config = ureq::Agent::config_builder().http_status_as_error(false).build();
        Ok(HttpSink { agent: ureq::Agent::new_with_config(config), traces, metrics, retries: 0, last_refusal: None })
    }

    /// The endpoint as the report names it: the traces' URL.
    pub(crate) fn shown(&self) -> String {
        self.traces.url.clone()
    }

    /// One attempt: the answer's status, `Retry-After` and body; `Err` when nothing was
    /// answered.
    fn attempt(&self, target: &Target, body: &[u8]) -> Result<(u16, Option<Duration>, Vec<u8>), String> {
        let mut request = self
            .agent
            .post(&target.url)
            .config()
            .timeout_global(Some(target.timeout))
            .build()
            .header("Content-Type", "application/x-protobuf");
        for (k, v) in &target.headers {
            request = request.header(k.as_str(), v.as_str());
        }
        let compressed;
        let bytes = if target.gzip {
            request = request.header("Content-Encoding", "gzip");
            let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            z.write_all(body).map_err(|e| e.to_string())?;
            compressed = z.finish().map_err(|e| e.to_string())?;
            &compressed[..]
        } else {
            body
        };
        let mut response = request.send(bytes).map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|s| Duration::from_secs(s).min(MOST_WAIT));
        let body = response.body_mut().read_to_vec().unwrap_or_default();
        Ok((status, retry_after, body))
    }
}

fn signal_name(signal: Signal) -> &'static str {
    match signal {
        Signal::Traces => "TRACES",
        Signal::Metrics => "METRICS",
    }
}

/// Whether an answer of `status` is worth sending again (OTLP/HTTP's retryable codes).
fn retryable(status: u16) -> bool {
    matches!(status, 429 | 502 | 503 | 504)
}

/// The items a success refused: its `partial_success` (field 1) `rejected_*` (field 1, an
/// int64) and `error_message` (field 2).
fn partial_success(body: &[u8]) -> (u64, String) {
    let Some(partial) = proto_field(body, 1) else { return (0, String::new()) };
    let rejected = proto_varint_field(partial, 1).unwrap_or(0);
    let message = proto_field(partial, 2).map(|m| String::from_utf8_lossy(m).into_owned()).unwrap_or_default();
    (rejected, message)
}

/// The message of a `google.rpc.Status` body (field 2), if the body is one.
fn status_message(body: &[u8]) -> Option<String> {
    proto_field(body, 2).map(|m| String::from_utf8_lossy(m).into_owned()).filter(|m| !m.is_empty())
}

/// A varint at `*at`, moved past it.
fn read_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

/// Walks the fields of `message`: each field number, wire type and its value's bytes (a
/// varint's value in `varint`).
fn fields(message: &[u8]) -> impl Iterator<Item = (u64, u64, &[u8], u64)> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let key = read_varint(message, &mut at)?;
        let (number, wire) = (key >> 3, key & 7);
        match wire {
            0 => {
                let v = read_varint(message, &mut at)?;
                Some((number, wire, &message[at..at], v))
            }
            1 => {
                let b = message.get(at..at + 8)?;
                at += 8;
                Some((number, wire, b, 0))
            }
            2 => {
                let len = usize::try_from(read_varint(message, &mut at)?).ok()?;
                let b = message.get(at..at.checked_add(len)?)?;
                at += len;
                Some((number, wire, b, 0))
            }
            5 => {
                let b = message.get(at..at + 4)?;
                at += 4;
                Some((number, wire, b, 0))
            }
            _ => None,
        }
    })
}

fn proto_field(message: &[u8], number: u64) -> Option<&[u8]> {
    fields(message).find(|(n, w, _, _)| *n == number && *w == 2).map(|(_, _, b, _)| b)
}

fn proto_varint_field(message: &[u8], number: u64) -> Option<u64> {
    fields(message).find(|(n, w, _, _)| *n == number && *w == 0).map(|(_, _, _, v)| v)
}

impl Sink for HttpSink {
    fn send(&mut self, signal: Signal, body: Body, items: u64) -> io::Result<u64> {
        let Body::Proto(body) = body else { return Err(io::Error::other("OTLP/HTTP takes protobuf")) };
        let target = match signal {
            Signal::Traces => &self.traces,
            Signal::Metrics => &self.metrics,
        };
        let mut wait = Duration::from_secs(1);
        for attempt in 0..=RETRIES {
            let answer = self.attempt(target, &body);
            let (why, after) = match answer {
                Ok((status, _, reply)) if (200..300).contains(&status) => {
                    let (rejected, message) = partial_success(&reply);
                    if rejected > 0 {
                        self.last_refusal = Some(format!("partial success: {message}"));
                    }
                    return Ok(rejected.min(items));
                }
                Ok((status, retry_after, _)) if retryable(status) => (format!("HTTP {status}"), retry_after),
                Ok((status, _, reply)) => {
                    let message = status_message(&reply).map(|m| format!(": {m}")).unwrap_or_default();
                    self.last_refusal = Some(format!("HTTP {status}{message}"));
                    eprintln!(
                        "event-dump: {}: refused a batch of {items} {} (HTTP {status}{message}); going on with the next",
                        target.url,
                        signal.items()
                    );
                    return Ok(items);
                }
                Err(e) => (e, None),
            };
            if attempt == RETRIES {
                return Err(io::Error::other(format!("{why}, and again after {RETRIES} retries: giving up")));
            }
            let pause = after.unwrap_or(wait);
            eprintln!("event-dump: {}: {why}; sending the batch again in {} s", target.url, pause.as_secs_f64());
            std::thread::sleep(pause);
            self.retries += 1;
            wait = (wait * 2).min(Duration::from_secs(16));
        }
        Ok(0)
    }

    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `export --to otlp` to an endpoint: `-o http://HOST:PORT`, or without `-o` the endpoint
/// of the environment ([`HttpSink::from_environment`]). What was sent and refused is said on
/// stdout; exit 1 when anything was refused.
pub(crate) fn export(
    logs: &mut [Log],
    url: Option<&str>,
    headers: &[String],
    window: &mut Window,
) -> Result<ExitCode, DumpError> {
    let sources = otlp::sources(logs);
    let sink = HttpSink::from_environment(url, headers)?;
    let shown = sink.shown();
    let mut batcher = Batcher::new(sources, sink, Encoding::Proto);
    let sent = send_logs(logs, &mut batcher, window).and_then(|r| Ok((r, batcher.finish()?)));
    let ((ledgers, unpaired), counts) = match sent {
        Ok(s) => s,
        Err(e) => {
            let c = batcher.counts;
            return Err(DumpError::new(format!(
                "{shown}: {e}; {} spans and {} data points were sent before (run again to send the rest: the spans' ids are the same)",
                c.spans, c.points
            )));
        }
    };
    say_counts(&shown, counts);
    report(&ledgers, unpaired, window);
    Ok(if counts.spans_refused + counts.points_refused > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_success_says_what_it_refused() {
        // ExportTraceServiceResponse { partial_success { rejected_spans: 3, error_message: "no" } }
        let body = [0x0a, 0x06, 0x08, 0x03, 0x12, 0x02, b'n', b'o'];
        assert_eq!(partial_success(&body), (3, "no".to_owned()));
        assert_eq!(partial_success(&[]), (0, String::new()));
        assert_eq!(partial_success(&[0xff]), (0, String::new()), "a body that is not protobuf refuses nothing");
    }

    #[test]
    fn endpoints_are_joined_as_the_sdks_join_them() {
        assert_eq!(join("http://c:4318", "v1/traces"), "http://c:4318/v1/traces");
        assert_eq!(join("http://c:4318/", "v1/traces"), "http://c:4318/v1/traces");
        assert!(retryable(503) && retryable(429) && !retryable(400) && !retryable(500));
    }
}
