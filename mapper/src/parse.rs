//! The Mapple parser: source text to [`crate::ast::Program`].
//!
//! A hand-written lexer (module `lexer`) and recursive-descent parser (module `parser`) accept the
//! language as both sources write it:
//!
//! - the DSL mapper manual's style: every statement ends with `;`, function bodies are wrapped in
//!   `{ ... }`, parameters are typed (`def f(Task task) { ... }`);
//! - the Mapple paper's style: statements end at the end of the line, function bodies follow `:`
//!   as a Python-like indented block, parameters may be untyped (`def block(Task task):`).
//!
//! Both styles may be mixed in one file. A newline inside `(...)` or `[...]` does not end a
//! statement, so tuples may span lines. `#` starts a comment that runs to the end of the line.
//!
//! Expressions use C-like precedence, from loosest to tightest: `c ? a : b` (right-associative);
//! `||`; `&&`; `==` `!=`; `<` `<=` `>` `>=`; `+` `-`; `*` `/` `%`; unary `-` `!`; postfix calls,
//! indexing and attribute access. `*e` unpacks a tuple inside a tuple literal, an argument list or
//! an index list; a bare `*` in an index list is a wildcard; `a:b` in an index list is a slice.
//!
//! Every error is a [`ParseError`] that displays as `file:line:col: expected X, found Y` and is
//! reported at the first offending token in source order. The parser never panics; nesting
//! deeper than [`MAX_DEPTH`] (parentheses, operators in one chain, postfix chains, unary
//! operators) is an error rather than a stack overflow.

mod lexer;
mod parser;

use crate::ast::{Program, Span};

/// The deepest expression nesting the parser accepts.
///
/// Each parenthesis, bracket, unary operator, binary operator in one chain and postfix
/// operation (call, index, attribute) adds a level. Real mappers stay far below this (the
/// sources' examples need about 10); the limit keeps the parser (and dropping or printing the
/// tree) from overflowing the stack on hostile input. At the limit an unoptimised build needs
/// about 1.2 MiB of stack, so parsing fits the 2 MiB of a spawned thread.
pub const MAX_DEPTH: usize = 64;

/// A syntax error in a Mapple file.
///
/// Displays as `file:line:col: expected X, found Y`, where line and column are 1-based (the
/// column counts characters).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{col}: expected {expected}, found {found}")]
pub struct ParseError {
    /// The file name given to [`parse`].
    pub file: String,
    /// 1-based line of the offending token.
    pub line: usize,
    /// 1-based column (in characters) of the offending token.
    pub col: usize,
    /// What the parser expected at that point, e.g. "`;` or end of line".
    pub expected: String,
    /// What it found instead, e.g. "`x`" or "end of file".
    pub found: String,
}

impl ParseError {
    /// The position of the error.
    pub fn span(&self) -> Span {
        Span::new(self.line, self.col)
    }
}

/// Parses the Mapple program `source`; `file` names it in error messages.
///
/// Never panics, whatever the input.
///
/// ```
/// let prog = diffuse_mapper::parse::parse("m.mapple", "m = Machine(GPU);").unwrap();
/// assert_eq!(prog.stmts.len(), 1);
/// let err = diffuse_mapper::parse::parse("m.mapple", "m = Machine(GPU) x").unwrap_err();
/// assert_eq!(err.to_string(), "m.mapple:1:18: expected `;` or end of line, found `x`");
/// ```
pub fn parse(file: &str, source: &str) -> Result<Program, ParseError> {
    let tokens = lexer::lex(source);
    parser::Parser::new(file, tokens).program()
}
