//! Who wrote a log (`EVENT_HOST`, `EVENT_LABELS`; docs/guide/configuration.md): two
//! containers' programs, both pid 1 (each in a PID namespace of its own, where this machine
//! can make one), record with their host and service in the header, and `print`, `stats` and
//! the Perfetto export tell them apart by host and service, not by the pid they share.

use crate::common::{CHILD, DUMP, program};
use event_format::decode::Decoder;
use std::process::{Command, Output};

fn dir(name: &str) -> crate::common::Scratch {
    crate::common::dir("identity", name)
}

/// `recorder-child ARGS` with `env`, as pid 1 of a PID namespace of its own (`unshare`, as
/// root or in a user namespace); `None`, said on stderr, where neither can be made (and a
/// failure under CI, which must run it).
fn as_pid_1(args: &[&str], env: &[(&str, &str)]) -> Option<Output> {
    for prefix in [&["--pid", "--fork"][..], &["--user", "--map-root-user", "--pid", "--fork"][..]] {
        let mut unshare: Vec<&str> = prefix.to_vec();
        unshare.push(CHILD);
        unshare.extend_from_slice(args);
        let out = program("unshare", &unshare, env).output().ok()?;
        if out.status.success() {
            return Some(out);
        }
    }
    assert!(std::env::var_os("CI").is_none(), "CI must be able to make a PID namespace (unshare --pid)");
    eprintln!("skipped: cannot make a PID namespace here (unshare --pid)");
    None
}

fn dump(args: &[&str]) -> String {
    let out = Command::new(DUMP).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn two_containers_both_pid_1_are_told_apart_by_host_and_service() {
    let d = dir("pid-1");
    let mut logs = Vec::new();
    for host in ["host-a", "host-b"] {
        let log = d.join(format!("{host}.evt"));
        let env = [
            ("EVENT_FILE", log.to_str().unwrap()),
            ("EVENT_HOST", host),
            ("EVENT_LABELS", "service=api,version=1.4.2,pod=api-7f9c"),
        ];
        let Some(out) = as_pid_1(&["env"], &env) else { return };
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
        let header = Decoder::new(&std::fs::read(&log).unwrap()[..]).unwrap().header().clone();
        assert_eq!((header.producer.pid, header.producer.host.as_str()), (1, host), "pid 1 of its namespace");
        assert_eq!(header.properties.label("service"), Some("api"));
        assert_eq!(header.properties.label("pod"), Some("api-7f9c"));
        logs.push(log);
    }
    let (a, b) = (logs[0].to_str().unwrap(), logs[1].to_str().unwrap());
    // print: every line's thread names its host and service; none the pid both have.
    let printed = dump(&["print", a, b]);
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), 2 * dump(&["print", a]).lines().count(), "every event of both");
    let of = |who: &str| lines.iter().filter(|l| l.split(' ').nth(1).is_some_and(|t| t.starts_with(who))).count();
    assert_eq!(of("host-a/api:T"), lines.len() / 2, "{printed}");
    assert_eq!(of("host-b/api:T"), lines.len() / 2, "{printed}");
    assert!(!lines.iter().any(|l| l.split(' ').nth(1).is_some_and(|t| t.starts_with("1:"))), "{printed}");
    // stats: the service on its host, and the labels.
    let stats = dump(&["stats", a]);
    assert!(stats.contains("; api on host-a (pid 1, program recorder-child, "), "{stats}");
    assert!(stats.contains("  labels: service=api version=1.4.2 pod=api-7f9c"), "{stats}");
    // The Perfetto export: a process for each, named by service and host, with its labels.
    let trace = d.join("both.pftrace");
    dump(&["export", "--to", "perfetto", "--uncompressed", a, b, "-o", trace.to_str().unwrap()]);
    let bytes = std::fs::read(&trace).unwrap();
    let has = |text: &str| bytes.windows(text.len()).any(|w| w == text.as_bytes());
    assert!(has("api on host-a") && has("api on host-b"), "both processes named by service and host");
    assert!(has("version=1.4.2") && has("pod=api-7f9c"), "the labels are the processes' labels");
    assert!(!has("(pid 1)"), "the pid they share is not what tells them apart");
}

/// Without labels, the program stands for the service; with neither host nor labels, two
/// logs that read the same are told apart by pid, then by recording id.
#[test]
fn without_labels_the_program_is_the_service() {
    let d = dir("no-labels");
    let mut logs = Vec::new();
    for host in ["host-a", "host-b"] {
        let log = d.join(format!("{host}.evt"));
        let Some(_) = as_pid_1(&["env"], &[("EVENT_FILE", log.to_str().unwrap()), ("EVENT_HOST", host)]) else {
            return;
        };
        logs.push(log);
    }
    let printed = dump(&["print", logs[0].to_str().unwrap(), logs[1].to_str().unwrap()]);
    assert!(
        printed.contains(" host-a/recorder-child:T1 ") && printed.contains(" host-b/recorder-child:T1 "),
        "{printed}"
    );
}
