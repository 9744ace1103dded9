//! The fields grammar itself ([`super`]'s module docs state it): its values, its readers
//! and its writers, over text alone, so that the codec below the decoder (the expansion of
//! records by callsite, [`callsites`](crate::callsites)) uses it without a turn back up to
//! the decoder's events.

use std::borrow::Cow;
use std::fmt::{self, Write};

/// One field's value, typed by how it is written.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue<'a> {
    /// An integer (any `i64`, `u64`, `i128` or `u128` that fits in an `i128`).
    Int(i128),
    /// A float.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A string, unescaped.
    Str(Cow<'a, str>),
}

impl fmt::Display for FieldValue<'_> {
    /// Writes the value as the grammar writes it: it reads back as itself.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldValue::Int(i) => write!(f, "{i}"),
            FieldValue::Float(x) => write!(f, "{x:?}"),
            FieldValue::Bool(b) => write!(f, "{b}"),
            FieldValue::Str(s) => write!(f, "{:?}", s.as_ref()),
        }
    }
}

/// Reads all of `text` as fields: `None` when any part of it is not in the grammar (an empty
/// text is no fields).
///
/// ```
/// use event_format::fields::{parse, FieldValue};
///
/// let fields = parse(r#"id=7 ok=true user="ada lovelace" ratio=0.5"#).unwrap();
/// assert_eq!(fields[0], ("id", FieldValue::Int(7)));
/// assert_eq!(fields[2].1, FieldValue::Str("ada lovelace".into()));
/// assert!(parse("x=Foo { a: 1 }").is_none());
/// ```
pub fn parse(text: &str) -> Option<Vec<(&str, FieldValue<'_>)>> {
    let mut out = Vec::new();
    if text.is_empty() {
        return Some(out);
    }
    let mut rest = text;
    loop {
        let (key, value, after) = field(rest)?;
        out.push((key, value));
        if after.is_empty() {
            return Some(out);
        }
        rest = after.strip_prefix(' ')?;
    }
}

/// Reads as many whole fields as `text` begins with: for a text the writer cut at the
/// format's string maximum, whose last field may be cut short.
pub fn parse_prefix(text: &str) -> Vec<(&str, FieldValue<'_>)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some((key, value, after)) = field(rest) {
        out.push((key, value));
        match after.strip_prefix(' ') {
            Some(next) => rest = next,
            None => break,
        }
    }
    out
}

/// Splits a `TraceEvent`'s text into its message and its fields: the fields are the longest
/// run of whole fields that ends the text and starts it or follows a space.
///
/// ```
/// use event_format::fields::{split_message, FieldValue};
///
/// let (message, fields) = split_message(r#"retry in 2s attempt=3 host="db1""#);
/// assert_eq!(message, "retry in 2s");
/// assert_eq!(fields, [("attempt", FieldValue::Int(3)), ("host", FieldValue::Str("db1".into()))]);
/// assert_eq!(split_message("no fields here").1, []);
/// ```
pub fn split_message(text: &str) -> (&str, Vec<(&str, FieldValue<'_>)>) {
    let start = fields_start(text);
    let fields = parse(&text[start..]).unwrap_or_default();
    let message = &text[..start];
    (message.strip_suffix(' ').filter(|_| start < text.len()).unwrap_or(message), fields)
}

/// Where the fields of a `TraceEvent`'s text start ([`split_message`]): the text's length when
/// it has none. Allocates nothing, as the writer calls it for every event.
fn fields_start(text: &str) -> usize {
    let starts = std::iter::once(0).chain(text.match_indices(' ').map(|(i, _)| i + 1));
    for start in starts {
        if start >= text.len() {
            break;
        }
        if all_fields(&text[start..]) {
            return start;
        }
    }
    text.len()
}

/// Whether all of `text` (not empty) is fields, without reading their values.
fn all_fields(text: &str) -> bool {
    let mut rest = text;
    loop {
        let Some(after) = skip_field(rest) else { return false };
        if after.is_empty() {
            return true;
        }
        match after.strip_prefix(' ') {
            Some(next) => rest = next,
            None => return false,
        }
    }
}

/// The rest of `text` after one `key=value` at its start.
fn skip_field(text: &str) -> Option<&str> {
    let eq = text.find(['=', ' ', '"'])?;
    if eq == 0 || text.as_bytes()[eq] != b'=' {
        return None;
    }
    let text = &text[eq + 1..];
    if let Some(body) = text.strip_prefix('"') {
        let mut chars = body.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => return Some(&body[i + 1..]),
                '\\' => {
                    escape(&mut chars)?;
                }
                _ => {}
            }
        }
        return None;
    }
    if text.starts_with('\'') {
        let mut chars = text.char_indices();
        chars.next();
        match chars.next()? {
            (_, '\\') => {
                escape(&mut chars)?;
            }
            (_, '\'') => return None,
            _ => {}
        }
        let (at, close) = chars.next()?;
        return (close == '\'').then(|| &text[at + 1..]);
    }
    let end = text.find(' ').unwrap_or(text.len());
    token(&text[..end])?;
    Some(&text[end..])
}

