//! The tree-walking interpreter behind [`super::Env`].

use std::collections::HashMap;
use std::sync::Arc;

use super::error::{EvalError, EvalErrorKind};
use super::ops;
use super::value::{TaskProc, Value};
use super::{MAX_CALL_DEPTH, MAX_EVAL_DEPTH, MAX_STEPS, MAX_TUPLE_DEPTH, MAX_TUPLE_LEN};
use crate::ast::{
    BinaryOp, Expr, ExprKind, FuncDef, FuncStmtKind, Ident, MemKind, ParamType, Span, UnaryOp,
};
use crate::machine::{fmt_tuple, MSpace, Machine, Processor};

/// Local variables of a function body (or of a top-level statement's comprehensions).
pub(super) type Locals = HashMap<String, Value>;

/// One evaluation: a top-level statement or a call from the placement API. Holds the budget
/// counters; the program state is borrowed.
pub(super) struct Interp<'a> {
    pub file: &'a str,
    pub machine: &'a Machine,
    pub functions: &'a HashMap<String, FuncDef>,
    pub globals: &'a HashMap<String, Value>,
    pub out: &'a mut Vec<String>,
    /// The round-robin counter a `*` index uses.
    pub rr: u64,
    depth: usize,
    calls: usize,
    steps: u64,
}

/// One element of an index list after evaluation.
enum Item {
    Int(i64),
    Wild,
    Slice(Option<i64>, Option<i64>),
}

/// Size and nesting depth of a value, checked against the tuple limits while measuring (the
/// limits hold for every existing value, so the recursion is at most `MAX_TUPLE_DEPTH` deep).
fn measure(v: &Value) -> (usize, usize) {
    match v {
        Value::Tuple(items) => {
            let mut size = 1usize;
            let mut depth = 0usize;
            for item in items {
                let (s, d) = measure(item);
                size = size.saturating_add(s);
                depth = depth.max(d);
            }
            (size, depth.saturating_add(1))
        }
        _ => (1, 0),
    }
}

fn too_large(size: usize, depth: usize) -> EvalErrorKind {
    EvalErrorKind::TupleTooLarge {
        size,
        depth,
        max_size: MAX_TUPLE_LEN,
        max_depth: MAX_TUPLE_DEPTH,
    }
}

/// Resolves a possibly negative index into `0..len`.
fn resolve_index(index: i64, len: usize) -> Result<usize, EvalErrorKind> {
    let out = || EvalErrorKind::IndexOutOfRange { index, len };
    let len_i = i64::try_from(len).map_err(|_| out())?;
    let i = if index < 0 {
        index.checked_add(len_i).ok_or_else(out)?
    } else {
        index
    };
    usize::try_from(i).ok().filter(|&i| i < len).ok_or_else(out)
}

/// Python slice bounds: negative counts from the end, both clamped into `0..=len`.
fn slice_bounds(start: Option<i64>, end: Option<i64>, len: usize) -> (usize, usize) {
    let len_i = i64::try_from(len).unwrap_or(i64::MAX);
    let clamp = |x: i64| -> usize {
        let x = if x < 0 { x.saturating_add(len_i) } else { x };
        usize::try_from(x.clamp(0, len_i)).unwrap_or(0)
    };
    let s = start.map_or(0, clamp);
    let e = end.map_or(len, clamp);
    (s, e.max(s))
}

fn param_matches(ty: ParamType, v: &Value) -> bool {
    match ty {
        ParamType::Task => matches!(v, Value::Task(_)),
        ParamType::IPoint | ParamType::ISpace => v.as_ints().is_some(),
        ParamType::Tuple => matches!(v, Value::Tuple(_)),
        ParamType::MSpace => matches!(v, Value::Space(_)),
        ParamType::Int => matches!(v, Value::Int(_)),
    }
}

