//! The syntax tree of a Mapple program, as produced by [`crate::parse::parse`].
//!
//! Every statement and every expression carries a [`Span`]: the 1-based line and column (counted
//! in characters) of its first character in the source. For a binary expression that is the first
//! character of its left operand; for a method call, of its receiver; for a parenthesised
//! expression, its `(`.
//!
//! The tree keeps only what the language means, not how it was spelled, with three exceptions
//! that matter for messages and for printing: which keyword spelled a collection or backpressure
//! statement (`GarbageCollect`/`CollectMemory`, `Backpressure`/`InstanceLimit`) and whether a
//! function body used braces or Python-like indentation.
//!
//! [`Program`] and [`Expr`] implement [`std::fmt::Display`], which prints canonical Mapple
//! (brace bodies, `;` after every statement, only the parentheses precedence needs). Printing a
//! parsed program and parsing the result gives the same tree up to spans.

use std::fmt;

pub use diffuse_machine::{AlignOp, LayoutConstraint, MemKind, StealScope};

/// A position in the source: 1-based line and 1-based column (in characters, a tab counts one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Span {
    /// Line number, starting at 1.
    pub line: usize,
    /// Column number in characters, starting at 1.
    pub col: usize,
}

impl Span {
    /// A span at `line`, `col` (both 1-based).
    pub fn new(line: usize, col: usize) -> Self {
        Span { line, col }
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// A name written in the source (a variable, function, parameter, task or method name).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Ident {
    /// The name as written.
    pub name: String,
    /// Where the name starts.
    pub span: Span,
}

/// A whole Mapple file: its top-level statements in source order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Program {
    /// The top-level statements, in source order.
    pub stmts: Vec<Stmt>,
}

/// A top-level statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stmt {
    /// What the statement says.
    pub kind: StmtKind,
    /// Where the statement starts (its keyword, or the assigned name).
    pub span: Span,
}

impl Stmt {
    /// The statement on one line: as written for most, `def name(...)` for a function.
    pub fn kind_text(&self) -> String {
        match &self.kind {
            StmtKind::FuncDef(d) => format!("def {}(...)", d.name.name),
            _ => self.to_string(),
        }
    }
}

/// The kinds of top-level statements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StmtKind {
    /// `Task foo CPU;` / `Task * GPU,OMP,CPU;`: processor kinds to try, in priority order.
    Task(TaskStmt),
    /// `Region task region Proc Memory+;`: memory placement of a task's region.
    Region(RegionStmt),
    /// `Layout task region Proc Constraint+;`: the data layout of a task's region.
    Layout(LayoutStmt),
    /// `IndexTaskMap t1,t2 func;`: the function that places each point of an index launch.
    IndexTaskMap(TaskFuncMap),
    /// `SingleTaskMap t func;`: the function that places a single (non-index) task.
    SingleTaskMap(TaskFuncMap),
    /// `GarbageCollect task region;` (also spelled `CollectMemory`).
    GarbageCollect(CollectStmt),
    /// `Backpressure task n;` (also spelled `InstanceLimit`).
    Backpressure(BackpressureStmt),
    /// `ControlReplicate t1,t2;`: run these (top-level) tasks control-replicated.
    ControlReplicate(Vec<Ident>),
    /// `TaskSteal t1,t2 Proc SAME_NODE|ANY_NODE;`: idle processors of a kind may steal these
    /// tasks, from their own node or from any.
    TaskSteal(TaskStealStmt),
    /// `def name(params) body`: a mapping function.
    FuncDef(FuncDef),
    /// `name = expr;` at top level (e.g. `m = Machine(GPU);`).
    Assign {
        /// The assigned variable.
        target: Ident,
        /// The assigned value.
        value: Expr,
    },
    /// A call used as a statement (e.g. `print("{}", x);`).
    Expr(Expr),
}

/// Which tasks a statement applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskSel {
    /// `*`: every task without a more specific statement.
    Any,
    /// A task by name.
    Named(Ident),
    /// Every task that runs on this processor kind (`IndexTaskMap GPU f;`, the reference
    /// compiler's form; only in `IndexTaskMap` and `SingleTaskMap`).
    Kind(ProcKind),
}

/// Which region arguments of a task a statement applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegionSel {
    /// `*`: every region.
    Any,
    /// A 0-based index into the task's regions (`Region foo 0 GPU ZCMEM;`).
    Index(u64),
    /// A region by semantic name (`Region * rp_shared GPU ZCMEM;`).
    Named(Ident),
}

