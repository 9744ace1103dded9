//! Who wrote a log, as every reader shows it where it once showed a pid (docs/OUTPUT.md,
//! "Who wrote a log"): the host (the header's, `EVENT_HOST` when the recorder was given one)
//! and the service (the `service` label, `EVENT_LABELS`; the program's name without one).
//! Two containers' programs are both pid 1: their hosts and services tell them apart, and the
//! pid (then the recording id) is added only where two logs would read the same.

use event_format::wire::Header;

/// The service of the log `h` heads: its `service` label, else its program.
pub(crate) fn service(h: &Header) -> &str {
    h.properties.label("service").unwrap_or(&h.producer.program)
}

/// `text` with every character that is not an ASCII letter, digit, `.`, `_` or `-` made `_`:
/// what a thread's prefix holds needs no escaping in text, JSON or CSV, and never reads as
/// its `/` or `:`.
fn clean(text: &str) -> String {
    let cleaned: String =
        text.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' }).collect();
    if cleaned.is_empty() { "_".to_owned() } else { cleaned }
}

/// Each log's name where several are read together (`print`'s and `latency`'s thread
/// prefix): `host/service` (`service` alone when the header names no host), then `[pid]`
/// where two logs would read the same, then `@` and the first 8 digits of the recording id
/// where that is not enough either.
pub(crate) fn prefixes(headers: &[&Header]) -> Vec<String> {
    unique(
        headers,
        |h| {
            let service = clean(service(h));
            if h.producer.host.is_empty() { service } else { format!("{}/{service}", clean(&h.producer.host)) }
        },
        |base, h| format!("{base}[{}]", h.producer.pid),
        |name, id| format!("{name}@{id}"),
    )
}

/// Each log's process name in the viewers' exports (Perfetto, Chrome): `service on host`
/// (the service alone without a host), then ` (pid N)` where two logs would read the same,
/// then ` [recording]`.
pub(crate) fn process_names(headers: &[&Header]) -> Vec<String> {
    unique(
        headers,
        |h| {
            let service = service(h);
            if h.producer.host.is_empty() { service.to_owned() } else { format!("{service} on {}", h.producer.host) }
        },
        |base, h| format!("{base} (pid {})", h.producer.pid),
        |name, id| format!("{name} [{id}]"),
    )
}

/// The name of one log in a line that speaks of it alone (`top`'s title, `summary`'s line
/// of each log): its process name ([`process_names`] of it alone: `api on host-a`), then its
/// pid and, where the service is not the program, the program, as `stats` gives them:
/// `api on host-a (pid 1, program server)`.
pub(crate) fn described(h: &Header) -> String {
    let name = process_names(&[h]).remove(0);
    if service(h) == h.producer.program {
        format!("{name} (pid {})", h.producer.pid)
    } else {
        format!("{name} (pid {}, program {})", h.producer.pid, h.producer.program)
    }
}

/// `name` of each header, made unique: `with_pid` where two read the same, then `with_id`
/// with the recording id's first 8 digits (the log's place, from 1, for a header without
/// one) where that is not enough either.
fn unique(
    headers: &[&Header],
    name: impl Fn(&Header) -> String,
    with_pid: impl Fn(&str, &Header) -> String,
    with_id: impl Fn(&str, &str) -> String,
) -> Vec<String> {
    let count = |names: &[String], n: &String| names.iter().filter(|m| *m == n).count();
    let bases: Vec<String> = headers.iter().map(|h| name(h)).collect();
    let pids: Vec<String> =
        bases.iter().zip(headers).map(|(b, h)| if count(&bases, b) > 1 { with_pid(b, h) } else { b.clone() }).collect();
    pids.iter()
        .zip(headers)
        .enumerate()
        .map(|(i, (n, h))| {
            if count(&pids, n) < 2 {
                return n.clone();
            }
            match h.properties.recording {
                Some(id) => with_id(n, &id.to_hex()[..8]),
                None => with_id(n, &(i + 1).to_string()),
            }
        })
        .collect()
}

/// The labels of `h` as one line (`service=api version=1.4.2`), values quoted where they
/// need it; `None` without labels.
pub(crate) fn labels_text(h: &Header) -> Option<String> {
    if h.properties.labels.is_empty() {
        return None;
    }
    let parts: Vec<String> = h
        .properties
        .labels
        .iter()
        .map(|(k, v)| {
            let plain = !v.is_empty() && v.chars().all(|c| c.is_ascii_graphic() && c != '"' && c != '\\');
            if plain {
                format!("{k}={v}")
            } else {
                let mut quoted = String::new();
                let _ = event_format::text::write_text(&mut quoted, &event_format::wire::Text::new(v));
                format!("{k}={quoted}")
            }
        })
        .collect();
    Some(parts.join(" "))
}

/// The labels of `h` as a JSON object (`{"service":"api"}`), `{}` without any: the table
/// exports' `labels` column.
pub(crate) fn labels_json(h: &Header) -> String {
    let mut out = String::from("{");
    for (i, (k, v)) in h.properties.labels.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        crate::json::string(&mut out, k);
        out.push(':');
        crate::json::string(&mut out, v);
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use event_format::wire::{Order, RecordingId};

    fn header(host: &str, service: Option<&str>, pid: u64, id: u8) -> Header {
        let mut h = event_format::testing::sample_header(Order::Little);
        h.producer.host = host.to_owned();
        h.producer.pid = pid;
        h.producer.program = "svc".to_owned();
        h.properties.labels = service.map(|s| vec![("service".to_owned(), s.to_owned())]).unwrap_or_default();
        h.properties.recording = Some(RecordingId([id; 16]));
        h
    }

    #[test]
    fn two_containers_both_pid_1_are_told_apart_by_host_and_service() {
        let (a, b) = (header("host-a", Some("api"), 1, 1), header("host-b", Some("api"), 1, 2));
        assert_eq!(prefixes(&[&a, &b]), ["host-a/api", "host-b/api"]);
        assert_eq!(process_names(&[&a, &b]), ["api on host-a", "api on host-b"]);
        // No host, no label: the program; the pid where two read the same; then the id.
        let (c, d, e) = (header("", None, 7, 3), header("", None, 8, 4), header("", None, 8, 5));
        assert_eq!(prefixes(&[&c, &d, &e]), ["svc[7]", "svc[8]@04040404", "svc[8]@05050505"]);
        assert_eq!(process_names(&[&c, &e]), ["svc (pid 7)", "svc (pid 8)"]);
        // What a prefix holds needs no escaping, and keeps its `/` and `:` to itself.
        let odd = header("h/o:st", Some("my \"api\"\n"), 1, 6);
        assert_eq!(prefixes(&[&odd]), ["h_o_st/my__api__"]);
    }

    #[test]
    fn a_log_alone_is_named_by_service_and_host_with_its_pid() {
        assert_eq!(described(&header("host-a", Some("api"), 1, 1)), "api on host-a (pid 1, program svc)");
        assert_eq!(described(&header("", None, 7, 1)), "svc (pid 7)");
    }

    #[test]
    fn labels_read_as_text_and_as_json() {
        let mut h = header("h", Some("api"), 1, 1);
        h.properties.labels.push(("pod".to_owned(), "api 7f9c".to_owned()));
        assert_eq!(labels_text(&h).unwrap(), "service=api pod=\"api 7f9c\"");
        assert_eq!(labels_json(&h), r#"{"service":"api","pod":"api 7f9c"}"#);
    }
}
