//! The Mapple lexer: turns source text into [`Token`]s.
//!
//! Line structure follows Python: a newline ends a statement unless it is inside `(...)` or
//! `[...]`; blank and comment-only lines are ignored; outside braces, the indentation of the first
//! token of a line produces [`Tok::Indent`] / [`Tok::Dedent`] tokens. Inside `{...}` (the
//! manual's brace bodies) indentation carries no meaning. A lexical error ends the token stream
//! with a [`Tok::Error`] so that the parser reports errors in source order.

use crate::ast::Span;

/// A lexical token kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tok {
    /// An identifier or keyword (keywords are recognised by the parser).
    Ident(String),
    /// A non-negative integer literal.
    Int(i64),
    /// A string literal with escapes resolved.
    Str(String),
    /// A punctuation or operator token, e.g. `"("`, `"=="`.
    Punct(&'static str),
    /// End of a logical line.
    Newline,
    /// The line is indented deeper than the enclosing block.
    Indent,
    /// The line returns to an enclosing block's indentation.
    Dedent,
    /// End of input.
    Eof,
    /// A lexical error: what was expected and what was found.
    Error {
        /// What the lexer expected.
        expected: String,
        /// What it found.
        found: String,
    },
}

/// A token with its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    /// The kind.
    pub tok: Tok,
    /// Where it starts.
    pub span: Span,
}

/// Operators and punctuation, longest first so that `==` wins over `=`.
const PUNCTS: [&str; 26] = [
    "==", "!=", "<=", ">=", "&&", "||", "(", ")", "[", "]", "{", "}", ",", ";", ":", ".", "?", "+",
    "-", "*", "/", "%", "=", "<", ">", "!",
];

/// Tab stops for measuring indentation.
const TAB_WIDTH: usize = 8;

struct Lexer {
    chars: Vec<char>,
    pos: usize,
    line: usize,
    col: usize,
    /// Open `(` and `[` (newlines inside are not significant).
    paren_depth: usize,
    /// Open `{` (indentation inside is not significant).
    brace_depth: usize,
    /// Indentation widths of the enclosing indented blocks (always starts with 0).
    indents: Vec<usize>,
    out: Vec<Token>,
}

/// Lexes `source` completely. The result always ends with [`Tok::Eof`] or [`Tok::Error`].
pub(crate) fn lex(source: &str) -> Vec<Token> {
    let mut lx = Lexer {
        chars: source.chars().collect(),
        pos: 0,
        line: 1,
        col: 1,
        paren_depth: 0,
        brace_depth: 0,
        indents: vec![0],
        out: Vec::new(),
    };
    if let Err((span, expected, found)) = lx.run() {
        lx.out.push(Token {
            tok: Tok::Error { expected, found },
            span,
        });
    }
    lx.out
}

type LexResult = Result<(), (Span, String, String)>;

fn describe_char(c: char) -> String {
    if c.is_control() || c.is_whitespace() {
        format!("character {}", c.escape_default())
    } else {
        format!("character `{c}`")
    }
}