/// A processor kind, as in `Machine(GPU)` or `Task foo CPU;` (the machine model's).
pub use crate::machine::ProcKind;

/// A processor selector in `Region`/`Layout` statements: a kind or `*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProcSel {
    /// `*`: any processor kind.
    Any,
    /// One processor kind.
    Kind(ProcKind),
}

/// `Task task Proc+;` (or `Task t1,t2 Proc+;`)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStmt {
    /// The tasks (or `*`), at least one.
    pub tasks: Vec<TaskSel>,
    /// Processor kinds in priority order (at least one).
    pub procs: Vec<ProcKind>,
}

/// `Region task region Proc Memory+;`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionStmt {
    /// The task (or `*`).
    pub task: TaskSel,
    /// The region (or `*`).
    pub region: RegionSel,
    /// The processor kind the task runs on (or `*`).
    pub proc: ProcSel,
    /// Memory kinds in priority order (at least one).
    pub mems: Vec<MemKind>,
}

/// `Layout task region Proc Constraint*;` (the manual's form) or `Layout task region Memory
/// Constraint*;` (the reference compiler's: the layout of instances in that memory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutStmt {
    /// The task (or `*`).
    pub task: TaskSel,
    /// The region (or `*`).
    pub region: RegionSel,
    /// The processor kind (or `*`); `*` in the memory form.
    pub proc: ProcSel,
    /// The memory kind of the memory form.
    pub mem: Option<MemKind>,
    /// The constraints, in source order (the reference grammar allows none).
    pub constraints: Vec<LayoutConstraint>,
}

/// `TaskSteal t1,t2 Proc SAME_NODE|ANY_NODE;`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStealStmt {
    /// The tasks (or `*`), at least one.
    pub tasks: Vec<TaskSel>,
    /// The kind of processor that may steal.
    pub proc: ProcKind,
    /// Where thieves may come from.
    pub scope: StealScope,
}

/// `IndexTaskMap t1,t2 func;` or `SingleTaskMap t func;`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFuncMap {
    /// The tasks (at least one), in source order.
    pub tasks: Vec<TaskSel>,
    /// The mapping function.
    pub func: Ident,
}

/// Which keyword spelled a garbage-collection statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CollectKeyword {
    /// `GarbageCollect` (the paper's spelling).
    GarbageCollect,
    /// `CollectMemory` (the manual's spelling).
    CollectMemory,
}

/// `GarbageCollect task region;` / `CollectMemory task region;`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectStmt {
    /// The keyword used.
    pub keyword: CollectKeyword,
    /// The task (or `*`).
    pub task: TaskSel,
    /// The region (or `*`).
    pub region: RegionSel,
}

/// Which keyword spelled a backpressure statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackpressureKeyword {
    /// `Backpressure` (the paper's spelling).
    Backpressure,
    /// `InstanceLimit` (the manual's spelling).
    InstanceLimit,
}

/// `Backpressure task n;` / `InstanceLimit task n;`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackpressureStmt {
    /// The keyword used.
    pub keyword: BackpressureKeyword,
    /// The task (or `*`).
    pub task: TaskSel,
    /// At most this many instances of the task are mapped at a time (per node).
    pub limit: u64,
}

/// The declared type of a function parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamType {
    /// `Task`: the task being mapped.
    Task,
    /// `IPoint`: an index point (a tuple of integers).
    IPoint,
    /// `ISpace`: an index space (launch domain).
    ISpace,
    /// `MSpace`: a machine (processor) space.
    MSpace,
    /// `int`: an integer.
    Int,
    /// `Tuple`: a tuple of integers.
    Tuple,
}

impl ParamType {
    /// Every parameter type.
    pub const ALL: [ParamType; 6] = [
        ParamType::Task,
        ParamType::IPoint,
        ParamType::ISpace,
        ParamType::MSpace,
        ParamType::Int,
        ParamType::Tuple,
    ];

    /// The keyword that spells this type.
    pub fn keyword(self) -> &'static str {
        match self {
            ParamType::Task => "Task",
            ParamType::IPoint => "IPoint",
            ParamType::ISpace => "ISpace",
            ParamType::MSpace => "MSpace",
            ParamType::Int => "int",
            ParamType::Tuple => "Tuple",
        }
    }

    /// The type spelled by `word`, if any.
    pub fn from_keyword(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.keyword() == word)
    }
}

