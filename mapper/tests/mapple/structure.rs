//! Exact trees, precedence and spans of small inputs.

use diffuse_mapper::ast::*;
use diffuse_mapper::parse::parse;

fn sp(line: usize, col: usize) -> Span {
    Span::new(line, col)
}

fn id(name: &str, line: usize, col: usize) -> Ident {
    Ident {
        name: name.to_string(),
        span: sp(line, col),
    }
}

fn ex(kind: ExprKind, line: usize, col: usize) -> Expr {
    Expr::new(kind, sp(line, col))
}

fn bx(kind: ExprKind, line: usize, col: usize) -> Box<Expr> {
    Box::new(ex(kind, line, col))
}

fn prog(src: &str) -> Program {
    parse("t.mapple", src).unwrap_or_else(|e| panic!("{e}"))
}

/// The expression of `x = <src>;` as a fully parenthesised S-expression.
fn sexpr_of(src: &str) -> String {
    let p = prog(&format!("x = {src};"));
    match &p.stmts[0].kind {
        StmtKind::Assign { value, .. } => sexpr(value),
        other => panic!("not an assignment: {other:?}"),
    }
}

fn list(items: &[Expr]) -> String {
    items.iter().map(sexpr).collect::<Vec<_>>().join(" ")
}

fn sexpr(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int(v) => v.to_string(),
        ExprKind::Str(s) => format!("{s:?}"),
        ExprKind::Name(n) => n.clone(),
        ExprKind::Tuple(items) => format!("(tuple {})", list(items)),
        ExprKind::Machine(k) => format!("(machine {})", k.name()),
        ExprKind::Unary { op, operand } => {
            let o = match op {
                UnaryOp::Neg => "neg",
                UnaryOp::Not => "not",
            };
            format!("({o} {})", sexpr(operand))
        }
        ExprKind::Binary { op, lhs, rhs } => {
            format!("({} {} {})", op.symbol(), sexpr(lhs), sexpr(rhs))
        }
        ExprKind::Ternary {
            cond,
            then,
            otherwise,
        } => format!("(? {} {} {})", sexpr(cond), sexpr(then), sexpr(otherwise)),
        ExprKind::Attr { base, attr } => format!("(. {} {})", sexpr(base), attr.name),
        ExprKind::Call { func, args } => format!("(call {} {})", func.name, list(args)),
        ExprKind::MethodCall {
            receiver,
            method,
            args,
        } => format!(
            "(method {} {} {})",
            sexpr(receiver),
            method.name,
            list(args)
        ),
        ExprKind::Index { base, indices } => format!("(idx {} {})", sexpr(base), list(indices)),
        ExprKind::TupleComprehension { element, var, iter } => {
            format!("(comp {} {} {})", sexpr(element), var.name, sexpr(iter))
        }
        ExprKind::Unpack(e) => format!("(unpack {})", sexpr(e)),
        ExprKind::Wildcard => "*".to_string(),
        ExprKind::Slice { start, end } => format!(
            "(slice {} {})",
            start.as_ref().map_or("_".to_string(), |s| sexpr(s)),
            end.as_ref().map_or("_".to_string(), |s| sexpr(s))
        ),
    }
}

#[test]
fn machine_assignment_tree() {
    let p = prog("m = Machine(GPU);");
    let expected = Program {
        stmts: vec![Stmt {
            kind: StmtKind::Assign {
                target: id("m", 1, 1),
                value: ex(ExprKind::Machine(ProcKind::Gpu), 1, 5),
            },
            span: sp(1, 1),
        }],
    };
    assert_eq!(p, expected);
}

#[test]
fn def_with_ternary_tree() {
    let src = "def pick(Task task, int k) {\n    return k > 0 ? task.ipoint[0] : -1;\n}\n";
    let p = prog(src);
    let ret = ex(
        ExprKind::Ternary {
            cond: bx(
                ExprKind::Binary {
                    op: BinaryOp::Gt,
                    lhs: bx(ExprKind::Name("k".into()), 2, 12),
                    rhs: bx(ExprKind::Int(0), 2, 16),
                },
                2,
                12,
            ),
            then: bx(
                ExprKind::Index {
                    base: bx(
                        ExprKind::Attr {
                            base: bx(ExprKind::Name("task".into()), 2, 20),
                            attr: id("ipoint", 2, 25),
                        },
                        2,
                        20,
                    ),
                    indices: vec![ex(ExprKind::Int(0), 2, 32)],
                },
                2,
                20,
            ),
            otherwise: bx(
                ExprKind::Unary {
                    op: UnaryOp::Neg,
                    operand: bx(ExprKind::Int(1), 2, 38),
                },
                2,
                37,
            ),
        },
        2,
        12,
    );
    let expected = Program {
        stmts: vec![Stmt {
            kind: StmtKind::FuncDef(FuncDef {
                name: id("pick", 1, 5),
                params: vec![
                    Param {
                        ty: Some(ParamType::Task),
                        name: id("task", 1, 15),
                        span: sp(1, 10),
                    },
                    Param {
                        ty: Some(ParamType::Int),
                        name: id("k", 1, 25),
                        span: sp(1, 21),
                    },
                ],
                body: vec![FuncStmt {
                    kind: FuncStmtKind::Return(ret),
                    span: sp(2, 5),
                }],
                style: BodyStyle::Braces,
            }),
            span: sp(1, 1),
        }],
    };
    assert_eq!(p, expected);
}