impl Lexer {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, k: usize) -> Option<char> {
        self.chars.get(self.pos + k).copied()
    }

    /// True at the start of a comment: `#` (the manual's) or `//` (the reference compiler
    /// also takes it), to the end of the line.
    fn at_comment(&self) -> bool {
        self.peek() == Some('#') || (self.peek() == Some('/') && self.peek_at(1) == Some('/'))
    }

    fn span(&self) -> Span {
        Span::new(self.line, self.col)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn push(&mut self, tok: Tok, span: Span) {
        self.out.push(Token { tok, span });
    }

    fn last_is_newline_or_start(&self) -> bool {
        matches!(
            self.out.last().map(|t| &t.tok),
            None | Some(Tok::Newline) | Some(Tok::Indent) | Some(Tok::Dedent)
        )
    }

    fn run(&mut self) -> LexResult {
        let mut at_line_start = true;
        loop {
            if at_line_start && self.paren_depth == 0 {
                at_line_start = false;
                if !self.line_start()? {
                    // The rest of the line was blank or a comment; the newline was consumed.
                    if self.peek().is_none() {
                        break;
                    }
                    at_line_start = true;
                    continue;
                }
            }
            let Some(c) = self.peek() else { break };
            match c {
                '\n' => {
                    let span = self.span();
                    self.bump();
                    if self.paren_depth == 0 {
                        if !self.last_is_newline_or_start() {
                            self.push(Tok::Newline, span);
                        }
                        at_line_start = true;
                    }
                }
                ' ' | '\t' | '\r' | '\x0c' => {
                    self.bump();
                }
                _ if self.at_comment() => {
                    while let Some(c) = self.peek() {
                        if c == '\n' {
                            break;
                        }
                        self.bump();
                    }
                }
                '"' | '\'' => self.string(c)?,
                c if c.is_ascii_digit() => self.number()?,
                c if c.is_ascii_alphabetic() || c == '_' => self.ident(),
                _ => self.punct()?,
            }
        }
        let span = self.span();
        if self.paren_depth == 0 && !self.last_is_newline_or_start() {
            self.push(Tok::Newline, span);
        }
        while self.indents.len() > 1 {
            self.indents.pop();
            self.push(Tok::Dedent, span);
        }
        self.push(Tok::Eof, span);
        Ok(())
    }

    /// Handles the indentation of a new line. Returns `false` when the line is blank or only a
    /// comment (it is then consumed including its newline).
    fn line_start(&mut self) -> Result<bool, (Span, String, String)> {
        let mut width = 0usize;
        while let Some(c) = self.peek() {
            match c {
                ' ' => width += 1,
                '\t' => width = (width / TAB_WIDTH + 1) * TAB_WIDTH,
                '\r' | '\x0c' => {}
                _ => break,
            }
            self.bump();
        }
        match self.peek() {
            None => return Ok(false),
            Some('\n') => {
                self.bump();
                return Ok(false);
            }
            Some(_) if self.at_comment() => {
                while let Some(c) = self.peek() {
                    self.bump();
                    if c == '\n' {
                        break;
                    }
                }
                return Ok(false);
            }
            Some(_) => {}
        }
        if self.brace_depth > 0 {
            return Ok(true);
        }
        let span = self.span();
        let current = self.indents.last().copied().unwrap_or(0);
        if width > current {
            self.indents.push(width);
            self.push(Tok::Indent, span);
        } else if width < current {
            let levels: Vec<String> = self.indents.iter().map(|w| (w + 1).to_string()).collect();
            while self.indents.last().is_some_and(|&w| w > width) {
                self.indents.pop();
                self.push(Tok::Dedent, span);
            }
            let now = self.indents.last().copied().unwrap_or(0);
            if now != width {
                return Err((
                    Span::new(self.line, 1),
                    format!(
                        "indentation matching an enclosing block (column {})",
                        levels.join(" or ")
                    ),
                    format!("a line starting at column {}", width + 1),
                ));
            }
        }
        Ok(true)
    }

    fn string(&mut self, quote: char) -> LexResult {
        let span = self.span();
        self.bump();
        let mut s = String::new();
        loop {
            match self.peek() {
                None | Some('\n') => {
                    return Err((
                        self.span(),
                        format!("`{quote}` to close the string started at {span}"),
                        if self.peek().is_none() {
                            "end of file".to_string()
                        } else {
                            "end of line".to_string()
                        },
                    ));
                }
                Some(c) if c == quote => {
                    self.bump();
                    break;
                }
                Some('\\') => {
                    let esc_span = self.span();
                    self.bump();
                    let e = self.peek();
                    let resolved = match e {
                        Some('n') => '\n',
                        Some('t') => '\t',
                        Some('r') => '\r',
                        Some('0') => '\0',
                        Some('\\') => '\\',
                        Some('"') => '"',
                        Some('\'') => '\'',
                        Some(other) => {
                            return Err((
                                esc_span,
                                "an escape sequence (\\n, \\t, \\r, \\0, \\\\, \\\", \\')".into(),
                                format!("`\\{other}`"),
                            ));
                        }
                        None => {
                            return Err((
                                self.span(),
                                format!("`{quote}` to close the string started at {span}"),
                                "end of file".into(),
                            ));
                        }
                    };
                    self.bump();
                    s.push(resolved);
                }
                Some(c) => {
                    self.bump();
                    s.push(c);
                }
            }
        }
        self.push(Tok::Str(s), span);
        Ok(())
    }

    fn number(&mut self) -> LexResult {
        let span = self.span();
        let mut text = String::new();
        while let Some(c) = self.peek() {
            if c.is_ascii_digit() {
                text.push(c);
                self.bump();
            } else {
                break;
            }
        }
        if let Some(c) = self.peek() {
            if c.is_ascii_alphabetic() || c == '_' {
                return Err((
                    self.span(),
                    "a delimiter after the integer".into(),
                    describe_char(c),
                ));
            }
        }
        match text.parse::<i64>() {
            Ok(v) => {
                self.push(Tok::Int(v), span);
                Ok(())
            }
            Err(_) => Err((
                span,
                format!("an integer at most {}", i64::MAX),
                format!("`{text}`"),
            )),
        }
    }

    fn ident(&mut self) {
        let span = self.span();
        let mut text = String::new();
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || c == '_' {
                text.push(c);
                self.bump();
            } else {
                break;
            }
        }
        self.push(Tok::Ident(text), span);
    }

    fn punct(&mut self) -> LexResult {
        let span = self.span();
        for p in PUNCTS {
            let matches = p
                .chars()
                .enumerate()
                .all(|(k, pc)| self.peek_at(k) == Some(pc));
            if matches {
                for _ in 0..p.chars().count() {
                    self.bump();
                }
                match p {
                    "(" | "[" => self.paren_depth += 1,
                    ")" | "]" => self.paren_depth = self.paren_depth.saturating_sub(1),
                    "{" => self.brace_depth += 1,
                    "}" => self.brace_depth = self.brace_depth.saturating_sub(1),
                    _ => {}
                }
                self.push(Tok::Punct(p), span);
                return Ok(());
            }
        }
        let c = self.peek().unwrap_or(' ');
        Err((span, "a token".into(), describe_char(c)))
    }
}