/// A function parameter: `Task task`, or an untyped `task` as in the paper's grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// The declared type, if one was written.
    pub ty: Option<ParamType>,
    /// The parameter name.
    pub name: Ident,
    /// Where the parameter starts (its type, else its name).
    pub span: Span,
}

/// How a function body was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BodyStyle {
    /// `{ stmt; ... }` (the manual's style).
    Braces,
    /// `:` followed by an indented block, or by statements on the same line (the paper's style).
    Indented,
}

/// `def name(params) body`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuncDef {
    /// The function name.
    pub name: Ident,
    /// The parameters, in order.
    pub params: Vec<Param>,
    /// The body statements, in order.
    pub body: Vec<FuncStmt>,
    /// How the body was written.
    pub style: BodyStyle,
}

/// A statement inside a function body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuncStmt {
    /// What the statement says.
    pub kind: FuncStmtKind,
    /// Where the statement starts.
    pub span: Span,
}

/// The kinds of statements inside a function body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FuncStmtKind {
    /// `name = expr;`
    Assign {
        /// The assigned variable.
        target: Ident,
        /// The assigned value.
        value: Expr,
    },
    /// `return expr;`
    Return(Expr),
    /// A call used as a statement (e.g. `print("{}", x);`).
    Expr(Expr),
}

/// An expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expr {
    /// What the expression is.
    pub kind: ExprKind,
    /// Where the expression starts.
    pub span: Span,
}

/// Unary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-x`
    Neg,
    /// `!x`
    Not,
}

/// Binary operators, from lowest to highest precedence group:
/// `||`; `&&`; `==` `!=`; `<` `<=` `>` `>=`; `+` `-`; `*` `/` `%` (all left-associative).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `||`
    Or,
    /// `&&`
    And,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `+` (elementwise on tuples, and tuple with scalar)
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (integer division; elementwise on tuples)
    Div,
    /// `%`
    Rem,
}

impl BinaryOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Or => "||",
            BinaryOp::And => "&&",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
        }
    }

    /// Binding strength: a larger number binds tighter (1 = `||` … 6 = `*` `/` `%`).
    pub fn precedence(self) -> u8 {
        match self {
            BinaryOp::Or => 1,
            BinaryOp::And => 2,
            BinaryOp::Eq | BinaryOp::Ne => 3,
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => 4,
            BinaryOp::Add | BinaryOp::Sub => 5,
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => 6,
        }
    }
}

/// The kinds of expressions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExprKind {
    /// An integer literal (a leading `-` is a [`UnaryOp::Neg`]).
    Int(i64),
    /// A string literal, escapes resolved (e.g. the format of `print("{}", x)`).
    Str(String),
    /// A variable or builtin name (`task`, `m`, `GPU` inside expressions, ...).
    Name(String),
    /// A tuple literal `(a, b)`, `(a,)` or `()`; elements may be [`ExprKind::Unpack`].
    Tuple(Vec<Expr>),
    /// `Machine(Proc)`: the processor space of one processor kind.
    Machine(ProcKind),
    /// `op operand`
    Unary {
        /// The operator.
        op: UnaryOp,
        /// The operand.
        operand: Box<Expr>,
    },
    /// `lhs op rhs`
    Binary {
        /// The operator.
        op: BinaryOp,
        /// The left operand.
        lhs: Box<Expr>,
        /// The right operand.
        rhs: Box<Expr>,
    },
    /// `cond ? then : otherwise` (right-associative, lowest precedence).
    Ternary {
        /// The condition.
        cond: Box<Expr>,
        /// The value when the condition holds.
        then: Box<Expr>,
        /// The value otherwise.
        otherwise: Box<Expr>,
    },
    /// `base.attr`, e.g. `task.ipoint`, `m.size`.
    Attr {
        /// The object.
        base: Box<Expr>,
        /// The attribute name.
        attr: Ident,
    },
    /// `func(args)`: a call of a user function or builtin (`len`, `print`, `tuple`, ...);
    /// arguments may be [`ExprKind::Unpack`].
    Call {
        /// The called name.
        func: Ident,
        /// The arguments.
        args: Vec<Expr>,
    },
    /// `receiver.method(args)`, e.g. `m.split(0, 2)`, `task.parent.processor(m)`.
    MethodCall {
        /// The object.
        receiver: Box<Expr>,
        /// The method name.
        method: Ident,
        /// The arguments; they may be [`ExprKind::Unpack`].
        args: Vec<Expr>,
    },
    /// `base[i, j, ...]`: indexing a machine or a tuple; elements may be
    /// [`ExprKind::Unpack`], [`ExprKind::Wildcard`] or [`ExprKind::Slice`].
    Index {
        /// The indexed value.
        base: Box<Expr>,
        /// The index elements (at least one).
        indices: Vec<Expr>,
    },
    /// `tuple(element for var in iter)`: a tuple comprehension.
    TupleComprehension {
        /// The expression evaluated for each value.
        element: Box<Expr>,
        /// The loop variable.
        var: Ident,
        /// The iterated tuple.
        iter: Box<Expr>,
    },
    /// `*e` inside a tuple literal, argument list or index list: splices the elements of the
    /// tuple `e` in place (`m[*upper, *lower]`).
    Unpack(Box<Expr>),
    /// A bare `*` as an index element: any processor along that dimension (`m[n, *]`).
    Wildcard,
    /// `start:end` as an index element, either bound optional (`m[:-1]`).
    Slice {
        /// The first index taken (default: the start).
        start: Option<Box<Expr>>,
        /// One past the last index taken, negative counting from the end (default: the end).
        end: Option<Box<Expr>>,
    },
}

