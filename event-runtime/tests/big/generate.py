#!/usr/bin/env python3
"""Writes the large-relation test of event-runtime: tests/big/events.def and tests/big.rs.

The relation has 96 events in 8 kinds with codes from 0x0100 upward, 0 to 14 parameters an
event, every format letter many times, events with several strings (one with a string first
and last), default parameter names (f0, f1, ...) for a few rows and 2 retired rows. The test
emits every event once, with the Rust types that each letter accepts, and expects the values
rendered as event_format::text::write_value writes them.

Deterministic: the same seed gives the same files. Python 3, standard library only.

    python3 event-runtime/tests/big/generate.py
"""

import os
import random
import struct

SEED = 0x5EED_B16
HERE = os.path.dirname(os.path.abspath(__file__))
DEF_PATH = os.path.join(HERE, "events.def")
RS_PATH = os.path.join(os.path.dirname(HERE), "big.rs")

EVENTS = 96
FIRST_CODE = 0x0100
MAX_PARAMS = 14
LETTERS = "PAWUIDBS"
BLOCK_SIZE = 4096

KINDS = [
    ("Arena", "arena life cycle and global state"),
    ("Pool", "pool creation, destruction and statistics"),
    ("Seg", "segments handed from the arena to pools"),
    ("Object", "object allocation and freeing"),
    ("Trace", "tracing: condemn, scan, fix and reclaim"),
    ("Root", "roots: registration and scanning"),
    ("Buffer", "allocation points and their buffers"),
    ("Client", "client annotations: phases, checks and notes"),
]

VERBS = [
    "Create", "Destroy", "Extend", "Poll", "Init", "Finish", "Stats", "Alloc", "Free", "Split",
    "Merge", "Resize", "Fail", "Begin", "End", "Scan", "Mark", "Reclaim", "Condemn", "Grow",
    "Shrink", "Flip", "Fix", "Pin", "Unpin", "Reserve", "Release", "Commit", "Decommit",
    "Check", "Note", "Phase", "Walk", "Flush", "Fill", "Trim", "Move", "Copy", "Lock",
    "Unlock", "Wait", "Signal",
]

# Retired rows: (name, index in the code sequence); their codes are never used by events.
RETIRED = [("ArenaOldAlloc", 21), ("TraceOldFlip", 62)]

PARAM_NAMES = {
    "P": ["pool", "arena", "seg", "owner", "parent", "root", "frame", "handle", "chain", "node"],
    "A": ["base", "limit", "addr", "top", "cursor", "start", "stop", "mark", "hint", "page"],
    "W": ["size", "count", "epoch", "live", "words", "total", "bytes", "serial", "grain", "used"],
    "U": ["align", "flags", "rank", "level", "slot", "tag", "width", "depth", "shade", "lane"],
    "I": ["delta", "balance", "offset", "skew", "drift", "adjust", "shift", "diff", "bias", "lag"],
    "D": ["load", "ratio", "rate", "mortality", "weight", "speed", "share", "scale", "decay", "gain"],
    "B": ["ok", "moved", "full", "dirty", "pinned", "marked", "done", "fresh", "ready", "exact"],
    "S": ["label", "reason", "why", "note", "detail", "path", "text", "title", "source", "comment"],
}

# Formats placed on chosen rows: every letter with a string first and last at the maximum
# width; several strings side by side.
DESIGNED = ["SPAWUIDBWAPIDS", "SSSS", "SWS", "BSDSI"]

LOREM = (
    "the arena hands segments to pools which carve them into objects that the collector "
    "condemns scans fixes and reclaims while buffers keep the allocation fast path short and "
    "roots anchor whatever the client still needs"
).split()


# ---------------------------------------------------------------------------------------
# Rendering, as event_format::text::write_value does it.


def render_double(x):
    """Rust's `{:?}` of an f64: shortest round trip, exponent without `+` or leading zeros."""
    if x != x:
        raise ValueError("NaN is not used")
    if x == float("inf"):
        return "inf"
    if x == float("-inf"):
        return "-inf"
    text = repr(x)
    if "e" in text:
        mantissa, exponent = text.split("e")
        return f"{mantissa}e{int(exponent)}"
    return text


