//! Shared helpers: a context over an executor that runs nothing, unique kind registration,
//! and small constructors for tuples and rectangles.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use diffuse_ir::{
    Context, DType, Executor, HostData, IndexTask, IrError, KernelError, Point, Privilege, Rect,
    Shape, StoreRef, TaskKind, Tuple,
};

/// An executor that only exists so a `Context` can create stores. Every operation that would
/// need a real runtime fails with `IrError::Backend`; `execute` counts how often it was reached.
#[derive(Default)]
pub struct NullExecutor {
    pub executed: AtomicUsize,
}

pub const NULL_BACKEND: &str = "ir-tests-null";

fn unsupported(what: &str) -> IrError {
    IrError::Backend {
        backend: NULL_BACKEND.to_string(),
        message: format!("{what} is not supported by the test executor"),
    }
}

impl Executor for NullExecutor {
    fn name(&self) -> &str {
        NULL_BACKEND
    }

    fn processors(&self) -> usize {
        1
    }

    fn execute(&self, _task: IndexTask) -> Result<(), IrError> {
        self.executed.fetch_add(1, Ordering::SeqCst);
        Err(unsupported("execute"))
    }

    fn flush(&self) -> Result<(), IrError> {
        Err(unsupported("flush"))
    }

    fn read(&self, _store: &StoreRef, _rect: Rect) -> Result<HostData, IrError> {
        Err(unsupported("read"))
    }

    fn write(&self, _store: &StoreRef, _rect: Rect, _data: HostData) -> Result<(), IrError> {
        Err(unsupported("write"))
    }
}

/// A context over a fresh [`NullExecutor`], with the executor for inspection.
pub fn context_with_executor() -> (Context, Arc<NullExecutor>) {
    let exec = Arc::new(NullExecutor::default());
    (Context::new(exec.clone()), exec)
}

/// A context over a fresh [`NullExecutor`].
pub fn ctx() -> Context {
    context_with_executor().0
}

/// A process-unique kind name (the kind registry is global and rejects duplicates, and the
/// tests of this target run concurrently in one process).
pub fn unique_name(prefix: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "ir-tests::{prefix}#{}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Registers a kind with the given `(dtype, privilege)` arguments, scalar dtypes and aligned
/// groups. Its native variant is never run by these tests and fails if it ever is.
pub fn kind_with(
    prefix: &str,
    args: &[(DType, Privilege)],
    scalars: &[DType],
    aligned: &[&[usize]],
) -> Arc<TaskKind> {
    let mut b = TaskKind::builder(unique_name(prefix));
    for (i, &(dtype, privilege)) in args.iter().enumerate() {
        b = b.arg(format!("a{i}"), dtype, privilege);
    }
    for &s in scalars {
        b = b.scalar(s);
    }
    for group in aligned {
        b = b.aligned(group);
    }
    b.register(|t| -> Result<(), KernelError> {
        Err(t.error("the ir integration tests never execute point tasks"))
    })
    .expect("registering a fresh, well-formed kind")
}

/// A kind with only store arguments.
pub fn kind(prefix: &str, args: &[(DType, Privilege)]) -> Arc<TaskKind> {
    kind_with(prefix, args, &[], &[])
}

/// A shape (panics on malformed input: for building expectations only).
pub fn sh(extents: &[i64]) -> Shape {
    Tuple::shape(extents).expect("well-formed shape")
}

/// A point.
pub fn pt(coords: &[i64]) -> Point {
    Tuple::new(coords).expect("well-formed point")
}

/// The half-open box `[lo, hi)`.
pub fn rect(lo: &[i64], hi: &[i64]) -> Rect {
    Rect {
        lo: pt(lo),
        hi: pt(hi),
    }
}

/// Asserts that the error's Display text mentions every needle.
pub fn assert_mentions(err: &IrError, needles: &[&str]) {
    let msg = err.to_string();
    for needle in needles {
        assert!(
            msg.contains(needle),
            "error message {msg:?} does not mention {needle:?}"
        );
    }
}