/// One `key=value` at the start of `text`: the key, the value and the rest.
fn field(text: &str) -> Option<(&str, FieldValue<'_>, &str)> {
    let eq = text.find(['=', ' ', '"'])?;
    if eq == 0 || text.as_bytes()[eq] != b'=' {
        return None;
    }
    let (value, rest) = value(&text[eq + 1..])?;
    Some((&text[..eq], value, rest))
}

/// One value at the start of `text`, and the rest.
fn value(text: &str) -> Option<(FieldValue<'_>, &str)> {
    if text.starts_with('"') {
        return string(text);
    }
    if text.starts_with('\'') {
        return character(text);
    }
    let end = text.find(' ').unwrap_or(text.len());
    Some((token(&text[..end])?, &text[end..]))
}

/// A bare value (not a string): an integer, a float or a boolean, all of `word`.
fn token(word: &str) -> Option<FieldValue<'static>> {
    match word {
        "true" => return Some(FieldValue::Bool(true)),
        "false" => return Some(FieldValue::Bool(false)),
        "NaN" => return Some(FieldValue::Float(f64::NAN)),
        "inf" => return Some(FieldValue::Float(f64::INFINITY)),
        "-inf" => return Some(FieldValue::Float(f64::NEG_INFINITY)),
        _ => {}
    }
    let digits = word.strip_prefix('-').unwrap_or(word);
    if !digits.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if digits.bytes().all(|b| b.is_ascii_digit()) {
        return word.parse().ok().map(FieldValue::Int);
    }
    // `Debug` of an f64: digits, `.` and digits, an exponent `e` with its sign; nothing else
    // (no `+`, no leading `.`), so that a version number or an address is not a float.
    if digits.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'-'))
        && digits.bytes().filter(|&b| b == b'.').count() <= 1
        && !digits.ends_with(['.', 'e', '-'])
        && !digits.contains(".e")
    {
        return word.parse().ok().map(FieldValue::Float);
    }
    None
}

/// A string in double quotes at the start of `text`, with `Debug`'s escapes: its text and
/// the rest.
fn string(text: &str) -> Option<(FieldValue<'_>, &str)> {
    let body = &text[1..];
    // Without escapes, the text is borrowed.
    let close = body.find(['"', '\\'])?;
    if body.as_bytes()[close] == b'"' {
        return Some((FieldValue::Str(Cow::Borrowed(&body[..close])), &body[close + 1..]));
    }
    let mut out = String::with_capacity(body.len());
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((FieldValue::Str(Cow::Owned(out)), &body[i + 1..])),
            '\\' => out.push(escape(&mut chars)?),
            c => out.push(c),
        }
    }
    None
}