fn expected_of(ty: ParamType) -> &'static str {
    match ty {
        ParamType::Task => "Task",
        ParamType::IPoint => "IPoint (a tuple of ints)",
        ParamType::ISpace => "ISpace (a tuple of ints)",
        ParamType::Tuple => "Tuple",
        ParamType::MSpace => "MSpace",
        ParamType::Int => "int",
    }
}

impl<'a> Interp<'a> {
    /// A fresh evaluation with the full budget.
    pub fn new(
        file: &'a str,
        machine: &'a Machine,
        functions: &'a HashMap<String, FuncDef>,
        globals: &'a HashMap<String, Value>,
        out: &'a mut Vec<String>,
        rr: u64,
    ) -> Self {
        Interp {
            file,
            machine,
            functions,
            globals,
            out,
            rr,
            depth: 0,
            calls: 0,
            steps: 0,
        }
    }

    fn err(&self, span: Span, kind: EvalErrorKind) -> EvalError {
        EvalError {
            file: self.file.to_string(),
            span,
            kind,
        }
    }

    /// Counts `n` steps of work (copying or combining `n` values) against [`MAX_STEPS`].
    fn charge(&mut self, span: Span, n: usize) -> Result<(), EvalError> {
        self.steps = self
            .steps
            .saturating_add(u64::try_from(n).unwrap_or(u64::MAX));
        if self.steps > MAX_STEPS {
            return Err(self.err(span, EvalErrorKind::TooManySteps(MAX_STEPS)));
        }
        Ok(())
    }

    /// Builds a tuple, enforcing [`MAX_TUPLE_LEN`] (values in all, nested ones included) and
    /// [`MAX_TUPLE_DEPTH`], and charging its size.
    fn make_tuple(&mut self, items: Vec<Value>, span: Span) -> Result<Value, EvalError> {
        let v = Value::Tuple(items);
        let (size, depth) = measure(&v);
        if size > MAX_TUPLE_LEN || depth > MAX_TUPLE_DEPTH {
            return Err(self.err(span, too_large(size, depth)));
        }
        self.charge(span, size)?;
        Ok(v)
    }

