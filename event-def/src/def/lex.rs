//! Splits events.def text into tokens, each with its position.
//!
//! Lexical errors (an unterminated string, an unknown escape, a character that starts no
//! token) are reported and skipped, so that parsing goes on.

use super::suggest::shown;
use super::{Diag, Pos};

/// What a token is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum TokenKind {
    /// A word: a keyword, a name, `TRUE`, a format such as `PAW`. Letters (any script),
    /// digits and `_`, not starting with a digit; [`Schema::check`](crate::Schema::check)
    /// decides which are identifiers.
    Word,
    /// Something that starts with a digit: `17`, `0x0011`, but also `12ab`, which the parser
    /// refuses as a number.
    Number,
    /// A string in double quotes, with its escapes resolved. `closed` is false when the
    /// string runs to the end of its line without its closing quote (an error given already).
    Str { value: String, closed: bool },
    /// `(`
    Open,
    /// `)`
    Close,
    /// `,`
    Comma,
    /// A setting: a word, `=` and its value written together, such as `limit=1000/s`. The
    /// value runs to the next white space, `,`, `(`, `)`, `"` or `#`, and may be empty;
    /// `key` is the word's length in bytes.
    Setting { key: usize },
}

/// A token with its text and place.
#[derive(Clone, Debug)]
pub(super) struct Token<'a> {
    pub(super) kind: TokenKind,
    /// The token's text as written (for a string, with its quotes and escapes).
    pub(super) text: &'a str,
    /// Where it starts.
    pub(super) start: Pos,
    /// Just after its last character.
    pub(super) end: Pos,
    /// No token before it on its line.
    pub(super) first_on_line: bool,
}

impl<'a> Token<'a> {
    /// A setting's word and value (`limit`, `1000/s`); `None` for another token.
    pub(super) fn setting(&self) -> Option<(&'a str, &'a str)> {
        match self.kind {
            TokenKind::Setting { key } => Some((&self.text[..key], &self.text[key + 1..])),
            _ => None,
        }
    }

    /// The token as messages show it: "`name`", "a string", "`(`".
    pub(super) fn describe(&self) -> String {
        match self.kind {
            TokenKind::Str { .. } => "a string".to_owned(),
            _ => format!("`{}`", shown(self.text)),
        }
    }
}

/// Splits `src` into tokens, reporting lexical errors into `diags`.
pub(super) fn lex<'a>(src: &'a str, diags: &mut Vec<Diag>) -> Vec<Token<'a>> {
    let mut lexer = Lexer { src, at: 0, pos: Pos::START, last_line: 0, tokens: Vec::new(), diags };
    // A byte-order mark some editors write: not part of the text, not counted as a column.
    if src.starts_with('\u{feff}') {
        lexer.at = '\u{feff}'.len_utf8();
    }
    lexer.run();
    lexer.tokens
}

struct Lexer<'a, 'd> {
    src: &'a str,
    /// Byte offset of the next character.
    at: usize,
    /// Position of the next character.
    pos: Pos,
    /// The line of the last token pushed (0 before the first).
    last_line: u32,
    tokens: Vec<Token<'a>>,
    diags: &'d mut Vec<Diag>,
}