/// The character of an escape whose `\\` `chars` has just given.
fn escape(chars: &mut std::str::CharIndices<'_>) -> Option<char> {
    let (_, e) = chars.next()?;
    Some(match e {
        '"' => '"',
        '\\' => '\\',
        '\'' => '\'',
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        '0' => '\0',
        'u' => {
            let (_, open) = chars.next()?;
            if open != '{' {
                return None;
            }
            let mut code = 0u32;
            let mut digits = 0;
            loop {
                let (_, d) = chars.next()?;
                if d == '}' {
                    break;
                }
                code = code.checked_mul(16)?.checked_add(d.to_digit(16)?)?;
                digits += 1;
                if digits > 6 {
                    return None;
                }
            }
            if digits == 0 {
                return None;
            }
            char::from_u32(code)?
        }
        _ => return None,
    })
}

/// A `char` as its `Debug` writes it, `'x'` or `'\\n'`, at the start of `text`: a string of
/// that one character, and the rest.
fn character(text: &str) -> Option<(FieldValue<'_>, &str)> {
    let mut chars = text.char_indices();
    chars.next();
    let c = match chars.next()? {
        (_, '\\') => escape(&mut chars)?,
        (_, '\'') => return None,
        (_, c) => c,
    };
    let (at, close) = chars.next()?;
    (close == '\'').then(|| (FieldValue::Str(Cow::Owned(c.to_string())), &text[at + 1..]))
}

/// Writes a value recorded by its `Debug` or `Display` text, `text`: as it is when it reads
/// back as one value of the grammar, else as a string holding it.
pub fn write_text_value<W: Write>(out: &mut W, text: &str) -> fmt::Result {
    let whole = match value(text) {
        Some((_, rest)) => rest.is_empty(),
        None => false,
    };
    if whole { out.write_str(text) } else { write!(out, "{text:?}") }
}

/// Writes `values`, fields whose keys are indexes (`0=42 1="GET"`: decimal, without leading
/// zeros), into `out` with each key replaced by the name of that index in `names`
/// (`id=42 method="GET"`), each value as it is: the fields of a record that names a callsite
/// ([`callsites`](crate::callsites)). `false`, with `out` left to be discarded, when `values`
/// is not whole fields of the grammar or a key is not an index of `names`.
///
/// ```
/// let mut out = String::new();
/// assert!(event_format::fields::name_fields(r#"0=42 1="GET x""#, &["id", "method"], &mut out));
/// assert_eq!(out, r#"id=42 method="GET x""#);
/// assert!(!event_format::fields::name_fields("2=1", &["id", "method"], &mut String::new()));
/// ```
pub fn name_fields(values: &str, names: &[&str], out: &mut String) -> bool {
    let mut rest = values;
    while !rest.is_empty() {
        let Some(after) = skip_field(rest) else { return false };
        let eq = rest.find('=').unwrap_or(0);
        let key = &rest[..eq];
        let canonical = key == "0" || (!key.starts_with('0') && key.bytes().all(|b| b.is_ascii_digit()));
        let Some(name) = key.parse::<usize>().ok().filter(|_| canonical).and_then(|i| names.get(i)) else {
            return false;
        };
        out.push_str(name);
        out.push_str(&rest[eq..rest.len() - after.len()]);
        rest = match after.strip_prefix(' ') {
            Some(next) if !next.is_empty() => {
                out.push(' ');
                next
            }
            Some(_) => return false,
            None if after.is_empty() => after,
            None => return false,
        };
    }
    true
}

