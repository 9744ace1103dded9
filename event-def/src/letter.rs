//! Format letters: the type of each parameter of an event.

use std::fmt;

/// The type of one event parameter, written as one letter in events.def.
///
/// The letters are MPS's (design.mps.telemetry), plus `I` for signed integers.
/// docs/FORMAT.md gives the wire encoding of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Letter {
    /// `P`: a pointer, 64 bits on the wire.
    Pointer,
    /// `A`: an address, 64 bits on the wire.
    Address,
    /// `W`: a word (unsigned), 64 bits on the wire.
    Word,
    /// `U`: an unsigned integer, 32 bits on the wire.
    Unsigned,
    /// `I`: a signed integer, 64 bits (two's complement) on the wire.
    Signed,
    /// `D`: a double, IEEE 754 binary64 on the wire.
    Double,
    /// `B`: a boolean, one byte (0 or 1) on the wire.
    Bool,
    /// `S`: a string, UTF-8 with a 16-bit length prefix on the wire.
    String,
}

impl Letter {
    /// Every letter, in the order of the documentation table.
    pub const ALL: [Letter; 8] = [
        Letter::Pointer,
        Letter::Address,
        Letter::Word,
        Letter::Unsigned,
        Letter::Signed,
        Letter::Double,
        Letter::Bool,
        Letter::String,
    ];

    /// The letters as events.def spells them, for error messages.
    pub const SPELLED: &'static str = "P A W U I D B S";

    /// The letter for `c`, if it is one of `P A W U I D B S`.
    pub fn from_char(c: char) -> Option<Letter> {
        Some(match c {
            'P' => Letter::Pointer,
            'A' => Letter::Address,
            'W' => Letter::Word,
            'U' => Letter::Unsigned,
            'I' => Letter::Signed,
            'D' => Letter::Double,
            'B' => Letter::Bool,
            'S' => Letter::String,
            _ => return None,
        })
    }

    /// The letter as events.def spells it.
    pub fn as_char(self) -> char {
        match self {
            Letter::Pointer => 'P',
            Letter::Address => 'A',
            Letter::Word => 'W',
            Letter::Unsigned => 'U',
            Letter::Signed => 'I',
            Letter::Double => 'D',
            Letter::Bool => 'B',
            Letter::String => 'S',
        }
    }

    /// A short description, for error messages ("pointer", "word", ...).
    pub fn describe(self) -> &'static str {
        match self {
            Letter::Pointer => "pointer",
            Letter::Address => "address",
            Letter::Word => "word",
            Letter::Unsigned => "unsigned 32-bit integer",
            Letter::Signed => "signed integer",
            Letter::Double => "double",
            Letter::Bool => "bool",
            Letter::String => "string",
        }
    }

    /// The number of bytes the value takes on the wire, or `None` for a
    /// string, whose size depends on its length (2 bytes of prefix plus the text).
    pub const fn fixed_size(self) -> Option<usize> {
        match self {
            Letter::Pointer | Letter::Address | Letter::Word | Letter::Signed | Letter::Double => Some(8),
            Letter::Unsigned => Some(4),
            Letter::Bool => Some(1),
            Letter::String => None,
        }
    }

    /// The smallest number of bytes the value can take on the wire
    /// (an empty string takes its 2-byte prefix).
    pub fn min_size(self) -> usize {
        self.fixed_size().unwrap_or(2)
    }
}

impl fmt::Display for Letter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.as_char())
    }
}

/// Formats a list of letters as events.def writes it: `PAW`, or `0` when empty.
pub fn format_string(letters: &[Letter]) -> String {
    if letters.is_empty() { "0".to_owned() } else { letters.iter().map(|l| l.as_char()).collect() }
}
