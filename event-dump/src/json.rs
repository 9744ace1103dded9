//! JSON text, written by hand (no serializer dependency): one rule for strings and one for
//! argument values, used by `print --format json` and the Chrome export alike. The shapes
//! they make are a stable output, documented in docs/OUTPUT.md.

use event_format::fields::FieldValue;
use event_format::text::{push_decimal, push_hex, push_value};
use event_format::wire::Value;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The largest integer every JSON reader holds exactly: most parse numbers as IEEE doubles,
/// which hold every integer up to 2^53 and lose precision beyond.
pub(crate) const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Writes `s` as a JSON string. Besides what JSON requires (`"`, `\`, U+0000..U+001F), the
/// other control characters and the bidirectional formatting characters are written as
/// `\uXXXX`: the same string to a JSON reader, and inert on a terminal that shows the line.
pub(crate) fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || event_format::text::is_bidi_control(c) => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Writes an integer that may exceed [`MAX_SAFE_INTEGER`]: a number while a double holds it
/// exactly, a decimal string beyond.
pub(crate) fn unsigned(out: &mut String, v: u64) {
    if v <= MAX_SAFE_INTEGER {
        push_decimal(out, v);
    } else {
        out.push('"');
        push_decimal(out, v);
        out.push('"');
    }
}

/// Writes an argument's value as JSON: pointers and addresses as hex strings; integers as
/// numbers while a double holds them exactly ([`MAX_SAFE_INTEGER`]), as decimal strings
/// beyond; finite doubles as numbers, NaN and infinities as strings (`"NaN"`, `"-inf"`);
/// bools as `true`/`false`; strings escaped (bytes that are not UTF-8 replaced). Numbers are
/// written by the text's writers (`event_format::text`): the same digits as `print`'s text.
pub(crate) fn value(out: &mut String, value: &Value<'_>) {
    match *value {
        Value::Pointer(v) | Value::Address(v) => {
            out.push('"');
            push_hex(out, v);
            out.push('"');
        }
        Value::Word(v) => unsigned(out, v),
        Value::Signed(v) if v.unsigned_abs() > MAX_SAFE_INTEGER => {
            out.push('"');
            push_value(out, value);
            out.push('"');
        }
        Value::Unsigned(_) | Value::Signed(_) | Value::Bool(_) => push_value(out, value),
        Value::Double(v) if v.is_finite() => push_value(out, value),
        Value::Double(v) => string(out, &format!("{v:?}")),
        Value::Str(t) => string(out, &String::from_utf8_lossy(t.bytes)),
    }
}

/// Writes `tracing` fields as a JSON object by name, each value with its type (integers as
/// numbers while a double holds them exactly, as decimal strings beyond; finite floats as
/// numbers, others as strings; booleans; strings): the first of repeated keys wins. The
/// Chrome export's `args` and the SQLite export's `fields_json` are this object.
pub(crate) fn fields(out: &mut String, fields: &[(&str, FieldValue<'_>)]) {
    out.push('{');
    let mut seen = BTreeSet::new();
    for (key, value) in fields {
        if !seen.insert(*key) {
            continue;
        }
        if seen.len() > 1 {
            out.push(',');
        }
        string(out, key);
        out.push(':');
        match value {
            FieldValue::Int(i) if i.unsigned_abs() <= u128::from(MAX_SAFE_INTEGER) => {
                let _ = write!(out, "{i}");
            }
            FieldValue::Int(i) => {
                let _ = write!(out, "\"{i}\"");
            }
            FieldValue::Float(x) if x.is_finite() => {
                let _ = write!(out, "{x:?}");
            }
            FieldValue::Float(x) => string(out, &format!("{x:?}")),
            FieldValue::Bool(b) => {
                let _ = write!(out, "{b}");
            }
            FieldValue::Str(text) => string(out, text),
        }
    }
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_a_double_cannot_hold_are_strings() {
        let json = |v: Value<'_>| {
            let mut s = String::new();
            value(&mut s, &v);
            s
        };
        assert_eq!(json(Value::Word(MAX_SAFE_INTEGER)), "9007199254740991");
        assert_eq!(json(Value::Word(MAX_SAFE_INTEGER + 2)), "\"9007199254740993\"");
        assert_eq!(json(Value::Word(u64::MAX)), "\"18446744073709551615\"");
        assert_eq!(json(Value::Signed(-(MAX_SAFE_INTEGER as i64))), "-9007199254740991");
        assert_eq!(json(Value::Signed(i64::MIN)), "\"-9223372036854775808\"");
        assert_eq!(json(Value::Pointer(0x10)), "\"0x10\"");
        assert_eq!(json(Value::Double(f64::NAN)), "\"NaN\"");
        assert_eq!(json(Value::Double(0.25)), "0.25");
        let mut s = String::new();
        unsigned(&mut s, MAX_SAFE_INTEGER + 1);
        assert_eq!(s, "\"9007199254740992\"");
    }

    #[test]
    fn controls_and_bidi_characters_are_escaped() {
        let mut s = String::new();
        string(&mut s, "a\u{202e}b\u{7f}\u{9b}\u{2066}\u{200d}\u{1}");
        assert_eq!(s, "\"a\\u202eb\\u007f\\u009b\\u2066\u{200d}\\u0001\"");
    }
}
