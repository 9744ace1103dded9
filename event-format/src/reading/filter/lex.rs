//! Cutting a filter expression into tokens: words, numbers, strings with their escapes,
//! operators and punctuation, each with its column.

use super::value::looks_numeric;
use super::{FilterError, error, shown};

#[derive(Debug)]
pub(super) enum Tok<'a> {
    /// The end of the expression.
    End,
    LParen,
    RParen,
    /// `!` not followed by `=` or `~`.
    Not,
    AndAnd,
    OrOr,
    /// A run of `= < > ~ !` (starting with `!` only as `!=` or `!~`): an operator, or not.
    Op(&'a str),
    /// A bare word: a name, a number or a string.
    Word(&'a str),
    /// A double-quoted string, unescaped; `cut` when `print`'s `...` followed it.
    Str {
        text: String,
        cut: bool,
    },
}

#[derive(Debug)]
pub(super) struct Token<'a> {
    pub(super) tok: Tok<'a>,
    /// Where it starts; for [`Tok::End`], just after the last token.
    pub(super) column: usize,
}

/// How a token is named in "found ..." messages.
pub(super) fn describe(tok: &Tok<'_>) -> String {
    match tok {
        Tok::End => "the end of the filter".to_owned(),
        Tok::LParen => "`(`".to_owned(),
        Tok::RParen => "`)`".to_owned(),
        Tok::Not => "`!`".to_owned(),
        Tok::AndAnd => "`&&`".to_owned(),
        Tok::OrOr => "`||`".to_owned(),
        Tok::Op(text) | Tok::Word(text) => format!("`{}`", shown(text)),
        Tok::Str { .. } => "a string".to_owned(),
    }
}

pub(super) fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | '*' | '?' | '-' | ':')
}

pub(super) fn is_operator_char(c: char) -> bool {
    matches!(c, '=' | '<' | '>' | '~' | '!')
}

/// Cuts the expression into tokens, one at a time, as the parser asks.
pub(super) struct Lexer<'a> {
    pub(super) text: &'a str,
    /// The byte offset of the next character.
    pub(super) at: usize,
    /// Its column.
    pub(super) column: usize,
    /// The column just after the last token.
    pub(super) end_column: usize,
}

impl<'a> Lexer<'a> {
    pub(super) fn peek_char(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    pub(super) fn bump_char(&mut self) -> Option<char> {
        let c = self.peek_char()?;
        self.at += c.len_utf8();
        self.column += 1;
        Some(c)
    }

    pub(super) fn next(&mut self) -> Result<Token<'a>, FilterError> {
        while self.peek_char().is_some_and(char::is_whitespace) {
            self.bump_char();
        }
        let (start, column) = (self.at, self.column);
        let Some(c) = self.bump_char() else {
            return Ok(Token { tok: Tok::End, column: self.end_column });
        };
        let tok = match c {
            '(' => Tok::LParen,
            ')' => Tok::RParen,
            '&' | '|' if self.peek_char() == Some(c) => {
                self.bump_char();
                if c == '&' { Tok::AndAnd } else { Tok::OrOr }
            }
            '&' | '|' => {
                return Err(error(column, format!("`{c}` alone is not an operator; did you mean `{c}{c}`?")));
            }
            '!' if !matches!(self.peek_char(), Some('=' | '~')) => Tok::Not,
            c if is_operator_char(c) => {
                while self.peek_char().is_some_and(is_operator_char) {
                    self.bump_char();
                }
                Tok::Op(&self.text[start..self.at])
            }
            '"' => {
                let text = self.string(column)?;
                // `print` marks a string the writer cut with `...` after its closing quote.
                let cut = self.text[self.at..].starts_with("...");
                if cut {
                    for _ in 0..3 {
                        self.bump_char();
                    }
                }
                Tok::Str { text, cut }
            }
            '\'' => {
                return Err(error(column, "strings take double quotes, as in \"text\", not `'`"));
            }
            c if is_word_char(c) => {
                self.word(start, c);
                Tok::Word(&self.text[start..self.at])
            }
            c => {
                return Err(error(
                    column,
                    format!(
                        "unexpected character `{}`; a filter is conditions NAME OP VALUE joined by `&&`, `||`, `!` and parentheses",
                        c.escape_debug()
                    ),
                ));
            }
        };
        self.end_column = self.column;
        Ok(Token { tok, column })
    }

    /// The rest of a word that started with `first` at `start`. A `+` belongs to it after
    /// the `e` of a number's exponent (`1e+6`).
    pub(super) fn word(&mut self, start: usize, first: char) {
        let mut last = first;
        loop {
            match self.peek_char() {
                Some(c) if is_word_char(c) => {}
                Some('+') if matches!(last, 'e' | 'E') && looks_numeric(&self.text[start..self.at]) => {}
                _ => return,
            }
            if let Some(c) = self.bump_char() {
                last = c;
            }
        }
    }

    /// The rest of a string whose `"` is at column `open`, unescaped: the escapes of
    /// `print`'s text and of JSON strings. `\xNN` escapes bytes; those that are not UTF-8
    /// read as U+FFFD, as an event's strings do.
    pub(super) fn string(&mut self, open: usize) -> Result<String, FilterError> {
        let unterminated = || error(open, "unterminated string: add a closing `\"`");
        let mut out: Vec<u8> = Vec::new();
        let push = |out: &mut Vec<u8>, c: char| out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        loop {
            let column = self.column;
            match self.bump_char().ok_or_else(unterminated)? {
                '"' => return Ok(String::from_utf8_lossy(&out).into_owned()),
                '\\' => match self.bump_char().ok_or_else(unterminated)? {
                    '"' => out.push(b'"'),
                    '\\' => out.push(b'\\'),
                    'n' => out.push(b'\n'),
                    'r' => out.push(b'\r'),
                    't' => out.push(b'\t'),
                    'u' => {
                        let c = self.unicode_escape().ok_or_else(|| bad_escape(column, "\\u"))?;
                        push(&mut out, c);
                    }
                    'x' => {
                        let hex: String = (0..2).filter_map(|_| self.bump_char()).collect();
                        match u8::from_str_radix(&hex, 16) {
                            Ok(b) if hex.len() == 2 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => out.push(b),
                            _ => return Err(bad_escape(column, &format!("\\x{}", hex.escape_debug()))),
                        }
                    }
                    c => return Err(bad_escape(column, &format!("\\{}", c.escape_debug()))),
                },
                c => push(&mut out, c),
            }
        }
    }

    /// After `\u`: `{` hex digits `}` (as `print` writes) or four hex digits (as JSON does).
    pub(super) fn unicode_escape(&mut self) -> Option<char> {
        let digits: String = if self.peek_char() == Some('{') {
            self.bump_char();
            let mut digits = String::new();
            loop {
                match self.bump_char()? {
                    '}' => break,
                    c if c.is_ascii_hexdigit() && digits.len() < 6 => digits.push(c),
                    _ => return None,
                }
            }
            digits
        } else {
            let digits: String = (0..4)
                .map_while(|_| self.peek_char().filter(char::is_ascii_hexdigit).and_then(|_| self.bump_char()))
                .collect();
            if digits.len() != 4 {
                return None;
            }
            digits
        };
        char::from_u32(u32::from_str_radix(&digits, 16).ok()?)
    }
}

/// The error for an unknown or malformed escape `what` at `column`.
pub(super) fn bad_escape(column: usize, what: &str) -> FilterError {
    error(
        column,
        format!(
            "unknown escape `{what}` in a string; the escapes are \\\", \\\\, \\n, \\r, \\t, \\u{{1b}}, \\u001b and \\xNN"
        ),
    )
}
