//! The Mapple evaluator: runs a parsed [`Program`] against a [`Machine`].
//!
//! [`Env::load`] registers every `def` (functions are hoisted, so a function may call one
//! defined further down; a later `def` of the same name replaces an earlier one), then
//! evaluates the top-level assignments and expression statements in source order. Functions
//! see the globals as they are after loading. [`Env::call`] then runs a function, e.g. the
//! mapping function of an `IndexTaskMap` (see [`crate::placement`]).
//!
//! # Values
//!
//! [`Value`]: integers (64-bit, every operation checked for overflow), booleans, strings,
//! tuples of values, processor spaces ([`MSpace`](crate::machine::MSpace)), processors
//! (`m[i, j]`), tasks and functions.
//!
//! # Semantics
//!
//! - Arithmetic `+ - * / %` on integers; on two tuples of the same length elementwise; between a
//!   tuple and an integer the integer applies to every element (`point * m.size / space`).
//!   `/` and `%` are *floor* division and modulo (Python's `//` and `%`, the `⌊a / b⌋` and
//!   `a mod b` of the paper's Figure 6): for non-negative operands they are the usual integer
//!   division and remainder, `-7 / 2 == -4`, `-7 % 2 == 1`. Division by zero and overflow are
//!   errors.
//! - Comparisons: `==`/`!=` between two values of the same type (structural), `< <= > >=` on
//!   integers or, lexicographically, tuples of integers. `&&`, `||` short-circuit and `? :`
//!   evaluates only the chosen branch; conditions are booleans or integers (non-zero is true).
//! - Indexing a tuple: `t[i]` (negative `i` counts from the end), `t[a:b]` with Python slice
//!   rules (missing or out-of-range bounds are clamped).
//! - Indexing a space `m` of `n` dimensions: `n` indices give the processor at that point
//!   ([`MSpace::to_processor`](crate::machine::MSpace::to_processor)); a `*` index is a
//!   wildcard ("any processor along that dimension"; the manual leaves the choice to the
//!   runtime), resolved deterministically round-robin: the wildcard dimensions take the digits
//!   (row-major) of the *round-robin counter* modulo their sizes; the placement API passes the
//!   row-major linear index of the point being mapped (0 for a single task). One integer
//!   `m[i]` on a space of more than one dimension gives `m.size[i]` (the paper's Figure A1 writes
//!   `m4d[0]`); one slice gives the sizes of those dimensions as a tuple (`m[:-1]`).
//! - `*t` splices the tuple `t` into a tuple literal, an argument list or an index list.
//! - `tuple(e for x in t)` evaluates `e` for each element of `t` with `x` bound to it.
//! - Methods of a space: `split`, `merge`, `swap`, `slice`, `reverse`, `balance_split`
//!   (ints), `auto_split` and `decompose` (an int and a tuple of ints); attributes `m.size`
//!   (its shape) and `len(m)` (its number of dimensions). A tuple's `.size` is the tuple itself
//!   (an `ISpace` is the tuple of its extents: the manual's `y.size[dim]`).
//! - Tasks: `task.ipoint`, `task.ispace` (tuples of ints), `task.parent` (a task) and, for a
//!   task that runs somewhere, `t.processor(m)`: its point in space `m`
//!   ([`MSpace::point_of`](crate::machine::MSpace::point_of)).
//!   The task being mapped has no processor yet. Unless the caller names the parent's processor,
//!   the parent is the top-level task, which runs on **processor 0 of node 0** of whatever kind
//!   `m` has.
//! - `Machine(KIND)`: the space of that kind on the machine given to [`Env::load`].
//! - Builtins: `len(x)`, `tuple(t)` (identity on tuples) and `print("{} {}", a, b)`: every
//!   `{}` takes the next argument (`{{`/`}}` are literal braces; the counts must match). Printed
//!   lines are collected in an output log (see [`Env::output`]), never written to stdout.
//! - Function calls check the number of arguments and the declared parameter types (`int`,
//!   `Tuple`, `IPoint`/`ISpace` = tuple of ints, `MSpace`, `Task`); a function that ends without
//!   `return` gives `()`. Assignments in a body bind locals; names are looked up as local, then
//!   global, then function.
//!
//! # Limits
//!
//! Evaluation never panics and never overflows the stack: calls nest at most
//! [`MAX_CALL_DEPTH`] deep and expressions (across calls) at most [`MAX_EVAL_DEPTH`] deep, one
//! top-level statement or call takes at most [`MAX_STEPS`] steps, and a tuple holds at most
//! [`MAX_TUPLE_LEN`] values nested at most [`MAX_TUPLE_DEPTH`] deep. Exceeding a limit is an
//! [`EvalError`]. At the depth limits an unoptimised build needs under 1 MiB of stack (measured
//! for nested calls, indexing, method calls and comprehensions), within a spawned thread's 2 MiB.
//!
//! Every error is an [`EvalError`] carrying the file and the position of the expression that
//! failed (for method calls and calls, the method or function name), displayed as
//! `file:line:col: message`.

