//! Malformed inputs: each error names the file, the exact line and column, and what was
//! expected.

use diffuse_mapper::parse::{parse, ParseError};

/// Parses `src` as `bad.mapple`, expecting an error at `line:col` whose expectation contains
/// `expected` and whose "found" part contains `found`.
fn check(src: &str, line: usize, col: usize, expected: &str, found: &str) -> ParseError {
    let err = match parse("bad.mapple", src) {
        Ok(p) => panic!("parsed but should fail:\n{src}\n---\n{p}"),
        Err(e) => e,
    };
    let msg = err.to_string();
    assert_eq!((err.line, err.col), (line, col), "wrong position: {msg}");
    assert!(
        msg.starts_with(&format!("bad.mapple:{line}:{col}: expected ")),
        "{msg}"
    );
    assert!(err.expected.contains(expected), "expectation: {msg}");
    assert!(err.found.contains(found), "found: {msg}");
    assert_eq!(
        msg,
        format!(
            "bad.mapple:{line}:{col}: expected {}, found {}",
            err.expected, err.found
        )
    );
    err
}

#[test]
fn full_message_format() {
    let err = parse("cannon.mapple", "m = Machine(GPU) x = 1;").unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannon.mapple:1:18: expected `;` or end of line, found `x`"
    );
    assert_eq!(err.span(), diffuse_mapper::ast::Span::new(1, 18));
}

#[test]
fn missing_semicolon() {
    check(
        "Task foo CPU;\nm = Machine(GPU) x = 1;\n",
        2,
        18,
        "`;` or end of line",
        "`x`",
    );
    check(
        "def f(Task t) {\n    x = t.ipoint\n    return x y;\n}",
        3,
        14,
        "`;` or end of line",
        "`y`",
    );
    check(
        "GarbageCollect t * Task f CPU;",
        1,
        20,
        "`;` or end of line",
        "`Task`",
    );
}

#[test]
fn unclosed_paren() {
    check(
        "x = f(1, 2;\n",
        1,
        11,
        "`,` or `)` (to close `(` at 1:6)",
        "`;`",
    );
    // A newline inside parentheses does not end the statement: the error is at the next token.
    check(
        "x = (1, 2\nTask foo CPU;\n",
        2,
        1,
        "`,` or `)` (to close `(` at 1:5)",
        "`Task`",
    );
    check("x = f(1,\n", 2, 1, "an expression", "end of file");
    check(
        "x = m[0, 1",
        1,
        11,
        "`,` or `]` (to close `[` at 1:6)",
        "end of file",
    );
    check(
        "y = m[0, 1;",
        1,
        11,
        "`,` or `]` (to close `[` at 1:6)",
        "`;`",
    );
    check(
        "def f(Task t {",
        1,
        14,
        "`,` or `)` (to close `(` at 1:6)",
        "`{`",
    );
    check(
        "m = Machine(GPU;",
        1,
        16,
        "`)` (to close `(` at 1:12)",
        "`;`",
    );
}

#[test]
fn unclosed_brace() {
    check(
        "def f(Task t) {\n    return 1;\n",
        3,
        1,
        "`}` to close `{` at 1:15",
        "end of file",
    );
}

#[test]
fn bad_layout_constraint() {
    check(
        "Layout * * GPU SOA Fast;",
        1,
        20,
        "a layout constraint (SOA, AOS",
        "`Fast`",
    );
    check(
        "Layout * * * Align=128;",
        1,
        19,
        "alignment comparison (==, !=, <=, >=, <, >)",
        "`=`",
    );
    check(
        "Layout * * * Align== big;",
        1,
        22,
        "an alignment in bytes",
        "`big`",
    );
    check("Layout * * * 128;", 1, 14, "a layout constraint", "`128`");
    check(
        "Layout * * SOA;",
        1,
        12,
        "a processor kind (CPU, GPU, OMP, IO, PY, PROC), a memory kind (SYSMEM",
        "`SOA`",
    );
}

#[test]
fn unknown_statement_keyword() {
    check(
        "Task foo CPU;\nTsak bar GPU;\n",
        2,
        1,
        "a statement (Task, Region, Layout",
        "`Tsak`",
    );
    check("return 1;", 1, 1, "a statement (", "`return`");
    check("* * GPU;", 1, 1, "a statement (", "`*`");
    check("x;", 1, 1, "a statement (", "`x`");
    check(
        "x.y;",
        1,
        1,
        "an expression statement must be a call",
        "`x`",
    );
}