impl Expr {
    /// An expression of `kind` at `span`.
    pub fn new(kind: ExprKind, span: Span) -> Self {
        Expr { kind, span }
    }

    /// Binding strength for printing: 0 = ternary, 1..=6 binary groups, 7 = unary, 8 = postfix
    /// and atoms.
    fn precedence(&self) -> u8 {
        match &self.kind {
            ExprKind::Ternary { .. } => 0,
            ExprKind::Binary { op, .. } => op.precedence(),
            ExprKind::Unary { .. } => 7,
            _ => 8,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Printing
// ---------------------------------------------------------------------------------------------

fn write_str_lit(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_str("\"")?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\t' => f.write_str("\\t")?,
            '\r' => f.write_str("\\r")?,
            c => write!(f, "{c}")?,
        }
    }
    f.write_str("\"")
}

fn write_list(f: &mut fmt::Formatter<'_>, items: &[Expr]) -> fmt::Result {
    for (i, e) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{e}")?;
    }
    Ok(())
}

/// Writes `e`, parenthesised when it binds less tightly than `min`.
fn write_prec(f: &mut fmt::Formatter<'_>, e: &Expr, min: u8) -> fmt::Result {
    if e.precedence() < min {
        write!(f, "({e})")
    } else {
        write!(f, "{e}")
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ExprKind::Int(v) => write!(f, "{v}"),
            ExprKind::Str(s) => write_str_lit(f, s),
            ExprKind::Name(n) => f.write_str(n),
            ExprKind::Tuple(items) => {
                f.write_str("(")?;
                write_list(f, items)?;
                if items.len() == 1 {
                    f.write_str(",")?;
                }
                f.write_str(")")
            }
            ExprKind::Machine(p) => write!(f, "Machine({})", p.name()),
            ExprKind::Unary { op, operand } => {
                f.write_str(match op {
                    UnaryOp::Neg => "-",
                    UnaryOp::Not => "!",
                })?;
                write_prec(f, operand, 7)
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let p = op.precedence();
                write_prec(f, lhs, p)?;
                write!(f, " {} ", op.symbol())?;
                write_prec(f, rhs, p + 1)
            }
            ExprKind::Ternary {
                cond,
                then,
                otherwise,
            } => {
                write_prec(f, cond, 1)?;
                f.write_str(" ? ")?;
                write!(f, "{then} : {otherwise}")
            }
            ExprKind::Attr { base, attr } => {
                write_prec(f, base, 8)?;
                write!(f, ".{}", attr.name)
            }
            ExprKind::Call { func, args } => {
                write!(f, "{}(", func.name)?;
                write_list(f, args)?;
                f.write_str(")")
            }
            ExprKind::MethodCall {
                receiver,
                method,
                args,
            } => {
                write_prec(f, receiver, 8)?;
                write!(f, ".{}(", method.name)?;
                write_list(f, args)?;
                f.write_str(")")
            }
            ExprKind::Index { base, indices } => {
                write_prec(f, base, 8)?;
                f.write_str("[")?;
                write_list(f, indices)?;
                f.write_str("]")
            }
            ExprKind::TupleComprehension { element, var, iter } => {
                write!(f, "tuple({element} for {} in {iter})", var.name)
            }
            ExprKind::Unpack(e) => write!(f, "*{e}"),
            ExprKind::Wildcard => f.write_str("*"),
            ExprKind::Slice { start, end } => {
                if let Some(s) = start {
                    write!(f, "{s}")?;
                }
                f.write_str(":")?;
                if let Some(e) = end {
                    write!(f, "{e}")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for TaskSel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskSel::Any => f.write_str("*"),
            TaskSel::Named(id) => f.write_str(&id.name),
            TaskSel::Kind(k) => f.write_str(k.name()),
        }
    }
}

impl fmt::Display for RegionSel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegionSel::Any => f.write_str("*"),
            RegionSel::Index(i) => write!(f, "{i}"),
            RegionSel::Named(id) => f.write_str(&id.name),
        }
    }
}