#[test]
fn brace_and_indented_styles_give_the_same_tree_modulo_spans_and_style() {
    let braces = prog("def f(Task t) {\n    x = t.ipoint;\n    return m[*x];\n}\n");
    let indented = prog("def f(Task t):\n    x = t.ipoint\n    return m[*x]\n");
    let one_line = prog("def f(Task t): x = t.ipoint; return m[*x]\n");
    assert_eq!(braces.to_string(), indented.to_string());
    assert_eq!(braces.to_string(), one_line.to_string());
    let StmtKind::FuncDef(d) = &indented.stmts[0].kind else {
        panic!()
    };
    assert_eq!(d.style, BodyStyle::Indented);
    assert_eq!(d.body[1].span, sp(3, 5));
}

#[test]
fn precedence_is_c_like() {
    assert_eq!(sexpr_of("1 + 2 * 3"), "(+ 1 (* 2 3))");
    assert_eq!(sexpr_of("a - b - c"), "(- (- a b) c)");
    assert_eq!(sexpr_of("a / b % c * d"), "(* (% (/ a b) c) d)");
    assert_eq!(
        sexpr_of("a || b && c == d < e + f * g"),
        "(|| a (&& b (== c (< d (+ e (* f g))))))"
    );
    assert_eq!(sexpr_of("a != b >= c"), "(!= a (>= b c))");
    assert_eq!(sexpr_of("!a == b"), "(== (not a) b)");
    assert_eq!(sexpr_of("--a"), "(neg (neg a))");
    assert_eq!(sexpr_of("-x[0].y"), "(neg (. (idx x 0) y))");
    assert_eq!(sexpr_of("c ? a : d ? e : f"), "(? c a (? d e f))");
    assert_eq!(sexpr_of("a || b ? c + 1 : d"), "(? (|| a b) (+ c 1) d)");
    assert_eq!(sexpr_of("c ? x ? 1 : 2 : 3"), "(? c (? x 1 2) 3)");
    assert_eq!(sexpr_of("(a + b) * c"), "(* (+ a b) c)");
    assert_eq!(
        sexpr_of("dim1 < dim2 ? dim1 : (dim1 - 1)"),
        "(? (< dim1 dim2) dim1 (- dim1 1))"
    );
}

#[test]
fn tuples_indexing_and_calls() {
    assert_eq!(sexpr_of("()"), "(tuple )");
    assert_eq!(sexpr_of("(1,)"), "(tuple 1)");
    assert_eq!(sexpr_of("(1)"), "1");
    assert_eq!(sexpr_of("(1, 2,)"), "(tuple 1 2)");
    assert_eq!(sexpr_of("(*a, *b, 3)"), "(tuple (unpack a) (unpack b) 3)");
    assert_eq!(sexpr_of("(*a)"), "(tuple (unpack a))");
    assert_eq!(sexpr_of("m[*(1,2)]"), "(idx m (unpack (tuple 1 2)))");
    assert_eq!(sexpr_of("m[:-1]"), "(idx m (slice _ (neg 1)))");
    assert_eq!(sexpr_of("m[1:]"), "(idx m (slice 1 _))");
    assert_eq!(sexpr_of("m[:]"), "(idx m (slice _ _))");
    assert_eq!(sexpr_of("m[a:b, 0]"), "(idx m (slice a b) 0)");
    assert_eq!(sexpr_of("t[0][1]"), "(idx (idx t 0) 1)");
    assert_eq!(
        sexpr_of("m[task.parent.processor(m)[0], *]"),
        "(idx m (idx (method (. task parent) processor m) 0) *)"
    );
    assert_eq!(sexpr_of("m.size"), "(. m size)");
    assert_eq!(sexpr_of("m.split(0, 2)"), "(method m split 0 2)");
    assert_eq!(
        sexpr_of("Machine(GPU).merge(0, 1).split(0, ng)"),
        "(method (method (machine GPU) merge 0 1) split 0 ng)"
    );
    assert_eq!(sexpr_of("len(x)"), "(call len x)");
    assert_eq!(sexpr_of("f(*t, 1)"), "(call f (unpack t) 1)");
    assert_eq!(sexpr_of("f()"), "(call f )");
    assert_eq!(sexpr_of("tuple((1, 2))"), "(call tuple (tuple 1 2))");
    assert_eq!(
        sexpr_of("tuple(f(i) for i in (0,1,2))"),
        "(comp (call f i) i (tuple 0 1 2))"
    );
    assert_eq!(
        sexpr_of("task.ispace / m[:-1]"),
        "(/ (. task ispace) (idx m (slice _ (neg 1))))"
    );
    // `Machine` not followed by `(` is an ordinary name.
    assert_eq!(sexpr_of("Machine"), "Machine");
}