def is_control(c):
    """Rust's char::is_control: general category Cc."""
    o = ord(c)
    return o < 0x20 or 0x7F <= o < 0xA0


def render_text(s):
    out = ['"']
    for c in s:
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif is_control(c):
            out.append("\\u{%x}" % ord(c))
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def rust_str(s):
    """A Rust string literal for `s`; a raw one when that reads better."""
    plain = not any(c in s for c in '"\\') and not any(is_control(c) for c in s)
    if plain:
        return '"' + s + '"'
    if not any(is_control(c) for c in s):
        hashes = "#"
        while '"' + hashes in s:
            hashes += "#"
        return "r" + hashes + '"' + s + '"' + hashes
    # The dump's escapes are Rust's string-literal escapes.
    return render_text(s)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def f32_shortest(x):
    """The shortest decimal text that reads back as the f32 `x`."""
    for digits in range(1, 10):
        text = "%.*g" % (digits, x)
        if f32(float(text)) == x:
            return text
    raise AssertionError(x)


# ---------------------------------------------------------------------------------------
# The relation.


def make_relation(rng):
    # Parameter counts: three events with none, two with the maximum, the rest mostly small.
    counts = [0, 0, 0, MAX_PARAMS, MAX_PARAMS]
    weights = {1: 6, 2: 9, 3: 10, 4: 10, 5: 9, 6: 7, 7: 5, 8: 4, 9: 3, 10: 2, 11: 2, 12: 1, 13: 1}
    population = [n for n, w in weights.items() for _ in range(w)]
    while len(counts) < EVENTS:
        counts.append(rng.choice(population))
    rng.shuffle(counts)
    # The designed formats go to rows of their width; the first row of 14 takes the first.
    formats = [None] * EVENTS
    for design in DESIGNED:
        row = next(i for i, n in enumerate(counts) if n == len(design) and formats[i] is None)
        formats[row] = design
    for i, n in enumerate(counts):
        if formats[i] is None:
            formats[i] = "".join(rng.choice(LETTERS) for _ in range(n))
    # A few rows keep the default names, among them the random row of 14.
    with_params = [i for i, f in enumerate(formats) if f and f not in DESIGNED]
    defaults = set(rng.sample(with_params, 5))
    defaults.add(next(i for i, f in enumerate(formats) if len(f) == MAX_PARAMS and f not in DESIGNED))

    kinds = [k for k in range(len(KINDS)) for _ in range(EVENTS // len(KINDS))]
    events = []
    for k in range(len(KINDS)):
        verbs = rng.sample(VERBS, EVENTS // len(KINDS))
        for verb in verbs:
            events.append({"kind": k, "name": KINDS[k][0] + verb})
    assert len(events) == EVENTS and len(kinds) == EVENTS
    for i, event in enumerate(events):
        fmt = formats[i]
        event["format"] = fmt
        event["always"] = rng.random() < 0.5
        if i in defaults or not fmt:
            event["params"] = None
        else:
            names = []
            for j, letter in enumerate(fmt):
                name = rng.choice(PARAM_NAMES[letter])
                if name in names:
                    name = f"{name}{j}"
                names.append(name)
            event["params"] = names
    # Codes upward, skipping the retired ones.
    rows = []
    code = FIRST_CODE
    retired_at = dict((at, name) for name, at in RETIRED)
    it = iter(events)
    while True:
        if len(rows) in retired_at:
            rows.append(("retired", retired_at[len(rows)], code))
        else:
            event = next(it, None)
            if event is None:
                break
            event["code"] = code
            rows.append(("event", event, code))
        code += 1
    return events, rows


# ---------------------------------------------------------------------------------------
# Arguments: (Rust expression, expected text) where the expected text is ("lit", text) or
# ("var", name of a String computed at run time from an address).

# Places whose addresses are arguments, and how the test computes each expected address.
ADDRESS_VARS = {
    "cell_at": "cell.as_ptr() as usize",
    "cell8_at": "cell.as_ptr() as usize + 8",
    "cell32_at": "cell.as_ptr() as usize + 32",
    "word_at": "std::ptr::from_ref(&word) as usize",
    "table_at": "table.as_ptr() as usize",
    "table3_at": "table.as_ptr() as usize + 12",
    "slot_at": "(&raw const slot) as usize",
    "text_at": "text.as_ptr() as usize",
    "boxed_at": "std::ptr::from_ref(boxed.as_ref()) as usize",
}

U64_MAX = (1 << 64) - 1


def lit(text):
    return ("lit", text)


def var(name):
    return ("var", name)


def specials(letter):
    """Edge values and argument forms used once each."""
    if letter == "P":
        return [
            ("&cell", var("cell_at")),
            ("&word", var("word_at")),
            ("table.as_ptr()", var("table_at")),
            ("cell.as_ptr().wrapping_add(8)", var("cell8_at")),
            ("&raw mut slot", var("slot_at")),
            ("text.as_str()", var("text_at")),
            ("boxed.as_ref()", var("boxed_at")),
            ("std::ptr::null::<u8>()", lit("0x0")),
            ("std::ptr::without_provenance_mut::<u16>(0xdead_beef)", lit("0xdeadbeef")),
            ("usize::MAX", lit("0xffffffffffffffff")),
            ("0x40", lit("0x40")),
        ]
    if letter == "A":
        return [
            ("&table[3]", var("table3_at")),
            ("&cell[32]", var("cell32_at")),
            ("u64::MAX", lit("0xffffffffffffffff")),
            ("0u64", lit("0x0")),
            ("std::ptr::without_provenance::<u8>(0x4000)", lit("0x4000")),
            ("0x7fff_ffff_f000", lit("0x7ffffffff000")),
        ]
    if letter == "W":
        return [
            ("0u8", lit("0")),
            ("u8::MAX", lit("255")),
            ("u16::MAX", lit("65535")),
            ("u32::MAX", lit("4294967295")),
            ("u64::MAX", lit(str(U64_MAX))),
            ("1usize << 40", lit(str(1 << 40))),
            ("42", lit("42")),
        ]
    if letter == "U":
        return [
            ("0u32", lit("0")),
            ("u32::MAX", lit("4294967295")),
            ("u16::MAX", lit("65535")),
            ("u8::MAX", lit("255")),
            ("1u8", lit("1")),
            ("77", lit("77")),
        ]
    if letter == "I":
        return [
            ("i64::MIN", lit(str(-(1 << 63)))),
            ("i64::MAX", lit(str((1 << 63) - 1))),
            ("0i64", lit("0")),
            ("-1i8", lit("-1")),
            ("i8::MIN", lit("-128")),
            ("i16::MAX", lit("32767")),
            ("i32::MIN", lit(str(-(1 << 31)))),
            ("-42isize", lit("-42")),
            ("-7", lit("-7")),
            ("isize::MIN + 1", lit(str(-(1 << 63) + 1))),
        ]
    if letter == "D":
        return [
            ("0.0f64", lit("0.0")),
            ("-0.0f64", lit("-0.0")),
            ("f64::MAX", lit(render_double(1.7976931348623157e308))),
            ("f64::MIN_POSITIVE", lit(render_double(2.2250738585072014e-308))),
            ("f64::EPSILON", lit(render_double(2.0 ** -52))),
            ("f64::INFINITY", lit("inf")),
            ("f64::NEG_INFINITY", lit("-inf")),
            ("1e-7f64", lit(render_double(1e-7))),
            ("1e16f64", lit(render_double(1e16))),
            ("-1.5e300f64", lit(render_double(-1.5e300))),
            ("5e-324f64", lit(render_double(5e-324))),
            ("0.5f32", lit(render_double(0.5))),
            ("1.25f32", lit(render_double(1.25))),
            ("-2.75f32", lit(render_double(-2.75))),
            ("f32::MAX", lit(render_double(f32(3.4028234663852886e38)))),
            ("-2.5", lit("-2.5")),
            ("7", lit("7.0")),
            ("-3", lit("-3.0")),
        ]
    if letter == "B":
        return [("true", lit("true")), ("false", lit("false")), ("table.contains(&1)", lit("false")), ("word > 1", lit("true"))]
    raise AssertionError(letter)


STRING_SPECIALS = [
    "",
    'say "hi"',
    "back\\slash, and \\n is not a newline",
    "line one\nline two",
    "tab\tseparated\tcolumns",
    "carriage\rreturn",
    "héllo wörld",
    "日本語のテキスト",
    "crab \U0001F980 and ß",
    "\x01bell\x07 and \x7f delete",
    'all at once: "q" \\ \n \t \r é 中',
    "{braces} and 'single' quotes",
]


class Args:
    def __init__(self, rng):
        self.rng = rng
        self.used = {letter: set() for letter in LETTERS}
        self.string_locals = []  # (name, content)
        self.string_form = 0

    def fresh(self, letter, make):
        while True:
            value = make()
            if value[0] is not None and value[1] not in self.used[letter]:
                self.used[letter].add(value[1])
                return value

    def random(self, letter):
        rng = self.rng
        if letter == "P":
            def make():
                v = (0x7F00 << 32) | (rng.getrandbits(28) << 4)
                return (f"{hex_literal(v)}usize", lit(f"{v:#x}"))
            return self.fresh(letter, make)
        if letter == "A":
            def make():
                v = rng.choice([0x7F00 << 32, 0x5500 << 32, 0x1000 << 12]) | (rng.getrandbits(24) << 3)
                suffix = rng.choice(["u64", "usize"])
                return (f"{hex_literal(v)}{suffix}", lit(f"{v:#x}"))
            return self.fresh(letter, make)
        if letter == "W":
            def make():
                ty, bits = rng.choice([("u8", 8), ("u16", 16), ("u32", 32), ("u64", 64), ("usize", 64)])
                v = rng.getrandbits(rng.randint(2, bits)) or 3
                if v == (1 << bits) - 1:
                    v -= 1
                form = f"{hex_literal(v)}{ty}" if rng.random() < 0.3 else f"{v}{ty}"
                return (form, lit(str(v)))
            return self.fresh(letter, make)
        if letter == "U":
            def make():
                ty, bits = rng.choice([("u8", 8), ("u16", 16), ("u32", 32)])
                v = rng.getrandbits(rng.randint(2, bits)) or 5
                if v == (1 << bits) - 1:
                    v -= 1
                return (f"{v}{ty}", lit(str(v)))
            return self.fresh(letter, make)
        if letter == "I":
            def make():
                ty, bits = rng.choice([("i8", 8), ("i16", 16), ("i32", 32), ("i64", 64), ("isize", 64)])
                v = rng.getrandbits(rng.randint(2, bits - 1)) or 9
                if rng.random() < 0.6:
                    v = -v
                return (f"{v}{ty}", lit(str(v)))
            return self.fresh(letter, make)
        if letter == "D":
            def make():
                if rng.random() < 0.3:
                    # f32: a multiple of 1/16 that f32 holds exactly and whose shortest f32
                    # text is the value itself (clippy's excessive_precision), widened exactly.
                    v = rng.randint(160, 1 << 24) / 16.0
                    if rng.random() < 0.5:
                        v = -v
                    if f32(v) != v or float(f32_shortest(v)) != v:
                        return (None, None)
                    return (f"{render_double(v)}f32", lit(render_double(v)))
                # f64: three decimals, at least 10 in magnitude (clear of the approximate
                # constants that clippy reports), up to a billion.
                v = rng.randint(10_000, 10 ** 12) / 1000.0
                if rng.random() < 0.5:
                    v = -v
                text = render_double(v)
                return (f"{text}f64", lit(text))
            return self.fresh(letter, make)
        if letter == "B":
            v = rng.random() < 0.5
            return ("true" if v else "false", lit("true" if v else "false"))
        if letter == "S":
            return self.fresh(letter, lambda: self.string(self.random_text()))
        raise AssertionError(letter)

    def random_text(self):
        rng = self.rng
        words = rng.sample(LOREM, rng.randint(1, 4))
        return f"{'-'.join(words)} {rng.randint(0, 999)}"

    def long_text(self, n):
        rng = self.rng
        words = []
        while len(" ".join(words)) < n:
            words.append(rng.choice(LOREM))
        return " ".join(words)

    def string(self, content):
        """A string argument in one of the forms S accepts, in turn."""
        forms = ["str", "string_from", "local", "str", "to_owned", "local", "to_string", "boxed", "cow"]
        form = forms[self.string_form % len(forms)]
        self.string_form += 1
        literal = rust_str(content)
        if form == "str":
            expr = literal
        elif form == "string_from":
            expr = f"String::from({literal})"
        elif form == "to_owned":
            expr = f"{literal}.to_owned()"
        elif form == "to_string":
            expr = f"{literal}.to_string()"
        elif form == "boxed":
            expr = f"Box::<str>::from({literal})"
        elif form == "cow":
            expr = f"std::borrow::Cow::Borrowed({literal})"
        else:
            name = f"s{len(self.string_locals)}"
            self.string_locals.append((name, literal))
            expr = f"&{name}"
        return (expr, lit(render_text(content)))

    def all_for(self, letter, count):
        if letter == "S":
            texts = list(STRING_SPECIALS) + [self.long_text(n) for n in (300, 500, 700, 900, 1000)]
            values = [self.fresh(letter, lambda t=t: self.string(t)) for t in texts]
        elif letter == "B":
            values = specials(letter)
        else:
            values = [self.fresh(letter, lambda v=v: v) for v in specials(letter)]
        assert len(values) <= count, (letter, len(values), count)
        while len(values) < count:
            values.append(self.random(letter))
        self.rng.shuffle(values)
        return values


def hex_literal(v):
    digits = f"{v:x}"
    groups = []
    while digits:
        groups.insert(0, digits[-4:])
        digits = digits[:-4]
    return "0x" + "_".join(groups)


# ---------------------------------------------------------------------------------------
# Output.


def write_def(events, rows):
    out = []
    out.append("# events.def of the large-relation test (tests/big.rs): 96 events in 8 kinds, every format")
    out.append("# letter, 0 to 14 parameters an event, default parameter names on some rows, 2 retired rows.")
    out.append("#")
    out.append("# Generated by tests/big/generate.py, with tests/big.rs: do not edit; regenerate both with")
    out.append("#   python3 event-runtime/tests/big/generate.py")
    out.append("")
    out.append("VERSION(3, 1, 4)")
    out.append("")
    width = max(len(k) for k, _ in KINDS) + 1
    for name, doc in KINDS:
        out.append(f"KIND({(name + ',').ljust(width)} \"{doc}\")")
    out.append("")
    name_w = max(len(e["name"]) for e in events) + 1
    kind_w = max(len(k) for k, _ in KINDS) + 1
    fmt_w = MAX_PARAMS + 1
    out.append(f"#        {'name'.ljust(name_w)} {'code'.ljust(7)} {'always'.ljust(6)} {'kind'.ljust(kind_w)} {'format'.ljust(fmt_w)} parameter names")
    last_kind = None
    for row in rows:
        if row[0] == "retired":
            _, name, code = row
            out.append(f"RETIRED({(name + ',').ljust(name_w)} 0x{code:04X})   # retired: its name and code stay reserved")
            continue
        _, e, code = row
        if last_kind is not None and e["kind"] != last_kind:
            out.append("")
        last_kind = e["kind"]
        always = "TRUE," if e["always"] else "FALSE,"
        fmt = e["format"] or "0"
        fields = [
            (e["name"] + ",").ljust(name_w),
            f"0x{code:04X},",
            always.ljust(6),
            (KINDS[e["kind"]][0] + ",").ljust(kind_w),
        ]
        if e["params"]:
            fields.append((fmt + ",").ljust(fmt_w))
            fields.append(", ".join(e["params"]))
        else:
            fields.append(fmt)
        out.append(("RELATION(" + " ".join(fields)).rstrip() + ")")
    return "\n".join(out) + "\n"


def expected_item(e):
    kind, value = e
    if kind == "var":
        return f"&{value}"
    return rust_str(value)


def write_rs(events, args, totals, letter_counts, string_locals):
    n_params = totals["params"]
    out = []
    w = out.append
    w("#![deny(warnings)]")
    w(f"//! A large relation end to end: tests/big/events.def declares {len(events)} events in {len(KINDS)} kinds with")
    w(f"//! {n_params} parameters in all, every format letter many times ({', '.join(f'{l} {letter_counts[l]}' for l in LETTERS)}),")
    w(f"//! 0 to {MAX_PARAMS} parameters an event, several strings in one event (a string first and last")
    w("//! among them), default parameter names (f0, f1, ...) on some rows and 2 retired rows. It")
    w("//! compiles, and every event, emitted once with the Rust types each letter accepts (edge")
    w("//! values, pointers from addresses, strings with quotes, escapes and non-ASCII text), comes")
    w("//! back out of the stream, across several 4 KiB blocks, in order and with the right values.")
    w("//!")
    w("//! Generated by tests/big/generate.py, with tests/big/events.def: do not edit; regenerate both")
    w("//! with `python3 event-runtime/tests/big/generate.py`.")
    w("")
    w('event_runtime::include_events!("tests/big/events.def");')
    w("")
    w("use event_format::decode::{Catalog, Decoder, Entry};")
    w("use event_runtime::Recorder;")
    w("")
    w(f"/// Events in the relation.")
    w(f"const EVENTS: usize = {len(events)};")
    w(f"/// Parameters of all the events together.")
    w(f"const PARAMS: usize = {n_params};")
    w(f"/// The most parameters of one event.")
    w(f"const MAX_PARAMS: usize = {MAX_PARAMS};")
    w("")
    w("/// An address as the text renders pointers and addresses.")
    w("fn at(address: usize) -> String {")
    w('    format!("{address:#x}")')
    w("}")
    w("")
    w("fn strings(values: &[&str]) -> Vec<String> {")
    w("    values.iter().map(|s| (*s).to_owned()).collect()")
    w("}")
    w("")
    w("/// The stream's user events (name and values as text) in order, and its number of blocks.")
    w("fn decode(stream: &[u8], schema: &event_format::Schema) -> (Vec<(String, Vec<String>)>, usize) {")
    w('    let mut decoder = Decoder::new(stream).expect("the recorder writes a valid header");')
    w('    assert_eq!(&decoder.header().schema, schema, "the header embeds the relation");')
    w("    let catalog = Catalog::new(&decoder.header().schema);")
    w("    let mut events = Vec::new();")
    w("    let mut blocks = 0;")
    w("    while let Some(block) = decoder.next_block() {")
    w('        let block = block.expect("no damaged block");')
    w("        blocks += 1;")
    w("        for entry in block.entries(&catalog) {")
    w('            let Entry::Event(event) = entry else { panic!("unexpected {entry:?}") };')
    w('            if event.desc.name == "ThreadName" {')
    w("                continue;")
    w("            }")
    w("            let values = event")
    w("                .values()")
    w("                .map(|v| {")
    w("                    let mut s = String::new();")
    w("                    event_format::text::write_value(&mut s, &v).unwrap();")
    w("                    s")
    w("                })")
    w("                .collect();")
    w("            events.push((event.desc.name.clone(), values));")
    w("        }")
    w("    }")
    w("    (events, blocks)")
    w("}")
    w("")
    w("#[test]")
    w("fn every_event_of_a_large_relation_round_trips_with_its_values() {")
    w("    let schema = events::SET.schema().unwrap();")
    w("    assert_eq!(schema.events.len(), EVENTS);")
    w("    let params: usize = schema.events.iter().map(|e| e.format.len()).sum();")
    w("    assert_eq!(params, PARAMS);")
    w("    assert!(params >= 300, \"300 parameters or more, not {params}\");")
    w("    assert_eq!(schema.events.iter().map(|e| e.format.len()).max(), Some(MAX_PARAMS));")
    w("    assert!(schema.events.iter().any(|e| e.format.is_empty()), \"an event without parameters\");")
    w("    for letter in event_format::Letter::ALL {")
    w("        let uses = schema.events.iter().flat_map(|e| &e.format).filter(|l| **l == letter).count();")
    w('        assert!(uses >= 20, "letter {} is used {uses} times", letter.as_char());')
    w("    }")
    w("    assert_eq!(schema.retired.len(), 2);")
    w("")
    w("    // Places whose addresses are pointer and address arguments.")
    w("    let cell = [0u8; 64];")
    w("    let word = 0x5eed_u64;")
    w("    let table = [0u32; 8];")
    w("    let mut slot = 0u64;")
    w('    let text = String::from("the text at an address");')
    w("    let boxed = Box::new(0xb0c5_u64);")
    w("    // Strings passed as `&String`.")
    for name, literal in string_locals:
        w(f"    let {name} = String::from({literal});")
    w("")
    w(f"    let recording = Recorder::new(&events::SET).deterministic_clock().block_size({BLOCK_SIZE}).start().unwrap();")
    for e, a in zip(events, args):
        call = ", ".join([e["name"]] + [x[0] for x in a])
        w(f"    event!({call});")
    w("    let stream = recording.stop();")
    w("")
    for name, expr in ADDRESS_VARS.items():
        w(f"    let {name} = at({expr});")
    w("    let expected: Vec<(&str, Vec<String>)> = vec![")
    for e, a in zip(events, args):
        items = ", ".join(expected_item(x[1]) for x in a)
        w(f"        (\"{e['name']}\", strings(&[{items}])),")
    w("    ];")
    w("")
    w("    let (got, blocks) = decode(&stream, &schema);")
    w('    assert!(blocks >= 3, "the events fill several blocks, not {blocks}");')
    w("    for (i, (got, (name, values))) in got.iter().zip(&expected).enumerate() {")
    w('        assert_eq!((got.0.as_str(), &got.1), (*name, values), "event {i} of the stream");')
    w("    }")
    w('    assert_eq!(got.len(), expected.len(), "every event once, no other");')
    w("    assert_eq!(got.len(), schema.events.len(), \"every event of the relation is covered\");")
    w("    let names: Vec<&str> = schema.events.iter().map(|e| e.name.as_str()).collect();")
    w("    assert_eq!(got.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), names, \"in declaration order\");")
    w("    for (event, (_, values)) in schema.events.iter().zip(&got) {")
    w("        assert_eq!(values.len(), event.format.len(), \"{}: one value per parameter\", event.name);")
    w("    }")
    w("}")
    return "\n".join(out) + "\n"


def main():
    rng = random.Random(SEED)
    events, rows = make_relation(rng)
    letter_counts = {l: sum(e["format"].count(l) for e in events) for l in LETTERS}
    arg_rng = random.Random(SEED + 1)
    maker = Args(arg_rng)
    pools = {l: maker.all_for(l, letter_counts[l]) for l in LETTERS}
    taken = {l: 0 for l in LETTERS}
    args = []
    for e in events:
        a = []
        for letter in e["format"]:
            a.append(pools[letter][taken[letter]])
            taken[letter] += 1
        args.append(a)
    totals = {"events": len(events), "params": sum(len(e["format"]) for e in events)}
    counts = [len(e["format"]) for e in events]
    assert totals["params"] >= 300
    assert max(counts) == MAX_PARAMS and min(counts) == 0
    assert all(letter_counts[l] >= 20 for l in LETTERS)
    with open(DEF_PATH, "w", encoding="utf-8", newline="\n") as f:
        f.write(write_def(events, rows))
    with open(RS_PATH, "w", encoding="utf-8", newline="\n") as f:
        f.write(write_rs(events, args, totals, letter_counts, maker.string_locals))
    with_zero = sum(1 for n in counts if n == 0)
    with_max = sum(1 for n in counts if n == MAX_PARAMS)
    defaults = sum(1 for e in events if e["format"] and e["params"] is None)
    print(f"events {totals['events']}, retired {len(RETIRED)}, kinds {len(KINDS)}")
    print(f"parameters {totals['params']}, max {max(counts)} ({with_max} events), {with_zero} events with none")
    print("per letter: " + ", ".join(f"{l} {letter_counts[l]}" for l in LETTERS))
    print(f"rows with default parameter names: {defaults}")
    print(f"wrote {os.path.relpath(DEF_PATH)} and {os.path.relpath(RS_PATH)}")


if __name__ == "__main__":
    main()