impl fmt::Display for ProcSel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProcSel::Any => f.write_str("*"),
            ProcSel::Kind(k) => f.write_str(k.name()),
        }
    }
}

fn write_joined<T: fmt::Display>(
    f: &mut fmt::Formatter<'_>,
    items: &[T],
    sep: &str,
) -> fmt::Result {
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        write!(f, "{x}")?;
    }
    Ok(())
}

impl fmt::Display for FuncStmt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            FuncStmtKind::Assign { target, value } => write!(f, "{} = {value};", target.name),
            FuncStmtKind::Return(e) => write!(f, "return {e};"),
            FuncStmtKind::Expr(e) => write!(f, "{e};"),
        }
    }
}

impl fmt::Display for Stmt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            StmtKind::Task(t) => {
                f.write_str("Task ")?;
                write_joined(f, &t.tasks, ",")?;
                f.write_str(" ")?;
                let kinds: Vec<&str> = t.procs.iter().map(|p| p.name()).collect();
                write!(f, "{};", kinds.join(","))
            }
            StmtKind::Region(r) => {
                write!(f, "Region {} {} {}", r.task, r.region, r.proc)?;
                for m in &r.mems {
                    write!(f, " {}", m.keyword())?;
                }
                f.write_str(";")
            }
            StmtKind::Layout(l) => {
                match l.mem {
                    Some(m) => write!(f, "Layout {} {} {}", l.task, l.region, m.keyword())?,
                    None => write!(f, "Layout {} {} {}", l.task, l.region, l.proc)?,
                }
                for c in &l.constraints {
                    write!(f, " {c}")?;
                }
                f.write_str(";")
            }
            StmtKind::IndexTaskMap(m) | StmtKind::SingleTaskMap(m) => {
                let kw = if matches!(self.kind, StmtKind::IndexTaskMap(_)) {
                    "IndexTaskMap"
                } else {
                    "SingleTaskMap"
                };
                write!(f, "{kw} ")?;
                write_joined(f, &m.tasks, ",")?;
                write!(f, " {};", m.func.name)
            }
            StmtKind::GarbageCollect(c) => {
                let kw = match c.keyword {
                    CollectKeyword::GarbageCollect => "GarbageCollect",
                    CollectKeyword::CollectMemory => "CollectMemory",
                };
                write!(f, "{kw} {} {};", c.task, c.region)
            }
            StmtKind::Backpressure(b) => {
                let kw = match b.keyword {
                    BackpressureKeyword::Backpressure => "Backpressure",
                    BackpressureKeyword::InstanceLimit => "InstanceLimit",
                };
                write!(f, "{kw} {} {};", b.task, b.limit)
            }
            StmtKind::ControlReplicate(tasks) => {
                let names: Vec<&str> = tasks.iter().map(|t| t.name.as_str()).collect();
                write!(f, "ControlReplicate {};", names.join(","))
            }
            StmtKind::TaskSteal(t) => {
                f.write_str("TaskSteal ")?;
                write_joined(f, &t.tasks, ",")?;
                let scope = match t.scope {
                    StealScope::SameNode => "SAME_NODE",
                    StealScope::AnyNode => "ANY_NODE",
                };
                write!(f, " {} {scope};", t.proc.name())
            }
            StmtKind::FuncDef(d) => {
                write!(f, "def {}(", d.name.name)?;
                for (i, p) in d.params.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    if let Some(ty) = p.ty {
                        write!(f, "{} ", ty.keyword())?;
                    }
                    f.write_str(&p.name.name)?;
                }
                f.write_str(") {\n")?;
                for s in &d.body {
                    writeln!(f, "    {s}")?;
                }
                f.write_str("}")
            }
            StmtKind::Assign { target, value } => write!(f, "{} = {value};", target.name),
            StmtKind::Expr(e) => write!(f, "{e};"),
        }
    }
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.stmts {
            writeln!(f, "{s}")?;
        }
        Ok(())
    }
}