fn starts_word(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn continues_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `c` starts some token, a comment or is white space: the end of a run of
/// unexpected characters.
fn starts_something(c: char) -> bool {
    starts_word(c) || c.is_ascii_digit() || c.is_whitespace() || "(),\"#".contains(c)
}

impl<'a> Lexer<'a, '_> {
    fn peek(&self) -> Option<char> {
        self.src[self.at..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += c.len_utf8();
        if c == '\n' {
            self.pos = Pos { line: self.pos.line.saturating_add(1), column: 1 };
        } else {
            self.pos = self.pos.right(1);
        }
        Some(c)
    }

    fn bump_while(&mut self, keep: impl Fn(char) -> bool) {
        while self.peek().is_some_and(&keep) {
            self.bump();
        }
    }

    fn push(&mut self, kind: TokenKind, from: usize, start: Pos) {
        let first_on_line = self.last_line != start.line;
        self.last_line = start.line;
        self.tokens.push(Token { kind, text: &self.src[from..self.at], start, end: self.pos, first_on_line });
    }

    fn run(&mut self) {
        while let Some(c) = self.peek() {
            let (from, start) = (self.at, self.pos);
            if c.is_whitespace() {
                self.bump();
            } else if c == '#' {
                self.bump_while(|c| c != '\n');
            } else if self.src[self.at..].starts_with("//") {
                self.diags.push(Diag::new(start, "comments start with `#`, not `//`", "write `#` instead of `//`"));
                self.bump_while(|c| c != '\n');
            } else if c == '\''
                && self.src[self.at + 1..]
                    .find(['\'', '\n'])
                    .is_some_and(|end| self.src[self.at + 1 + end..].starts_with('\''))
            {
                // A string in single quotes: one error, and the string as written.
                self.diags.push(Diag::new(
                    start,
                    "strings are written in double quotes, not single quotes",
                    "write `\"...\"`",
                ));
                self.bump();
                let value_from = self.at;
                self.bump_while(|c| c != '\'');
                let value = self.src[value_from..self.at].to_owned();
                self.bump();
                self.push(TokenKind::Str { value, closed: true }, from, start);
            } else if starts_word(c) {
                self.bump_while(continues_word);
                if self.peek() == Some('=') {
                    let key = self.at - from;
                    self.bump();
                    self.bump_while(|c| !(c.is_whitespace() || "(),\"#".contains(c)));
                    self.push(TokenKind::Setting { key }, from, start);
                } else {
                    self.push(TokenKind::Word, from, start);
                }
            } else if c.is_ascii_digit() {
                self.bump_while(continues_word);
                self.push(TokenKind::Number, from, start);
            } else if c == '"' {
                let (value, closed) = self.string();
                self.push(TokenKind::Str { value, closed }, from, start);
            } else if let Some(kind) = match c {
                '(' => Some(TokenKind::Open),
                ')' => Some(TokenKind::Close),
                ',' => Some(TokenKind::Comma),
                _ => None,
            } {
                self.bump();
                self.push(kind, from, start);
            } else {
                // One error for a run of unexpected characters, not one for each.
                self.bump();
                self.bump_while(|c| !starts_something(c));
                self.diags.push(unexpected(c, start));
            }
        }
    }

    /// Reads a string from its opening quote; returns its value and whether it was closed.
    /// An unterminated string ends at the end of its line.
    fn string(&mut self) -> (String, bool) {
        let start = self.pos;
        self.bump();
        let mut value = String::new();
        loop {
            match self.peek() {
                None | Some('\n') => {
                    self.diags.push(Diag::new(
                        start,
                        "unterminated string",
                        "close it with `\"` on the same line; write \\n for a line break",
                    ));
                    return (value, false);
                }
                Some('"') => {
                    self.bump();
                    return (value, true);
                }
                Some('\\') => {
                    let at = self.pos;
                    self.bump();
                    match self.peek() {
                        Some('"') => value.push('"'),
                        Some('\\') => value.push('\\'),
                        Some('n') => value.push('\n'),
                        Some('t') => value.push('\t'),
                        // Leave the end of the line or of the text to the unterminated string.
                        None | Some('\n') => continue,
                        Some(other) => self.diags.push(Diag::new(
                            at,
                            format!("unknown escape `\\{}` in a string", shown_char(other)),
                            "the escapes are \\\" \\\\ \\n \\t; write \\\\ for a backslash",
                        )),
                    }
                    self.bump();
                }
                Some(c) => {
                    value.push(c);
                    self.bump();
                }
            }
        }
    }
}

/// A character as messages show it: itself when it is visible ASCII, else its code point.
fn shown_char(c: char) -> String {
    if c.is_ascii_graphic() { c.to_string() } else { format!("U+{:04X}", u32::from(c)) }
}

fn unexpected(c: char, pos: Pos) -> Diag {
    let what = if c.is_ascii_graphic() {
        format!("unexpected character `{c}`")
    } else {
        format!("unexpected character U+{:04X}", u32::from(c))
    };
    let help = match c {
        ';' => "statements need no `;`: remove it",
        '-' | '+' => "numbers are written without a sign: decimal such as 17 or hexadecimal such as 0x0011",
        '[' | ']' | '{' | '}' => "arguments go in round parentheses: `KIND(Name, \"...\")`",
        '\'' => "strings are written in double quotes",
        _ => {
            "remove it: events.def has words, numbers, strings in double quotes, `(`, `)`, `,` and comments that start with `#`"
        }
    };
    Diag::new(pos, what, help)
}
