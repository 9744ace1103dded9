//! Groups tokens into statements: `KEYWORD(argument, ...)`.
//!
//! Syntax errors are reported and recovered from: a missing `,` is assumed where two
//! arguments meet; a missing `)` is assumed where a line starts a new statement; anything
//! else skips to the statement's own `)` or to the next line that starts a statement. The
//! loops count parentheses instead of recursing, so nesting costs no stack.

use super::lex::{Token, TokenKind};
use super::suggest::{closest, shown};
use super::{Diag, Pos};

/// The statements of events.def.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Keyword {
    Set,
    Version,
    Kind,
    Relation,
    Retired,
    Span,
    Counter,
    Flow,
    Histogram,
}

impl Keyword {
    const ALL: [(&'static str, Keyword); 9] = [
        ("SET", Keyword::Set),
        ("VERSION", Keyword::Version),
        ("KIND", Keyword::Kind),
        ("RELATION", Keyword::Relation),
        ("RETIRED", Keyword::Retired),
        ("SPAN", Keyword::Span),
        ("COUNTER", Keyword::Counter),
        ("FLOW", Keyword::Flow),
        ("HISTOGRAM", Keyword::Histogram),
    ];

    fn from_word(word: &str) -> Option<Keyword> {
        Keyword::ALL.iter().find(|(w, _)| *w == word).map(|(_, k)| *k)
    }
}

/// One statement whose keyword is known.
#[derive(Clone, Debug)]
pub(super) struct Statement<'a> {
    pub(super) keyword: Keyword,
    /// The keyword's token.
    pub(super) head: Token<'a>,
    /// The arguments: words, numbers and strings.
    pub(super) args: Vec<Token<'a>>,
    /// Where the closing `)` is, or where it is missing.
    pub(super) close: Pos,
    /// Part of the argument list was skipped after a syntax error: `args` may lack some.
    pub(super) broken: bool,
}

/// Reads the statements of `tokens`, reporting syntax errors into `diags`.
pub(super) fn statements<'a>(tokens: &[Token<'a>], diags: &mut Vec<Diag>) -> Vec<Statement<'a>> {
    let mut parser = Parser { tokens, at: 0, diags, statements: Vec::new() };
    parser.run();
    parser.statements
}

struct Parser<'t, 'a, 'd> {
    tokens: &'t [Token<'a>],
    /// Index of the next token.
    at: usize,
    diags: &'d mut Vec<Diag>,
    statements: Vec<Statement<'a>>,
}

const STATEMENT_HELP: &str = "statements are SET(...), VERSION(...), KIND(...), RELATION(...), RETIRED(...), SPAN(...), COUNTER(...), FLOW(...) and HISTOGRAM(...), one after another";