#[test]
fn strings_and_print() {
    let p = prog("print(\"{}, {}\\t\\\"q\\\"\", a, b);\nprint('single {}', x)\n");
    let StmtKind::Expr(e) = &p.stmts[0].kind else {
        panic!()
    };
    assert_eq!(sexpr(e), "(call print \"{}, {}\\t\\\"q\\\"\" a b)");
    assert_eq!(p.stmts[1].span, sp(2, 1));
    let printed = p.to_string();
    assert_eq!(prog(&printed).to_string(), printed);
}

#[test]
fn directives() {
    let src = "\
Task foo CPU; Task * GPU,OMP,CPU
Task bar IO PY PROC;
Region * * GPU FBMEM ZCMEM;
Region foo 0 * SYSMEM, RDMEM, SOCKMEM, VIRTUAL;
Layout * rp * SOA C_order Align==128;
IndexTaskMap a,b , c f;
SingleTaskMap * g;
GarbageCollect t *;
CollectMemory t 2;
Backpressure t 3;
InstanceLimit * 1;
";
    let p = prog(src);
    let kinds: Vec<&StmtKind> = p.stmts.iter().map(|s| &s.kind).collect();
    assert_eq!(kinds.len(), 12);
    assert_eq!(
        kinds[1],
        &StmtKind::Task(TaskStmt {
            tasks: vec![TaskSel::Any],
            procs: vec![ProcKind::Gpu, ProcKind::Omp, ProcKind::Cpu],
        })
    );
    assert_eq!(p.stmts[1].span, sp(1, 15));
    assert_eq!(
        kinds[2],
        &StmtKind::Task(TaskStmt {
            tasks: vec![TaskSel::Named(id("bar", 2, 6))],
            procs: vec![ProcKind::Io, ProcKind::Py, ProcKind::ProcSet],
        })
    );
    assert_eq!(
        kinds[4],
        &StmtKind::Region(RegionStmt {
            task: TaskSel::Named(id("foo", 4, 8)),
            region: RegionSel::Index(0),
            proc: ProcSel::Any,
            mems: vec![
                MemKind::SysMem,
                MemKind::RdMem,
                MemKind::SockMem,
                MemKind::Virtual
            ],
        })
    );
    assert_eq!(
        kinds[5],
        &StmtKind::Layout(LayoutStmt {
            task: TaskSel::Any,
            region: RegionSel::Named(id("rp", 5, 10)),
            proc: ProcSel::Any,
            mem: None,
            constraints: vec![
                LayoutConstraint::Soa,
                LayoutConstraint::COrder,
                LayoutConstraint::Align {
                    op: AlignOp::Eq,
                    bytes: 128
                }
            ],
        })
    );
    let StmtKind::IndexTaskMap(m) = kinds[6] else {
        panic!()
    };
    assert_eq!(m.tasks.len(), 3);
    assert_eq!(m.func, id("f", 6, 22));
    assert!(
        matches!(kinds[7], StmtKind::SingleTaskMap(TaskFuncMap { tasks, .. }) if tasks == &vec![TaskSel::Any])
    );
    assert!(matches!(
        kinds[8],
        StmtKind::GarbageCollect(CollectStmt {
            keyword: CollectKeyword::GarbageCollect,
            region: RegionSel::Any,
            ..
        })
    ));
    assert!(matches!(
        kinds[9],
        StmtKind::GarbageCollect(CollectStmt {
            keyword: CollectKeyword::CollectMemory,
            region: RegionSel::Index(2),
            ..
        })
    ));
    assert!(matches!(
        kinds[10],
        StmtKind::Backpressure(BackpressureStmt {
            keyword: BackpressureKeyword::Backpressure,
            limit: 3,
            ..
        })
    ));
    assert!(matches!(
        kinds[11],
        StmtKind::Backpressure(BackpressureStmt {
            keyword: BackpressureKeyword::InstanceLimit,
            task: TaskSel::Any,
            limit: 1,
        })
    ));
}