/// Writes a `TraceEvent`'s text: `message`, a space and `fields` (already written as
/// fields); the message as the field `message="..."` when [`split_message`] would not give it
/// back whole. `out` must be empty. Allocates nothing once `out` has grown.
pub fn write_event_text(out: &mut String, message: &str, fields: &str) {
    match (message.is_empty(), fields.is_empty()) {
        (true, _) => out.push_str(fields),
        (false, true) => out.push_str(message),
        (false, false) => {
            out.push_str(message);
            out.push(' ');
            out.push_str(fields);
        }
    }
    // Where a reader will find the fields: just after the message and its space.
    let meant = if fields.is_empty() { out.len() } else { message.len() + 1 };
    if !message.is_empty() && fields_start(out) != meant {
        out.clear();
        let _ = write!(out, "message={message:?}");
        if !fields.is_empty() {
            out.push(' ');
            out.push_str(fields);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> FieldValue<'_> {
        FieldValue::Str(Cow::Borrowed(v))
    }

    #[test]
    fn every_value_form_reads_back() {
        let fields = parse(r#"a=7 b=-3 c=1.5 d=1e-7 e=NaN f=-inf g=true h=false i="x y" j="q\"\\\n\t\u{1b}""#).unwrap();
        let got: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(got.join(" "), r#"a=7 b=-3 c=1.5 d=1e-7 e=NaN f=-inf g=true h=false i="x y" j="q\"\\\n\t\u{1b}""#);
        assert_eq!(fields[9].1, s("q\"\\\n\t\u{1b}"));
        assert_eq!(
            parse(r"c='x' q='\'' n='\n'").unwrap().iter().map(|f| f.1.clone()).collect::<Vec<_>>(),
            [s("x"), s("'"), s("\n")]
        );
        assert_eq!(parse("c='xy'"), None);
        assert_eq!(parse("big=340282366920938463463374607431768211455"), None, "beyond i128");
        assert_eq!(parse("u=18446744073709551615").unwrap()[0].1, FieldValue::Int(i128::from(u64::MAX)));
    }

    #[test]
    fn what_is_not_in_the_grammar_reads_as_no_fields() {
        for text in [
            "x=Foo { a: 1 }",
            "x=1  y=2",
            " x=1",
            "x=1 ",
            "x=",
            "=1",
            "x=\"open",
            "x=1.2.3",
            "x=0x10",
            "x=127.0.0.1:80",
            "x=\"a\"b",
            "x=\"\\q\"",
        ] {
            assert_eq!(parse(text), None, "{text}");
        }
        assert_eq!(parse("").unwrap(), []);
    }

    #[test]
    fn a_cut_text_keeps_its_whole_fields() {
        assert_eq!(parse_prefix(r#"id=7 name="abc"#), [("id", FieldValue::Int(7))]);
    }

    #[test]
    fn messages_split_from_their_fields() {
        assert_eq!(split_message("id=7"), ("", vec![("id", FieldValue::Int(7))]));
        assert_eq!(split_message(r#"say "x=1" now id=7"#), (r#"say "x=1" now"#, vec![("id", FieldValue::Int(7))]));
        assert_eq!(split_message("x=1 y"), ("x=1 y", vec![]));
        assert_eq!(split_message(""), ("", vec![]));
    }

    #[test]
    fn values_are_written_as_tokens_or_strings() {
        let w = |t: &str| {
            let mut out = String::new();
            write_text_value(&mut out, t).unwrap();
            out
        };
        assert_eq!(w("42"), "42");
        assert_eq!(w("\"ada\""), "\"ada\"");
        assert_eq!(w("Some(3)"), "\"Some(3)\"");
        assert_eq!(w("127.0.0.1"), "\"127.0.0.1\"");
        assert_eq!(w("a \"b\""), r#""a \"b\"""#);
        assert_eq!(w(""), "\"\"");
    }

    #[test]
    fn a_message_that_reads_as_fields_is_written_as_one() {
        let text = |m: &str, f: &str| {
            let mut out = String::new();
            write_event_text(&mut out, m, f);
            out
        };
        assert_eq!(text("slow reply", "user=\"ada\""), "slow reply user=\"ada\"");
        assert_eq!(text("done count=3", ""), "message=\"done count=3\"");
        assert_eq!(text("done count=3", "id=7"), "message=\"done count=3\" id=7");
        assert_eq!(text("", "id=7"), "id=7");
        for (m, f) in [("a x=\"b", "s=\" r\""), ("p", ""), ("x=1 y", "z=2")] {
            let t = text(m, f);
            let (message, fields) = split_message(&t);
            assert!(message == m || fields.iter().any(|(k, v)| *k == "message" && *v == s(m)), "{t}");
        }
    }
}