impl<'a> Parser<'_, 'a, '_> {
    fn peek(&self) -> Option<&Token<'a>> {
        self.tokens.get(self.at)
    }

    fn error(&mut self, pos: Pos, message: impl Into<String>, help: impl Into<String>) {
        self.diags.push(Diag::new(pos, message, help));
    }

    /// Whether token `i` starts a statement on its own line: a word first on its line,
    /// followed by `(`. Recovery stops there; parameter names on a continuation line are
    /// never followed by `(`.
    fn starts_line_statement(&self, i: usize) -> bool {
        let starts = self.tokens.get(i).is_some_and(|t| t.first_on_line && t.kind == TokenKind::Word);
        starts && self.tokens.get(i + 1).is_some_and(|t| t.kind == TokenKind::Open)
    }

    /// Where a missing token belongs: just after the last token read, or at the start.
    fn after_last(&self) -> Pos {
        self.at.checked_sub(1).and_then(|i| self.tokens.get(i)).map_or(Pos::START, |t| t.end)
    }

    /// Skips at least one token, then up to the next line that starts a statement.
    fn skip_to_next_statement(&mut self) {
        self.at += 1;
        while self.at < self.tokens.len() && !self.starts_line_statement(self.at) {
            self.at += 1;
        }
    }

    /// Skips to just after the `)` that closes the current argument list, or up to the next
    /// line that starts a statement, whichever comes first.
    fn skip_to_close(&mut self) {
        let mut depth = 0usize;
        while let Some(token) = self.peek() {
            if self.starts_line_statement(self.at) {
                return;
            }
            match token.kind {
                TokenKind::Open => depth += 1,
                TokenKind::Close if depth == 0 => {
                    self.at += 1;
                    return;
                }
                TokenKind::Close => depth -= 1,
                _ => {}
            }
            self.at += 1;
        }
    }

    fn run(&mut self) {
        while let Some(token) = self.peek() {
            let token = token.clone();
            match token.kind {
                TokenKind::Word => self.statement(token),
                TokenKind::Close => {
                    self.error(token.start, "unexpected `)`", "remove it: it closes nothing");
                    self.at += 1;
                }
                _ => {
                    self.error(
                        token.start,
                        format!("expected a statement, found {}", token.describe()),
                        STATEMENT_HELP,
                    );
                    self.skip_to_next_statement();
                }
            }
        }
    }

    /// Reads a statement from its keyword, `head`, the next token.
    fn statement(&mut self, head: Token<'a>) {
        let has_open = self.tokens.get(self.at + 1).is_some_and(|t| t.kind == TokenKind::Open);
        let Some(keyword) = Keyword::from_word(head.text) else {
            self.unknown_keyword(&head);
            if has_open {
                self.at += 2;
                self.skip_to_close();
            } else {
                self.skip_to_next_statement();
            }
            return;
        };
        if !has_open {
            self.error(head.end, format!("expected `(` after `{}`", head.text), format!("write `{}(...)`", head.text));
            self.skip_to_next_statement();
            return;
        }
        self.at += 2;
        let (args, close, broken) = self.arguments(&head);
        self.statements.push(Statement { keyword, head, args, close, broken });
    }

    fn unknown_keyword(&mut self, head: &Token<'a>) {
        let names = Keyword::ALL.map(|(w, _)| w);
        let help = match closest(head.text, names) {
            Some(k) if k.eq_ignore_ascii_case(head.text) => {
                format!("did you mean `{k}`? keywords are upper case")
            }
            Some(k) => format!("did you mean `{k}`?"),
            None => {
                "the keywords are SET, VERSION, KIND, RELATION, RETIRED, SPAN, COUNTER, FLOW and HISTOGRAM".to_owned()
            }
        };
        self.error(head.start, format!("unknown keyword `{}`", shown(head.text)), help);
    }

    /// Reads an argument list after its `(`, through its `)`.
    /// Returns the arguments, where the `)` is (or belongs) and whether some were skipped.
    fn arguments(&mut self, head: &Token<'a>) -> (Vec<Token<'a>>, Pos, bool) {
        let mut args = Vec::new();
        loop {
            let Some(token) = self.peek() else {
                let pos = self.after_last();
                self.missing_close(head, pos);
                return (args, pos, false);
            };
            let token = token.clone();
            match token.kind {
                TokenKind::Close => {
                    self.at += 1;
                    return (args, token.start, false);
                }
                TokenKind::Comma => {
                    self.error(
                        token.start,
                        "expected an argument before `,`",
                        "remove the extra `,` or write the missing argument",
                    );
                    self.skip_to_close();
                    return (args, token.start, true);
                }
                TokenKind::Open => {
                    self.error(
                        token.start,
                        "unexpected `(` in an argument list",
                        "arguments are names, numbers and strings; remove the `(`",
                    );
                    self.skip_to_close();
                    return (args, token.start, true);
                }
                TokenKind::Word | TokenKind::Number | TokenKind::Str { .. } | TokenKind::Setting { .. } => {
                    if self.starts_line_statement(self.at) {
                        let pos = self.after_last();
                        self.missing_close(head, pos);
                        return (args, pos, false);
                    }
                    self.at += 1;
                    args.push(token);
                    self.after_argument();
                }
            }
        }
    }

    /// After an argument: takes its `,`, or reports a missing one when another argument
    /// follows and goes on as if it were there.
    fn after_argument(&mut self) {
        let Some(next) = self.peek() else { return };
        match next.kind {
            TokenKind::Comma => self.at += 1,
            TokenKind::Word | TokenKind::Number | TokenKind::Str { .. } | TokenKind::Setting { .. }
                if !self.starts_line_statement(self.at) =>
            {
                let message = format!("missing `,` before {}", next.describe());
                let pos = self.after_last();
                self.error(pos, message, "separate the arguments with `,`");
            }
            _ => {}
        }
    }

    fn missing_close(&mut self, head: &Token<'a>, pos: Pos) {
        let last = self.at.checked_sub(1).and_then(|i| self.tokens.get(i));
        if last.is_some_and(|t| matches!(t.kind, TokenKind::Str { closed: false, .. })) {
            // An unterminated string took the `)` with it: its error says enough.
            return;
        }
        self.error(
            pos,
            format!("missing `)` to close `{}(` of line {}", head.text, head.start.line),
            "end the statement with `)`",
        );
    }
}
