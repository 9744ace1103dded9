//! The values a filter compares with, and its operators: numbers (exact integers and
//! floats), text, and how a word that looks like a number is read.

use super::shown;
use std::cmp::Ordering;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Glob,
    NotGlob,
}

impl Op {
    pub(super) fn from_text(text: &str) -> Option<Op> {
        Some(match text {
            "==" => Op::Eq,
            "!=" => Op::Ne,
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            "~" => Op::Glob,
            "!~" => Op::NotGlob,
            _ => return None,
        })
    }

    pub(super) fn text(self) -> &'static str {
        match self {
            Op::Eq => "==",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Glob => "~",
            Op::NotGlob => "!~",
        }
    }

    /// Whether the operator holds between two values that compare as `order`.
    pub(super) fn holds(self, order: Ordering) -> bool {
        match self {
            Op::Eq => order.is_eq(),
            Op::Ne => order.is_ne(),
            Op::Lt => order.is_lt(),
            Op::Le => order.is_le(),
            Op::Gt => order.is_gt(),
            Op::Ge => order.is_ge(),
            Op::Glob | Op::NotGlob => false,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    pub(super) fn to_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(x) => x,
        }
    }
}

/// The right-hand side of a comparison.
#[derive(Debug, Clone)]
pub(super) enum Value {
    /// A number as written.
    Num(Num),
    /// A string or a bare word, with the number it reads as, if any, and whether `print`'s
    /// `...` of a cut string followed it.
    Text { text: String, num: Option<Num>, cut: bool },
}

impl Value {
    pub(super) fn text(text: String, cut: bool) -> Value {
        let num = parse_number(&text).ok().or_else(|| special_float(&text));
        Value::Text { text, num, cut }
    }

    /// The value as a number: for a name of numeric values.
    pub(super) fn number(&self) -> Option<Num> {
        match self {
            Value::Num(n) => Some(*n),
            Value::Text { num, .. } => *num,
        }
    }

    /// The value as a boolean, as `print` writes one: `true` or `false`.
    pub(super) fn boolean(&self) -> Option<bool> {
        match self {
            Value::Text { text, .. } if text == "true" => Some(true),
            Value::Text { text, .. } if text == "false" => Some(false),
            _ => None,
        }
    }

    /// The value as a thread id: an integer, or `T` and digits as `print` writes a thread.
    pub(super) fn thread(&self) -> Option<Num> {
        let id = match self.number() {
            Some(Num::Int(id)) => Some(id),
            Some(Num::Float(_)) => None,
            None => match self {
                Value::Text { text, .. } => text
                    .strip_prefix('T')
                    .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|d| d.parse::<u64>().ok())
                    .map(i128::from),
                Value::Num(_) => None,
            },
        };
        id.map(Num::Int)
    }
}

/// `NaN`, `inf` and `-inf` (and `+inf`), as `print` writes those doubles: floats where the
/// name's values are.
pub(super) fn special_float(text: &str) -> Option<Num> {
    Some(Num::Float(match text {
        "NaN" => f64::NAN,
        "inf" | "+inf" => f64::INFINITY,
        "-inf" => f64::NEG_INFINITY,
        _ => return None,
    }))
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Num(Num::Int(i)) => write!(f, "{i}"),
            // Debug keeps a `.0` or an exponent, so the float reads back as a float.
            Value::Num(Num::Float(x)) => write!(f, "{x:?}"),
            Value::Text { text, cut, .. } => {
                f.write_str("\"")?;
                for c in text.chars() {
                    match c {
                        '"' => f.write_str("\\\"")?,
                        '\\' => f.write_str("\\\\")?,
                        '\n' => f.write_str("\\n")?,
                        '\r' => f.write_str("\\r")?,
                        '\t' => f.write_str("\\t")?,
                        c if c.is_control() => write!(f, "\\u{{{:x}}}", c as u32)?,
                        c => write!(f, "{c}")?,
                    }
                }
                f.write_str(if *cut { "\"..." } else { "\"" })
            }
        }
    }
}

/// Why a word that looks like a number is not one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NumberError {
    /// `0x` without hexadecimal digits after it.
    Hex,
    /// Neither an integer nor a float.
    Syntax,
    /// Too large for an `i128` or an `f64`.
    Range,
}

impl NumberError {
    pub(super) fn message(self, word: &str) -> String {
        let word = shown(word);
        match self {
            NumberError::Hex => format!(
                "bad number `{word}`: after `0x` come hexadecimal digits (0-9, a-f); to mean text, quote it: \"{word}\""
            ),
            NumberError::Syntax => format!(
                "bad number `{word}`: write an integer (42, -7, 0x1f) or a float (1.5, 2e-3); to mean text, quote it: \"{word}\""
            ),
            NumberError::Range => {
                format!("number `{word}` is out of range: an integer must fit in 128 bits, a float in an f64")
            }
        }
    }
}

/// Whether `word` starts like a number: a digit, or `-` or `.` (or `-.`) before one.
pub(super) fn looks_numeric(word: &str) -> bool {
    let unsigned = word.strip_prefix('-').unwrap_or(word);
    let digits = unsigned.strip_prefix('.').unwrap_or(unsigned);
    digits.starts_with(|c: char| c.is_ascii_digit())
}

/// Reads a whole number: `-`?, then `0x` and hex digits, decimal digits, or a float.
pub(super) fn parse_number(word: &str) -> Result<Num, NumberError> {
    let (negative, unsigned) = match word.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, word),
    };
    let hex = unsigned.strip_prefix("0x").or_else(|| unsigned.strip_prefix("0X"));
    let magnitude = match hex {
        Some(digits) if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) => {
            return Err(NumberError::Hex);
        }
        Some(digits) => u128::from_str_radix(digits, 16).map_err(|_| NumberError::Range)?,
        None if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) => {
            unsigned.parse::<u128>().map_err(|_| NumberError::Range)?
        }
        None if is_float(unsigned) => {
            let x: f64 = word.parse().map_err(|_| NumberError::Syntax)?;
            return if x.is_finite() { Ok(Num::Float(x)) } else { Err(NumberError::Range) };
        }
        None => return Err(NumberError::Syntax),
    };
    let value = if negative && magnitude == 1 << 127 {
        i128::MIN
    } else {
        let value = i128::try_from(magnitude).map_err(|_| NumberError::Range)?;
        if negative { -value } else { value }
    };
    Ok(Num::Int(value))
}

/// Whether `text` is `digits [. digits] [e|E [+|-] digits]` or `. digits [...]`: a float
/// without its sign, in the form Rust's `f64::from_str` reads too.
pub(super) fn is_float(text: &str) -> bool {
    let b = text.as_bytes();
    let digits_from = |i: usize| b[i.min(b.len())..].iter().take_while(|c| c.is_ascii_digit()).count();
    let whole = digits_from(0);
    let mut i = whole;
    let mut fraction = 0;
    if b.get(i) == Some(&b'.') {
        fraction = digits_from(i + 1);
        i += 1 + fraction;
    }
    if whole + fraction == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exponent = digits_from(i);
        if exponent == 0 {
            return false;
        }
        i += exponent;
    }
    i == b.len()
}