    /// Evaluates `e`, counting one step and one level of nesting.
    pub fn eval(&mut self, e: &Expr, locals: &mut Locals) -> Result<Value, EvalError> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(self.err(e.span, EvalErrorKind::TooManySteps(MAX_STEPS)));
        }
        if self.depth >= MAX_EVAL_DEPTH {
            return Err(self.err(e.span, EvalErrorKind::TooDeep(MAX_EVAL_DEPTH)));
        }
        self.depth += 1;
        let r = self.eval_kind(e, locals);
        self.depth -= 1;
        r
    }

    fn eval_kind(&mut self, e: &Expr, locals: &mut Locals) -> Result<Value, EvalError> {
        let span = e.span;
        match &e.kind {
            ExprKind::Int(v) => Ok(Value::Int(*v)),
            ExprKind::Str(s) => Ok(Value::Str(s.clone())),
            ExprKind::Name(n) => self.lookup(n, span, locals),
            ExprKind::Tuple(items) => {
                let values = self.eval_list(items, locals)?;
                self.make_tuple(values, span)
            }
            ExprKind::Machine(kind) => self
                .machine
                .space(*kind)
                .map(|m| Value::Space(Arc::new(m)))
                .map_err(|m| self.err(span, EvalErrorKind::Machine(m))),
            ExprKind::Unary { op, operand } => {
                let v = self.eval(operand, locals)?;
                let r = match op {
                    UnaryOp::Neg => ops::negate(&v),
                    UnaryOp::Not => ops::truthy(&v, "operand of `!`").map(|b| Value::Bool(!b)),
                };
                r.map_err(|k| self.err(span, k))
            }
            ExprKind::Binary { op, lhs, rhs } => self.binary(*op, lhs, rhs, span, locals),
            ExprKind::Ternary {
                cond,
                then,
                otherwise,
            } => {
                let c = self.eval(cond, locals)?;
                let holds =
                    ops::truthy(&c, "condition of `? :`").map_err(|k| self.err(cond.span, k))?;
                if holds {
                    self.eval(then, locals)
                } else {
                    self.eval(otherwise, locals)
                }
            }
            ExprKind::Attr { base, attr } => {
                let v = self.eval(base, locals)?;
                self.attr(&v, attr)
            }
            ExprKind::Call { func, args } => self.call_expr(func, args, locals),
            ExprKind::MethodCall {
                receiver,
                method,
                args,
            } => {
                let recv = self.eval(receiver, locals)?;
                let values = self.eval_list(args, locals)?;
                self.method(&recv, method, values)
            }
            ExprKind::Index { base, indices } => {
                let b = self.eval(base, locals)?;
                self.index(&b, indices, span, locals)
            }
            ExprKind::TupleComprehension { element, var, iter } => {
                let it = self.eval(iter, locals)?;
                let Value::Tuple(items) = it else {
                    return Err(self.err(
                        iter.span,
                        EvalErrorKind::WrongType {
                            context: "the iterable of a tuple comprehension".to_string(),
                            expected: "tuple".to_string(),
                            found: it.type_name(),
                        },
                    ));
                };
                let saved = locals.remove(&var.name);
                let mut values = Vec::with_capacity(items.len());
                let mut result = Ok(());
                let mut size = 1usize;
                for item in items {
                    locals.insert(var.name.clone(), item);
                    match self.eval(element, locals) {
                        Ok(v) => {
                            // Stop as soon as the result is too large, not after building it.
                            size = size.saturating_add(measure(&v).0);
                            values.push(v);
                            if size > MAX_TUPLE_LEN {
                                result = Err(self.err(span, too_large(size, 1)));
                                break;
                            }
                        }
                        Err(err) => {
                            result = Err(err);
                            break;
                        }
                    }
                }
                match saved {
                    Some(old) => locals.insert(var.name.clone(), old),
                    None => locals.remove(&var.name),
                };
                result?;
                self.make_tuple(values, span)
            }
            ExprKind::Unpack(_) => Err(self.err(
                span,
                EvalErrorKind::Misplaced(
                    "`*` unpacking",
                    "tuple literals, argument lists and index lists",
                ),
            )),
            ExprKind::Wildcard => Err(self.err(
                span,
                EvalErrorKind::Misplaced("a `*` wildcard", "an index list of an MSpace"),
            )),
            ExprKind::Slice { .. } => Err(self.err(
                span,
                EvalErrorKind::Misplaced("a slice `a:b`", "an index list"),
            )),
        }
    }

    fn lookup(&mut self, name: &str, span: Span, locals: &Locals) -> Result<Value, EvalError> {
        if let Some(v) = locals.get(name).or_else(|| self.globals.get(name)) {
            self.charge(span, measure(v).0)?;
            return Ok(v.clone());
        }
        if self.functions.contains_key(name) {
            return Ok(Value::Func(name.to_string()));
        }
        // The reference grammar lets memory kinds appear as expressions (`m.has(0, FBMEM)`).
        if let Some(kind) = MemKind::from_keyword(name) {
            return Ok(Value::Memory(kind));
        }
        Err(self.err(span, EvalErrorKind::UnknownName(name.to_string())))
    }

    /// Evaluates a list of expressions, splicing `*tuple` elements in place.
    fn eval_list(&mut self, items: &[Expr], locals: &mut Locals) -> Result<Vec<Value>, EvalError> {
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match &item.kind {
                ExprKind::Unpack(inner) => {
                    let v = self.eval(inner, locals)?;
                    match v {
                        Value::Tuple(vs) => {
                            let len = out.len().saturating_add(vs.len());
                            if len > MAX_TUPLE_LEN {
                                return Err(self.err(item.span, too_large(len, 1)));
                            }
                            self.charge(item.span, vs.len())?;
                            out.extend(vs);
                        }
                        other => {
                            return Err(self.err(
                                item.span,
                                EvalErrorKind::WrongType {
                                    context: "`*` unpacking".to_string(),
                                    expected: "tuple".to_string(),
                                    found: other.type_name(),
                                },
                            ))
                        }
                    }
                }
                _ => out.push(self.eval(item, locals)?),
            }
        }
        Ok(out)
    }

    fn binary(
        &mut self,
        op: BinaryOp,
        lhs: &Expr,
        rhs: &Expr,
        span: Span,
        locals: &mut Locals,
    ) -> Result<Value, EvalError> {
        let l = self.eval(lhs, locals)?;
        match op {
            BinaryOp::And | BinaryOp::Or => {
                let ctx = format!("left operand of `{}`", op.symbol());
                let lb = ops::truthy(&l, &ctx).map_err(|k| self.err(lhs.span, k))?;
                if lb == (op == BinaryOp::Or) {
                    return Ok(Value::Bool(lb));
                }
                let r = self.eval(rhs, locals)?;
                let ctx = format!("right operand of `{}`", op.symbol());
                let rb = ops::truthy(&r, &ctx).map_err(|k| self.err(rhs.span, k))?;
                Ok(Value::Bool(rb))
            }
            BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge => {
                let r = self.eval(rhs, locals)?;
                self.charge(span, measure(&l).0.saturating_add(measure(&r).0))?;
                ops::compare(op, &l, &r).map_err(|k| self.err(span, k))
            }
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => {
                let r = self.eval(rhs, locals)?;
                self.charge(span, measure(&l).0.saturating_add(measure(&r).0))?;
                ops::arith(op, &l, &r).map_err(|k| self.err(span, k))
            }
        }
    }

    fn attr(&self, v: &Value, attr: &Ident) -> Result<Value, EvalError> {
        let name = attr.name.as_str();
        let r = match (v, name) {
            (Value::Task(t), "ipoint") => Some(Value::ints(&t.ipoint)),
            (Value::Task(t), "ispace") => Some(Value::ints(&t.ispace)),
            (Value::Task(t), "parent") => match &t.parent {
                Some(p) => Some(Value::Task(p.clone())),
                None => return Err(self.err(attr.span, EvalErrorKind::NoParent)),
            },
            (Value::Space(m), "size") => Some(Value::ints(m.size())),
            (Value::Space(m), "volume") => Some(Value::Int(m.volume())),
            (Value::Tuple(_), "volume") => v
                .as_ints()
                .and_then(|xs| xs.iter().try_fold(1i64, |acc, &x| acc.checked_mul(x)))
                .map(Value::Int),
            // An ISpace is the tuple of its extents, so `y.size` of one is the tuple itself.
            (Value::Tuple(_), "size") => Some(v.clone()),
            (Value::Proc(p), "node") => i64::try_from(p.node).ok().map(Value::Int),
            (Value::Proc(p), "index") => i64::try_from(p.index).ok().map(Value::Int),
            _ => None,
        };
        r.ok_or_else(|| {
            self.err(
                attr.span,
                EvalErrorKind::UnknownAttr {
                    ty: v.type_name(),
                    attr: name.to_string(),
                },
            )
        })
    }

    fn call_expr(
        &mut self,
        func: &Ident,
        args: &[Expr],
        locals: &mut Locals,
    ) -> Result<Value, EvalError> {
        let values = self.eval_list(args, locals)?;
        let name = func.name.as_str();
        if let Some(def) = self.functions.get(name) {
            return self.call_def(def, values, func.span);
        }
        match name {
            "print" => return self.print(values, func.span),
            "len" | "tuple" => return self.builtin1(name, values, func.span),
            _ => {}
        }
        // A variable holding a function.
        if let Some(Value::Func(target)) = locals.get(name).or_else(|| self.globals.get(name)) {
            if let Some(def) = self.functions.get(target.as_str()) {
                return self.call_def(def, values, func.span);
            }
        }
        Err(self.err(func.span, EvalErrorKind::UnknownFunction(name.to_string())))
    }

    fn builtin1(&self, name: &str, mut values: Vec<Value>, span: Span) -> Result<Value, EvalError> {
        if values.len() != 1 {
            return Err(self.err(
                span,
                EvalErrorKind::Arity {
                    func: name.to_string(),
                    expected: "1".to_string(),
                    found: values.len(),
                },
            ));
        }
        let v = values.remove(0);
        let r = match (name, &v) {
            ("len", Value::Tuple(items)) => i64::try_from(items.len()).ok().map(Value::Int),
            ("len", Value::Space(m)) => i64::try_from(m.ndim()).ok().map(Value::Int),
            ("len", Value::Str(s)) => i64::try_from(s.chars().count()).ok().map(Value::Int),
            ("tuple", Value::Tuple(_)) => Some(v.clone()),
            _ => None,
        };
        r.ok_or_else(|| {
            self.err(
                span,
                EvalErrorKind::WrongType {
                    context: format!("argument of `{name}`"),
                    expected: if name == "len" {
                        "tuple, MSpace or string".to_string()
                    } else {
                        "tuple".to_string()
                    },
                    found: v.type_name(),
                },
            )
        })
    }

    /// `print(format, args...)`: every `{}` takes the next argument; `{{` and `}}` are
    /// literal braces. The line goes to the output log.
    fn print(&mut self, values: Vec<Value>, span: Span) -> Result<Value, EvalError> {
        let mut it = values.into_iter();
        let format = match it.next() {
            Some(Value::Str(s)) => s,
            Some(other) => {
                return Err(self.err(
                    span,
                    EvalErrorKind::WrongType {
                        context: "first argument of `print`".to_string(),
                        expected: "a format string".to_string(),
                        found: other.type_name(),
                    },
                ))
            }
            None => {
                return Err(self.err(
                    span,
                    EvalErrorKind::Arity {
                        func: "print".to_string(),
                        expected: "at least 1".to_string(),
                        found: 0,
                    },
                ))
            }
        };
        let args: Vec<Value> = it.collect();
        let mut line = String::new();
        let mut used = 0usize;
        let mut chars = format.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, chars.peek()) {
                ('{', Some('{')) | ('}', Some('}')) => {
                    chars.next();
                    line.push(c);
                }
                ('{', Some('}')) => {
                    chars.next();
                    if let Some(v) = args.get(used) {
                        line.push_str(&v.to_string());
                    }
                    used += 1;
                }
                _ => line.push(c),
            }
        }
        if used != args.len() {
            return Err(self.err(
                span,
                EvalErrorKind::Format {
                    placeholders: used,
                    args: args.len(),
                },
            ));
        }
        self.charge(span, line.len())?;
        self.out.push(line);
        Ok(Value::unit())
    }

    /// Calls a user function with already evaluated arguments; `at` is the call site.
    pub fn call_def(
        &mut self,
        def: &FuncDef,
        args: Vec<Value>,
        at: Span,
    ) -> Result<Value, EvalError> {
        if self.calls >= MAX_CALL_DEPTH {
            return Err(self.err(at, EvalErrorKind::TooDeep(MAX_CALL_DEPTH)));
        }
        if args.len() != def.params.len() {
            return Err(self.err(
                at,
                EvalErrorKind::Arity {
                    func: def.name.name.clone(),
                    expected: def.params.len().to_string(),
                    found: args.len(),
                },
            ));
        }
        let mut locals = Locals::new();
        for (p, v) in def.params.iter().zip(args) {
            if let Some(ty) = p.ty {
                if !param_matches(ty, &v) {
                    return Err(self.err(
                        at,
                        EvalErrorKind::WrongType {
                            context: format!("argument `{}` of `{}`", p.name.name, def.name.name),
                            expected: expected_of(ty).to_string(),
                            found: v.type_name(),
                        },
                    ));
                }
            }
            locals.insert(p.name.name.clone(), v);
        }
        self.calls += 1;
        let r = self.run_body(def, &mut locals);
        self.calls -= 1;
        r
    }

    fn run_body(&mut self, def: &FuncDef, locals: &mut Locals) -> Result<Value, EvalError> {
        for stmt in &def.body {
            match &stmt.kind {
                FuncStmtKind::Assign { target, value } => {
                    let v = self.eval(value, locals)?;
                    locals.insert(target.name.clone(), v);
                }
                FuncStmtKind::Return(e) => return self.eval(e, locals),
                FuncStmtKind::Expr(e) => {
                    self.eval(e, locals)?;
                }
            }
        }
        Ok(Value::unit())
    }

    fn int_arg(&self, method: &Ident, values: &[Value], i: usize) -> Result<i64, EvalError> {
        match values.get(i) {
            Some(Value::Int(v)) => Ok(*v),
            other => Err(self.err(
                method.span,
                EvalErrorKind::WrongType {
                    context: format!("argument {} of `{}`", i + 1, method.name),
                    expected: "int".to_string(),
                    found: other.map_or("nothing", Value::type_name),
                },
            )),
        }
    }

    fn ints_arg(&self, method: &Ident, values: &[Value], i: usize) -> Result<Vec<i64>, EvalError> {
        match values.get(i).and_then(Value::as_ints) {
            Some(v) => Ok(v),
            None => Err(self.err(
                method.span,
                EvalErrorKind::WrongType {
                    context: format!("argument {} of `{}`", i + 1, method.name),
                    expected: "a tuple of ints".to_string(),
                    found: values.get(i).map_or("nothing", Value::type_name),
                },
            )),
        }
    }

    fn arity(&self, method: &Ident, values: &[Value], n: usize) -> Result<(), EvalError> {
        if values.len() == n {
            Ok(())
        } else {
            Err(self.err(
                method.span,
                EvalErrorKind::Arity {
                    func: method.name.clone(),
                    expected: n.to_string(),
                    found: values.len(),
                },
            ))
        }
    }

    fn method(&self, recv: &Value, method: &Ident, values: Vec<Value>) -> Result<Value, EvalError> {
        match recv {
            Value::Space(m) if method.name == "has" => {
                self.arity(method, &values, 2)?;
                let index = self.int_arg(method, &values, 0)?;
                match values.get(1) {
                    Some(Value::Memory(kind)) => Ok(Value::Bool(m.has_memory(index, *kind))),
                    other => Err(self.err(
                        method.span,
                        EvalErrorKind::WrongType {
                            context: "argument 2 of `has`".to_string(),
                            expected: "a memory kind (SYSMEM, FBMEM, ZCMEM, RDMEM, SOCKMEM, \
                                       VIRTUAL)"
                                .to_string(),
                            found: other.map_or("nothing", Value::type_name),
                        },
                    )),
                }
            }
            Value::Space(m) => self.space_method(m, method, &values),
            Value::Task(t) if method.name == "processor" => {
                self.arity(method, &values, 1)?;
                let Some(Value::Space(m)) = values.first() else {
                    return Err(self.err(
                        method.span,
                        EvalErrorKind::WrongType {
                            context: "argument 1 of `processor`".to_string(),
                            expected: "MSpace".to_string(),
                            found: values.first().map_or("nothing", Value::type_name),
                        },
                    ));
                };
                let proc = match t.processor {
                    TaskProc::Unmapped => {
                        return Err(self.err(method.span, EvalErrorKind::Unmapped))
                    }
                    TaskProc::On(p) => p,
                    TaskProc::Origin => Processor {
                        kind: m.kind(),
                        node: 0,
                        index: 0,
                    },
                };
                match m.point_of(&proc) {
                    Some(point) => Ok(Value::ints(&point)),
                    None => Err(self.err(
                        method.span,
                        EvalErrorKind::NotInSpace {
                            processor: proc.to_string(),
                            space: m.to_string(),
                        },
                    )),
                }
            }
            other => Err(self.err(
                method.span,
                EvalErrorKind::UnknownMethod {
                    ty: other.type_name(),
                    method: method.name.clone(),
                },
            )),
        }
    }

    fn space_method(
        &self,
        m: &MSpace,
        method: &Ident,
        values: &[Value],
    ) -> Result<Value, EvalError> {
        let r = match method.name.as_str() {
            "split" | "merge" | "swap" | "balance_split" => {
                self.arity(method, values, 2)?;
                let a = self.int_arg(method, values, 0)?;
                let b = self.int_arg(method, values, 1)?;
                match method.name.as_str() {
                    "split" => m.split(a, b),
                    "merge" => m.merge(a, b),
                    "swap" => m.swap(a, b),
                    _ => m.balance_split(a, b),
                }
            }
            "slice" => {
                self.arity(method, values, 3)?;
                let d = self.int_arg(method, values, 0)?;
                let lo = self.int_arg(method, values, 1)?;
                let hi = self.int_arg(method, values, 2)?;
                m.slice(d, lo, hi)
            }
            "reverse" => {
                self.arity(method, values, 1)?;
                m.reverse(self.int_arg(method, values, 0)?)
            }
            "auto_split" | "decompose" | "greedy_split" => {
                self.arity(method, values, 2)?;
                let d = self.int_arg(method, values, 0)?;
                let shape = self.ints_arg(method, values, 1)?;
                match method.name.as_str() {
                    "decompose" => m.decompose(d, &shape),
                    "greedy_split" => m.greedy_split(d, &shape),
                    _ => m.auto_split(d, &shape),
                }
            }
            _ => {
                return Err(self.err(
                    method.span,
                    EvalErrorKind::UnknownMethod {
                        ty: "MSpace",
                        method: method.name.clone(),
                    },
                ))
            }
        };
        r.map(|s| Value::Space(Arc::new(s)))
            .map_err(|e| self.err(method.span, EvalErrorKind::Machine(e)))
    }

    fn index_items(
        &mut self,
        indices: &[Expr],
        locals: &mut Locals,
    ) -> Result<Vec<Item>, EvalError> {
        let mut items = Vec::with_capacity(indices.len());
        for e in indices {
            match &e.kind {
                ExprKind::Wildcard => items.push(Item::Wild),
                ExprKind::Slice { start, end } => {
                    let s = match start {
                        Some(x) => Some(self.int_of(x, "slice start", locals)?),
                        None => None,
                    };
                    let t = match end {
                        Some(x) => Some(self.int_of(x, "slice end", locals)?),
                        None => None,
                    };
                    items.push(Item::Slice(s, t));
                }
                _ => {
                    let single = std::slice::from_ref(e);
                    for v in self.eval_list(single, locals)? {
                        match v {
                            Value::Int(i) => items.push(Item::Int(i)),
                            other => {
                                return Err(self.err(
                                    e.span,
                                    EvalErrorKind::WrongType {
                                        context: "index".to_string(),
                                        expected: "int".to_string(),
                                        found: other.type_name(),
                                    },
                                ))
                            }
                        }
                    }
                }
            }
        }
        Ok(items)
    }

    fn int_of(&mut self, e: &Expr, what: &str, locals: &mut Locals) -> Result<i64, EvalError> {
        match self.eval(e, locals)? {
            Value::Int(i) => Ok(i),
            other => Err(self.err(
                e.span,
                EvalErrorKind::WrongType {
                    context: what.to_string(),
                    expected: "int".to_string(),
                    found: other.type_name(),
                },
            )),
        }
    }

    fn index(
        &mut self,
        base: &Value,
        indices: &[Expr],
        span: Span,
        locals: &mut Locals,
    ) -> Result<Value, EvalError> {
        let items = self.index_items(indices, locals)?;
        if let Value::Tuple(values) = base {
            self.charge(span, values.len())?;
        }
        let r = match base {
            Value::Tuple(values) => index_tuple(values, &items),
            Value::Space(m) => self.index_space(m, &items),
            other => Err(EvalErrorKind::WrongType {
                context: "indexed value".to_string(),
                expected: "tuple or MSpace".to_string(),
                found: other.type_name(),
            }),
        };
        r.map_err(|k| self.err(span, k))
    }

    /// Indexing a space: a full point (`*` allowed) gives a processor; a single integer gives
    /// the size of that dimension (the paper's `m4d[0]`); a single slice gives the sizes of
    /// those dimensions (`m[:-1]`).
    fn index_space(&self, m: &MSpace, items: &[Item]) -> Result<Value, EvalErrorKind> {
        let shape = m.size();
        match items {
            [Item::Slice(s, e)] => {
                let (a, b) = slice_bounds(*s, *e, shape.len());
                Ok(Value::ints(shape.get(a..b).unwrap_or(&[])))
            }
            _ if items.len() == shape.len() => {
                let mut point = Vec::with_capacity(items.len());
                let wild: Vec<i64> = items
                    .iter()
                    .zip(shape)
                    .filter(|(it, _)| matches!(it, Item::Wild))
                    .map(|(_, &s)| s)
                    .collect();
                let mut rr = wildcard_digits(self.rr, &wild).into_iter();
                for it in items {
                    match it {
                        Item::Int(i) => point.push(*i),
                        Item::Wild => point.push(rr.next().unwrap_or(0)),
                        Item::Slice(..) => {
                            return Err(EvalErrorKind::BadIndex(
                                "a slice cannot be part of a processor index".to_string(),
                            ))
                        }
                    }
                }
                m.to_processor(&point)
                    .map(Value::Proc)
                    .map_err(EvalErrorKind::Machine)
            }
            [Item::Int(i)] => {
                let d = resolve_index(*i, shape.len())?;
                Ok(Value::Int(shape.get(d).copied().unwrap_or(0)))
            }
            _ => Err(EvalErrorKind::BadIndex(format!(
                "an MSpace of shape {} takes {} indices (a processor), one index (a size) or \
                 one slice (sizes), not {}",
                fmt_tuple(shape),
                shape.len(),
                items.len()
            ))),
        }
    }
}