mod error;
mod interp;
mod ops;
mod value;

use std::collections::HashMap;

pub use error::{EvalError, EvalErrorKind};
pub use value::{TaskProc, TaskValue, Value};

use crate::ast::{FuncDef, Program, Span, StmtKind};
use crate::machine::Machine;
use interp::{Interp, Locals};

/// The deepest nesting of function calls (deeper recursion is an error).
pub const MAX_CALL_DEPTH: usize = 48;

/// The deepest nesting of expression evaluation, counted across calls.
pub const MAX_EVAL_DEPTH: usize = 320;

/// The most evaluation steps of one top-level statement or one call: every expression
/// evaluated counts one, and every value copied or combined (in tuples, arithmetic,
/// comparisons, variable reads, `print`) counts one more.
pub const MAX_STEPS: u64 = 1_000_000;

/// The most values a tuple may hold, nested ones included.
pub const MAX_TUPLE_LEN: usize = 1 << 16;

/// The deepest nesting of tuples in tuples.
pub const MAX_TUPLE_DEPTH: usize = 32;

/// A loaded program: its functions, its globals after the top-level statements ran, and what
/// they printed.
#[derive(Debug, Clone)]
pub struct Env {
    file: String,
    machine: Machine,
    functions: HashMap<String, FuncDef>,
    globals: HashMap<String, Value>,
    output: Vec<String>,
}

impl Env {
    /// Loads `program` (named `file` in errors) for `machine`: registers its functions and runs
    /// its top-level assignments and expression statements in order.
    ///
    /// ```
    /// use diffuse_mapper::{eval::{Env, Value}, machine::Machine, parse::parse};
    /// let src = "m = Machine(GPU);\nx = m.size * 2;\nprint(\"{}\", x);";
    /// let prog = parse("m.mapple", src).unwrap();
    /// let env = Env::load("m.mapple", &prog, &Machine::uniform(2, 4)).unwrap();
    /// assert_eq!(env.global("x"), Some(&Value::ints(&[4, 8])));
    /// assert_eq!(env.output(), ["(4, 8)"]);
    /// ```
    pub fn load(file: &str, program: &Program, machine: &Machine) -> Result<Env, EvalError> {
        let mut functions = HashMap::new();
        for stmt in &program.stmts {
            if let StmtKind::FuncDef(def) = &stmt.kind {
                functions.insert(def.name.name.clone(), def.clone());
            }
        }
        let mut globals: HashMap<String, Value> = HashMap::new();
        let mut output = Vec::new();
        for stmt in &program.stmts {
            let (target, expr) = match &stmt.kind {
                StmtKind::Assign { target, value } => (Some(target), value),
                StmtKind::Expr(e) => (None, e),
                _ => continue,
            };
            let value = {
                let mut it = Interp::new(file, machine, &functions, &globals, &mut output, 0);
                it.eval(expr, &mut Locals::new())?
            };
            if let Some(t) = target {
                globals.insert(t.name.clone(), value);
            }
        }
        Ok(Env {
            file: file.to_string(),
            machine: machine.clone(),
            functions,
            globals,
            output,
        })
    }

    /// The file name used in errors.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The machine the program runs against.
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// The value of a global variable after loading.
    pub fn global(&self, name: &str) -> Option<&Value> {
        self.globals.get(name)
    }

    /// The function `name`, if the program defines one.
    pub fn function(&self, name: &str) -> Option<&FuncDef> {
        self.functions.get(name)
    }

    /// The lines the top-level statements printed, in order.
    pub fn output(&self) -> &[String] {
        &self.output
    }

    /// Calls function `func` with `args`. `at` is reported as the position of errors about the
    /// call itself (unknown function, arity, parameter types); `rr` is the round-robin counter
    /// for `*` indices (see the module docs); printed lines are appended to `out`.
    pub fn call(
        &self,
        func: &str,
        args: Vec<Value>,
        at: Span,
        rr: u64,
        out: &mut Vec<String>,
    ) -> Result<Value, EvalError> {
        let Some(def) = self.functions.get(func) else {
            return Err(EvalError {
                file: self.file.clone(),
                span: at,
                kind: EvalErrorKind::UnknownFunction(func.to_string()),
            });
        };
        let mut it = Interp::new(
            &self.file,
            &self.machine,
            &self.functions,
            &self.globals,
            out,
            rr,
        );
        it.call_def(def, args, at)
    }
}
