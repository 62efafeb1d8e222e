//! Runtime values of the evaluator.

use std::fmt;
use std::sync::Arc;

use crate::ast::MemKind;
use crate::machine::{fmt_tuple, MSpace, Processor};

/// A value computed by a Mapple program.
///
/// Tuples hold arbitrary values (usually integers); an index point (`IPoint`) and a launch
/// domain (`ISpace`) are tuples of integers. Values are immutable and cheap to clone (spaces
/// and tasks are shared).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A 64-bit integer.
    Int(i64),
    /// The result of a comparison or boolean operator.
    Bool(bool),
    /// A string literal (only `print`'s format uses one).
    Str(String),
    /// A tuple `(a, b, ...)`; `()` is also what `print` and a function without `return` give.
    Tuple(Vec<Value>),
    /// A processor space (`Machine(GPU)` and its transformations).
    Space(Arc<MSpace>),
    /// One processor: the result of indexing a space with a full point (`m[i, j]`).
    Proc(Processor),
    /// A task handle (`task`, `task.parent`).
    Task(Arc<TaskValue>),
    /// A user-defined function, by name (a `def` name used as a value).
    Func(String),
    /// A memory kind named in an expression (`m.has(0, FBMEM)`).
    Memory(MemKind),
}

impl Value {
    /// The name of the value's type as error messages write it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Int(_) => "int",
            Value::Bool(_) => "bool",
            Value::Str(_) => "string",
            Value::Tuple(_) => "tuple",
            Value::Space(_) => "MSpace",
            Value::Proc(_) => "processor",
            Value::Task(_) => "Task",
            Value::Func(_) => "function",
            Value::Memory(_) => "memory kind",
        }
    }

    /// The empty tuple `()`, the value of statements that produce nothing.
    pub fn unit() -> Value {
        Value::Tuple(Vec::new())
    }

    /// A tuple of integers.
    pub fn ints(values: &[i64]) -> Value {
        Value::Tuple(values.iter().map(|&v| Value::Int(v)).collect())
    }

    /// The integers of a tuple of integers, or `None` for any other value.
    pub fn as_ints(&self) -> Option<Vec<i64>> {
        match self {
            Value::Tuple(items) => items
                .iter()
                .map(|v| match v {
                    Value::Int(i) => Some(*i),
                    _ => None,
                })
                .collect(),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    /// Integers in decimal, booleans as `true`/`false`, strings without quotes, tuples as
    /// `(1, 2)` / `(1,)` / `()`, spaces as `MSpace(GPU, (2, 4))`, processors as
    /// `node 0 GPU 1`, tasks as `Task(ipoint=(2, 3), ispace=(6, 6))`, functions as `<def f>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Str(s) => f.write_str(s),
            Value::Tuple(items) => {
                f.write_str("(")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                if items.len() == 1 {
                    f.write_str(",")?;
                }
                f.write_str(")")
            }
            Value::Space(m) => write!(f, "{m}"),
            Value::Memory(k) => f.write_str(k.keyword()),
            Value::Proc(p) => write!(f, "{p}"),
            Value::Task(t) => write!(
                f,
                "Task(ipoint={}, ispace={})",
                fmt_tuple(&t.ipoint),
                fmt_tuple(&t.ispace)
            ),
            Value::Func(name) => write!(f, "<def {name}>"),
        }
    }
}

/// Where a task runs, as far as `task.processor(m)` is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskProc {
    /// The task is the one being mapped: it has no processor yet.
    Unmapped,
    /// The task runs on this processor.
    On(Processor),
    /// The top-level task: it runs on processor 0 of node 0 of whatever kind the space asked
    /// about has (the placement API's default parent).
    Origin,
}

/// A task as Mapple functions see it: `task.ipoint`, `task.ispace`, `task.parent`, and for a
/// task that already runs somewhere, `task.processor(m)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskValue {
    /// The index point of this point task (`()` for a single task).
    pub ipoint: Vec<i64>,
    /// The launch domain: the extent of every dimension (`()` for a single task).
    pub ispace: Vec<i64>,
    /// Where the task runs.
    pub processor: TaskProc,
    /// The parent task, if known.
    pub parent: Option<Arc<TaskValue>>,
}

impl TaskValue {
    /// The task being mapped: point `ipoint` of launch `ispace`, whose parent runs on
    /// `parent` (`None`: the top-level task on processor 0 of node 0, see [`TaskProc::Origin`]).
    pub fn mapped(ipoint: &[i64], ispace: &[i64], parent: Option<Processor>) -> TaskValue {
        let parent_proc = match parent {
            Some(p) => TaskProc::On(p),
            None => TaskProc::Origin,
        };
        TaskValue {
            ipoint: ipoint.to_vec(),
            ispace: ispace.to_vec(),
            processor: TaskProc::Unmapped,
            parent: Some(Arc::new(TaskValue {
                ipoint: Vec::new(),
                ispace: Vec::new(),
                processor: parent_proc,
                parent: None,
            })),
        }
    }
}