#[test]
fn bad_indentation() {
    check(
        "def f(Task t):\n    x = 1\n  return x\n",
        3,
        1,
        "indentation matching an enclosing block (column 1 or 5)",
        "a line starting at column 3",
    );
    check(
        "def f(Task t):\n    x = 1\n        return x\n",
        3,
        9,
        "at the indentation of the block",
        "an indented line",
    );
    check(
        "def f(Task t):\nreturn 1\n",
        2,
        1,
        "an indented block",
        "`return`",
    );
    check(
        "  Task foo CPU;",
        1,
        3,
        "a statement starting at column 1",
        "an indented line",
    );
    // The paper's Figure 1(a) as the text dump prints it (indentation lost).
    check(
        "m = Machine(GPU)\ndef block2d(Tuple point, Tuple space):\nidx = point * m.size / space\n",
        3,
        1,
        "an indented block",
        "`idx`",
    );
}

#[test]
fn bad_kinds_and_types() {
    check(
        "Task foo TPU;",
        1,
        10,
        "a processor kind (CPU, GPU, OMP, IO, PY, PROC)",
        "`TPU`",
    );
    check("Task foo CPU,;", 1, 14, "a processor kind", "`;`");
    check("Task foo CPU GPU foo;", 1, 18, "a processor kind", "`foo`");
    check(
        "Region * * GPU HBM;",
        1,
        16,
        "a memory kind (SYSMEM, FBMEM",
        "`HBM`",
    );
    check("Region * * GPU;", 1, 15, "a memory kind", "`;`");
    check(
        "Region * \"r\" GPU FBMEM;",
        1,
        10,
        "a region name, a region index or `*`",
        "string \"r\"",
    );
    check("m = Machine(GRU);", 1, 13, "a processor kind", "`GRU`");
    check(
        "def f(Point p) { return p; }",
        1,
        7,
        "a parameter type (Task, IPoint",
        "`Point`",
    );
    check(
        "def f(Task) { return 1; }",
        1,
        11,
        "a parameter name after the type `Task`",
        "`)`",
    );
    check("def (Task t) { }", 1, 5, "a function name", "`(`");
    check(
        "def f(Task t) return 1;",
        1,
        15,
        "`{` or `:` to start the function body",
        "`return`",
    );
    check(
        "Backpressure foo many;",
        1,
        18,
        "an instance limit (a non-negative integer)",
        "`many`",
    );
    check(
        "IndexTaskMap a,b;",
        1,
        17,
        "`,` or the name of the mapping function",
        "`;`",
    );
    check("IndexTaskMap ,f;", 1, 14, "a task name or `*`", "`,`");
}

#[test]
fn bad_expressions() {
    check(
        "x = a ? b c;",
        1,
        11,
        "`:` of the conditional expression",
        "`c`",
    );
    check("x = 1 + ;", 1, 9, "an expression", "`;`");
    check(
        "x = (1)(2);",
        1,
        8,
        "only names and methods can be called",
        "`(`",
    );
    check("x = m[];", 1, 7, "an index expression", "`]`");
    check(
        "x = a.;",
        1,
        7,
        "an attribute or method name after `.`",
        "`;`",
    );
    check("x = a.1;", 1, 7, "an attribute or method name", "`1`");
    check(
        "x = tuple(i for i (0,1));",
        1,
        19,
        "`in` after the loop variable",
        "`(`",
    );
    check(
        "x = tuple(i for in (0,1));",
        1,
        17,
        "a loop variable name",
        "`in`",
    );
    check(
        "x = f(i for i in t);",
        1,
        9,
        "`,` or `)` (to close `(` at 1:6)",
        "`for`",
    );
    check(
        "def f(Task t) { t.ipoint; }",
        1,
        17,
        "an expression statement must be a call",
        "`t`",
    );
    check(
        "def f(Task t) { def g() {} }",
        1,
        17,
        "a statement in the function body",
        "`def`",
    );
}

#[test]
fn lexical_errors() {
    check("m = Machine(GPU) @;", 1, 18, "a token", "character `@`");
    check(
        "print(\"abc);\n",
        1,
        13,
        "`\"` to close the string started at 1:7",
        "end of line",
    );
    check("print(\"a\\qb\");", 1, 9, "an escape sequence", "`\\q`");
    check(
        "Backpressure foo 99999999999999999999;",
        1,
        18,
        "an integer at most 9223372036854775807",
        "`99999999999999999999`",
    );
    check(
        "x = 12ab;",
        1,
        7,
        "a delimiter after the integer",
        "character `a`",
    );
    // Lexical errors are reported in source order, after earlier syntax errors.
    check("Task foo;\nx = @;", 1, 9, "a processor kind", "`;`");
}

#[test]
fn nesting_too_deep() {
    let src = format!("x = {}1{};", "(".repeat(300), ")".repeat(300));
    let err = check(
        &src,
        1,
        5 + 64,
        "at most 64 levels of expression nesting",
        "`(`",
    );
    assert!(err.to_string().starts_with("bad.mapple:1:69: "));
}