/// The digits of `rr` in the mixed radix `sizes` (last one fastest), i.e. the `rr`-th point
/// (cyclically) of the wildcard dimensions in row-major order.
fn wildcard_digits(rr: u64, sizes: &[i64]) -> Vec<i64> {
    let mut digits = vec![0i64; sizes.len()];
    let mut rest = rr;
    for (d, &s) in digits.iter_mut().zip(sizes).rev() {
        let s = u64::try_from(s).unwrap_or(1).max(1);
        *d = i64::try_from(rest % s).unwrap_or(0);
        rest /= s;
    }
    digits
}

fn index_tuple(values: &[Value], items: &[Item]) -> Result<Value, EvalErrorKind> {
    match items {
        [Item::Int(i)] => {
            let k = resolve_index(*i, values.len())?;
            Ok(values.get(k).cloned().unwrap_or_else(Value::unit))
        }
        [Item::Slice(s, e)] => {
            let (a, b) = slice_bounds(*s, *e, values.len());
            Ok(Value::Tuple(values.get(a..b).unwrap_or(&[]).to_vec()))
        }
        [Item::Wild] => Err(EvalErrorKind::BadIndex(
            "a `*` wildcard only indexes an MSpace".to_string(),
        )),
        _ => Err(EvalErrorKind::BadIndex(format!(
            "a tuple takes one index or one slice, not {}",
            items.len()
        ))),
    }
}
