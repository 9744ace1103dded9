//! `--filter` with every value as `print` and `--format json` show it (booleans, threads by
//! `T<n>`, id and name, hex, quoted strings with every escape, NaN and infinities, `Kind.Name`),
//! a parameter named like a built-in (`args.name`), and comparisons that cannot match because
//! of their type: an error with a caret, never an empty result. One snapshot, a line per filter.

use crate::common::{self, *};
use event_format::wire::Order;
use std::path::Path;

/// What `print LOG --filter EXPR` gives: how many events and the first, or the error.
fn outcome(log: &Path, expr: &str) -> String {
    let out = run(&["print", log.to_str().unwrap(), "--filter", expr]);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    match (out.status.success(), lines.first()) {
        (true, Some(first)) => format!("{expr}\n  => {} events; first: {first}", lines.len()),
        (true, None) => format!("{expr}\n  => no events"),
        (false, _) => {
            let err = stderr(&out);
            let indented: Vec<String> = err.lines().map(|l| format!("  {l}")).collect();
            format!("{expr}\n{}", indented.join("\n"))
        }
    }
}

#[test]
fn every_value_form_print_shows_reads_back_in_a_filter() {
    let dir = common::dir("filter-values");
    let jobs = dir.join("jobs.evt");
    common::migrating_jobs_log(&jobs);
    let every = dir.join("every.evt");
    common::handmade_log(&every, Order::NATIVE);

    let on_jobs = [
        // Booleans, as print writes them, as JSON does, and as 1 and 0.
        "ok == true",
        "ok == false",
        "ok != true",
        "ok == 1",
        "ok == \"true\"",
        // Threads: T<n> as print writes them, the id, the name as stats shows it, a glob.
        "thread == T2",
        "thread == 2",
        "thread == compactor",
        "thread == \"compactor\"",
        "thread ~ \"worker-*\" && name == JobEnd",
        "thread != compactor && name == StepEnd",
        // Integers in decimal and hex, and JSON's quoted forms.
        "id == 0x10",
        "id == \"0x10\"",
        "id == 16 && name == JobEnd",
        // A string with its quotes escaped, as print writes it.
        r#"what == "job \"7\"""#,
        // Floats.
        "ratio == 2.5",
        "ratio == 25e-1",
        // The event as print names it, Kind.Name, and as JSON does, with kind and code.
        "name == Job.JobBegin && id == 1",
        "name == JobBegin && kind == Job && code == 1 && id == 2",
        // A parameter named like a built-in: ThreadName's `name`.
        "args.name == compactor",
        "args.thread == 3",
        "name == compactor",
        // Comparisons their types never let match: errors.
        "ok == yes",
        "ok == 2",
        "ok < true",
        "ok ~ \"t*\"",
        "id == \"abc\"",
        "id ~ \"1*\"",
        "id == true",
        "what == 5",
        "ratio == fast",
        "thread == nobody",
        "thread < compactor",
        "thread == 1.5",
        "name == 5",
        "time == soon",
        "args.nme == x",
        "fields. == 1",
    ];
    let on_every = [
        // Pointers and words at their extremes, in hex and decimal, bare and quoted as JSON writes them.
        "p == 0xffffffffffffffff",
        "p == \"0xffffffffffffffff\"",
        "w == 18446744073709551615",
        "w == \"18446744073709551615\"",
        "i == -9223372036854775808",
        "u == 4294967295",
        // Doubles: NaN and the infinities as print writes them.
        "d == NaN",
        "d != NaN",
        "d == -inf",
        "d < -1e308",
        // Booleans.
        "b == false",
        // Strings with every escape print writes, and JSON's \u0000 and U+FFFD.
        r#"s == "nul\u{0}here \xff \"q\" \\""#,
        r#"s == "nul\u0000here \ufffd \"q\" \\""#,
        r#"s == "é""#,
        r#"s == "\u00e9""#,
        // Spans: `name` is the event's, `args.name` the span's.
        "name == SpanEnter && args.name == inner",
        "args.name == outer",
        "fields ~ \"*k=v*\"",
    ];
    let mut table = Vec::new();
    for expr in on_jobs {
        table.push(outcome(&jobs, expr));
    }
    table.push("---- the handmade log of every letter ----".to_owned());
    for expr in on_every {
        table.push(outcome(&every, expr));
    }
    insta::assert_snapshot!(table.join("\n"));
}