#[test]
fn untyped_parameters_and_comments() {
    let p = prog("# leading comment\ndef f(a, b): # trailing\n\n    # inside\n    return a + b # sum\n# after\nx = 1\n");
    assert_eq!(p.stmts.len(), 2);
    let StmtKind::FuncDef(d) = &p.stmts[0].kind else {
        panic!()
    };
    assert_eq!(d.params[0].ty, None);
    assert_eq!(d.params[1].name, id("b", 2, 10));
    assert_eq!(p.stmts[1].span, sp(7, 1));
}

#[test]
fn nested_indented_blocks_close_at_eof_and_before_top_level() {
    let p = prog("def f(x):\n  return x\ndef g(y):\n\treturn y\n\nIndexTaskMap t g");
    assert_eq!(p.stmts.len(), 3);
    let p = prog("def f(x):\n    return x");
    assert_eq!(p.stmts.len(), 1);
}

#[test]
fn depth_limit_is_an_error_not_a_crash() {
    use diffuse_mapper::parse::MAX_DEPTH;
    // Well within the limit: fine.
    let ok = format!(
        "x = {}1{};",
        "(".repeat(MAX_DEPTH - 2),
        ")".repeat(MAX_DEPTH - 2)
    );
    assert!(parse("d", &ok).is_ok());
    let deep_inputs = [
        format!("x = {}1{};", "(".repeat(100_000), ")".repeat(100_000)),
        format!("x = {}1;", "-".repeat(100_000)),
        format!("x = {}1;", "!".repeat(100_000)),
        format!("x = 1{};", " + 1".repeat(100_000)),
        format!("x = a{};", ".b".repeat(100_000)),
        format!("x = a{};", "[0]".repeat(100_000)),
        format!("x = {}1{};", "m[".repeat(100_000), "]".repeat(100_000)),
        format!("x = {}0;", "c ? 1 : ".repeat(100_000)),
        format!("x = {}0;", "tuple(".repeat(100_000)),
        format!("x = {};", "f(".repeat(100_000)),
        format!("def f(Task t) {{ return {}1; }}", "*(".repeat(100_000)),
        "[".repeat(100_000),
        "(".repeat(100_000),
        "{".repeat(100_000),
    ];
    for src in deep_inputs {
        let err = parse("deep.mapple", &src).expect_err("too deep");
        assert!(err.line >= 1 && err.col >= 1);
    }
    let err = parse(
        "d",
        &format!("x = {}1{};", "(".repeat(300), ")".repeat(300)),
    )
    .unwrap_err();
    assert_eq!(err.line, 1);
    assert!(
        err.expected.contains("levels of expression nesting"),
        "{err}"
    );
}

/// At the nesting limit, parsing and printing fit in the 2 MiB stack of a test thread, even
/// in an unoptimised build (checked with `CARGO_PROFILE_TEST_OPT_LEVEL=0`).
#[test]
fn nesting_limit_fits_a_small_stack() {
    use diffuse_mapper::parse::MAX_DEPTH;
    type Gen = fn(usize) -> String;
    let cases: [Gen; 9] = [
        |n| format!("x = {}1{};", "(".repeat(n), ")".repeat(n)),
        |n| format!("x = {}1;", "-".repeat(n)),
        |n| format!("x = 1{};", " + 1".repeat(n)),
        |n| format!("x = a{};", ".b".repeat(n)),
        |n| format!("x = {}1{};", "m[".repeat(n), "]".repeat(n)),
        |n| format!("x = {}0;", "c ? 1 : ".repeat(n)),
        |n| format!("x = {}0{};", "tuple(".repeat(n), ")".repeat(n)),
        |n| format!("x = {}0{};", "f(".repeat(n), ")".repeat(n)),
        |n| format!("x = {}0{};", "f(*".repeat(n), ")".repeat(n)),
    ];
    for gen in cases {
        for n in [MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1] {
            let src = gen(n);
            let handle = std::thread::Builder::new()
                .stack_size(2 << 20)
                .spawn(move || match parse("p", &src) {
                    Ok(p) => p.to_string().len(),
                    Err(e) => e.to_string().len(),
                })
                .expect("spawn");
            assert!(handle.join().expect("no panic") > 0);
        }
    }
}
