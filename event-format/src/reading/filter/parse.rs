//! Reading tokens into a tree of comparisons by recursive descent, with one token of
//! lookahead, checking each name and each comparison's types as it goes.

use super::check::mismatch;
use super::eval::{Compare, Node, Target};
use super::lex::{Lexer, Tok, Token, describe};
use super::value::{Op, Value, looks_numeric, parse_number};
use super::{BUILTIN_NAMES, FilterError, MAX_NESTING, OPERATORS, ValueType, error, shown};
use std::collections::BTreeMap;

/// The error for `token` where a condition has ended and `&&`, `||` (or, `in_parens`, `)`)
/// must follow.
pub(super) fn expected_join(token: &Token<'_>, in_parens: bool) -> FilterError {
    let wanted = if in_parens { "`&&`, `||` or `)`" } else { "`&&` or `||`" };
    let hint = match token.tok {
        Tok::Word("and" | "AND") => "; write `&&` for and",
        Tok::Word("or" | "OR") => "; write `||` for or",
        _ => "",
    };
    let found = describe(&token.tok);
    error(token.column, format!("expected {wanted} after a condition, found {found}{hint}"))
}

/// A recursive descent over the grammar, with one token of lookahead.
pub(super) struct Parser<'a, 'f> {
    pub(super) lexer: Lexer<'a>,
    pub(super) peeked: Option<Token<'a>>,
    /// The caller's parameter names, sorted, without repeats or built-ins.
    pub(super) params: Vec<&'f str>,
    /// Every parameter name the caller gave (built-ins' names too) with its types.
    pub(super) types: BTreeMap<&'f str, Vec<ValueType>>,
    /// How many `(` and `!` enclose the token being read.
    pub(super) depth: usize,
}

impl<'a, 'f> Parser<'a, 'f> {
    pub(super) fn new(text: &'a str, given: &[(&'f str, ValueType)]) -> Parser<'a, 'f> {
        let mut params: Vec<&str> = given.iter().map(|(f, _)| *f).filter(|f| !BUILTIN_NAMES.contains(f)).collect();
        params.sort_unstable();
        params.dedup();
        let mut types: BTreeMap<&str, Vec<ValueType>> = BTreeMap::new();
        for &(name, ty) in given {
            let known = types.entry(name).or_default();
            if !known.contains(&ty) {
                known.push(ty);
            }
        }
        Parser { lexer: Lexer { text, at: 0, column: 1, end_column: 1 }, peeked: None, params, types, depth: 0 }
    }

    /// The types of the name a comparison reads (a built-in's, but for `set`,
    /// which an event's own parameter of that name overrides).
    pub(super) fn types_of(&self, target: &Target) -> Vec<ValueType> {
        let given = |name: &str| self.types.get(name).cloned().unwrap_or_default();
        match target {
            Target::Tracing(_) => vec![ValueType::Any],
            Target::Param(name) => given(name),
            Target::Name(name) => match name.as_str() {
                "time" => vec![ValueType::Float],
                "thread" => vec![ValueType::Thread],
                "code" => vec![ValueType::Int],
                "name" | "kind" => vec![ValueType::Str],
                "set" => {
                    let mut types = given("set");
                    if !types.contains(&ValueType::Str) {
                        types.insert(0, ValueType::Str);
                    }
                    types
                }
                name => given(name),
            },
        }
    }

    pub(super) fn peek(&mut self) -> Result<&Token<'a>, FilterError> {
        let token = match self.peeked.take() {
            Some(token) => token,
            None => self.lexer.next()?,
        };
        Ok(self.peeked.insert(token))
    }

    pub(super) fn bump(&mut self) -> Result<Token<'a>, FilterError> {
        match self.peeked.take() {
            Some(token) => Ok(token),
            None => self.lexer.next(),
        }
    }

    /// `or := and ( "||" and )*`; `after` says where it starts, for messages.
    pub(super) fn or(&mut self, after: &str) -> Result<Node, FilterError> {
        let first = self.and(after)?;
        if !matches!(self.peek()?.tok, Tok::OrOr) {
            return Ok(first);
        }
        let mut terms = vec![first];
        while matches!(self.peek()?.tok, Tok::OrOr) {
            self.bump()?;
            terms.push(self.and("after `||`")?);
        }
        Ok(Node::Or(terms))
    }

    /// `and := unary ( "&&" unary )*`.
    pub(super) fn and(&mut self, after: &str) -> Result<Node, FilterError> {
        let first = self.unary(after)?;
        if !matches!(self.peek()?.tok, Tok::AndAnd) {
            return Ok(first);
        }
        let mut terms = vec![first];
        while matches!(self.peek()?.tok, Tok::AndAnd) {
            self.bump()?;
            terms.push(self.unary("after `&&`")?);
        }
        Ok(Node::And(terms))
    }

    /// `unary := "!" unary | "(" expr ")" | compare`.
    pub(super) fn unary(&mut self, after: &str) -> Result<Node, FilterError> {
        let token = self.bump()?;
        let column = token.column;
        match token.tok {
            Tok::Not => {
                self.enter(column)?;
                let inner = self.unary("after `!`")?;
                self.depth -= 1;
                Ok(Node::Not(Box::new(inner)))
            }
            Tok::LParen => {
                self.enter(column)?;
                let next = self.peek()?;
                if matches!(next.tok, Tok::RParen) {
                    return Err(error(next.column, "empty parentheses: put a condition between `(` and `)`"));
                }
                let inner = self.or("after `(`")?;
                let close = self.bump()?;
                match close.tok {
                    Tok::RParen => {}
                    Tok::End => {
                        return Err(error(column, "unclosed `(`: add a `)` to close it"));
                    }
                    _ => return Err(expected_join(&close, true)),
                }
                self.depth -= 1;
                Ok(inner)
            }
            Tok::Word(word) => self.compare(word, column),
            Tok::Str { .. } => Err(error(column, "expected a name, found a string; names are not quoted")),
            Tok::Op(op) => {
                Err(error(column, format!("expected a name before `{}`; a condition is NAME OP VALUE", shown(op))))
            }
            Tok::End | Tok::RParen | Tok::AndAnd | Tok::OrOr => {
                Err(error(column, format!("expected a condition {after}, found {}", describe(&token.tok))))
            }
        }
    }

    /// One more level of `(` or `!`, at `column`.
    pub(super) fn enter(&mut self, column: usize) -> Result<(), FilterError> {
        if self.depth >= MAX_NESTING {
            return Err(error(
                column,
                format!("nested too deeply: at most {MAX_NESTING} levels of `(` and `!`; simplify the filter"),
            ));
        }
        self.depth += 1;
        Ok(())
    }

    /// `compare := NAME OP VALUE`, after the name `word` at `column`.
    pub(super) fn compare(&mut self, word: &str, column: usize) -> Result<Node, FilterError> {
        if looks_numeric(word) {
            return Err(error(
                column,
                format!(
                    "expected a name, found the number `{}`; a condition is NAME OP VALUE, as in `size > 4096`",
                    shown(word)
                ),
            ));
        }
        let target = if let Some(param) = word.strip_prefix("args.") {
            if !self.types.contains_key(param) {
                return Err(error(column, self.unknown_param(param)));
            }
            Target::Param(param.to_owned())
        } else if let Some(field) = word.strip_prefix("fields.") {
            // A `tracing` field: the one thing here that is a field.
            if field.is_empty() {
                return Err(error(
                    column,
                    "`fields.` names a tracing field: write its name after the dot, as in `fields.id == 7`",
                ));
            }
            Target::Tracing(field.to_owned())
        } else {
            if !BUILTIN_NAMES.contains(&word) && self.params.binary_search(&word).is_err() {
                return Err(error(column, self.unknown_name(word)));
            }
            Target::Name(word.to_owned())
        };

        let token = self.bump()?;
        let op_column = token.column;
        let op = match token.tok {
            Tok::Op(text) => match Op::from_text(text) {
                Some(op) => op,
                None => return Err(error(token.column, unknown_operator(text))),
            },
            _ => {
                return Err(error(
                    token.column,
                    format!(
                        "expected an operator after `{}`, found {}; the operators are {OPERATORS}",
                        shown(word),
                        describe(&token.tok)
                    ),
                ));
            }
        };

        let token = self.bump()?;
        let value_column = token.column;
        let (value, raw) = match token.tok {
            Tok::Word(number) if looks_numeric(number) => {
                if matches!(op, Op::Glob | Op::NotGlob) {
                    let number = shown(number);
                    return Err(error(
                        token.column,
                        format!(
                            "`{op}` matches text against a glob, and `{number}` is a number; quote it (\"{number}\") or compare with `==`"
                        ),
                    ));
                }
                (
                    Value::Num(parse_number(number).map_err(|e| error(token.column, e.message(number)))?),
                    number.to_owned(),
                )
            }
            Tok::Word(text) => (Value::text(text.to_owned(), false), text.to_owned()),
            Tok::Str { text, cut } => {
                // Escaped as the filter writes it back: a message stays one line.
                let value = Value::text(text, cut);
                let raw = value.to_string();
                (value, raw)
            }
            Tok::End => {
                return Err(error(
                    token.column,
                    format!("missing value after `{op}`: write a number, a \"string\" or a word"),
                ));
            }
            _ => {
                return Err(error(
                    token.column,
                    format!(
                        "expected a value after `{op}`, found {}; write a number, a \"string\" or a word",
                        describe(&token.tok)
                    ),
                ));
            }
        };
        let types = self.types_of(&target);
        let names: Vec<&str> = types.iter().map(|t| t.described()).collect();
        let named = names.join(" or ");
        let shown_target = target.to_string();
        let faults: Vec<Option<(bool, String)>> =
            types.iter().map(|&ty| mismatch(ty, &named, &shown_target, op, &value, &raw)).collect();
        if let Some(Some((at_op, message))) = faults.first()
            && faults.iter().all(Option::is_some)
        {
            return Err(error(if *at_op { op_column } else { value_column }, message.clone()));
        }
        Ok(Node::Compare(Compare { target, op, value, value_column }))
    }

    /// The message for an unknown parameter after `args.`.
    pub(super) fn unknown_param(&self, word: &str) -> String {
        let params: Vec<&str> = self.types.keys().copied().collect();
        let hint = event_def::def::closest(word, params.iter().copied())
            .map(|near| format!("did you mean `args.{}`? ", near.escape_debug()))
            .unwrap_or_default();
        let all: Vec<String> = params.iter().map(|f| f.escape_debug().to_string()).collect();
        format!("no parameter is named `{}`; {hint}the parameters are {}", shown(word), all.join(", "))
    }

    /// The message for an unknown name: a suggestion, and the names there are.
    pub(super) fn unknown_name(&self, word: &str) -> String {
        let mut builtins = BUILTIN_NAMES;
        builtins.sort_unstable();
        let all: Vec<&str> = builtins.iter().copied().chain(self.params.iter().copied()).collect();
        let hint = match (event_def::def::closest(word, all.iter().copied()), word) {
            (Some(near), _) => format!("did you mean `{}`?", near.escape_debug()),
            (None, "not" | "NOT") => "to negate a condition, write `!`;".to_owned(),
            (None, _) => String::new(),
        };
        let word = shown(word);
        // Escaped, so that names from a damaged log cannot break the line.
        let all: Vec<String> = all.iter().map(|f| f.escape_debug().to_string()).collect();
        let all = all.join(", ");
        if hint.is_empty() {
            format!("unknown name `{word}`; the names are {all}")
        } else {
            format!("unknown name `{word}`; {hint} the names are {all}")
        }
    }
}

/// The message for an operator that is not one of [`OPERATORS`].
pub(super) fn unknown_operator(text: &str) -> String {
    let meant = match text {
        "=" | "===" => Some("=="),
        "=<" => Some("<="),
        "=>" => Some(">="),
        "<>" | "=!" | "!==" => Some("!="),
        "=~" | "~=" | "==~" => Some("~"),
        "~!" | "!=~" => Some("!~"),
        _ => None,
    };
    match meant {
        Some(meant) => format!("unknown operator `{text}`; did you mean `{meant}`?"),
        None => format!("unknown operator `{}`; the operators are {OPERATORS}", shown(text)),
    }
}
