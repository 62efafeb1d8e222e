//! Evaluation errors.

use crate::ast::Span;
use crate::machine::MachineError;

/// A runtime error of a Mapple program: where it happened and what went wrong.
///
/// Displays as `file:line:col: message`, the position being that of the expression (or
/// statement) that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{span}: {kind}")]
pub struct EvalError {
    /// The file name given when the program was loaded.
    pub file: String,
    /// The start of the expression that failed.
    pub span: Span,
    /// What went wrong.
    pub kind: EvalErrorKind,
}

/// The kinds of evaluation errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalErrorKind {
    /// A variable that is neither local, global nor a function.
    #[error("unknown name `{0}`")]
    UnknownName(String),
    /// A call of a name that is neither a function nor a builtin.
    #[error("unknown function `{0}`")]
    UnknownFunction(String),
    /// A method the receiver's type does not have.
    #[error("{ty} has no method `{method}`")]
    UnknownMethod {
        /// The receiver's type.
        ty: &'static str,
        /// The method name.
        method: String,
    },
    /// An attribute the value's type does not have.
    #[error("{ty} has no attribute `{attr}`")]
    UnknownAttr {
        /// The value's type.
        ty: &'static str,
        /// The attribute name.
        attr: String,
    },
    /// A call with the wrong number of arguments.
    #[error("`{func}` takes {expected} argument(s), got {found}")]
    Arity {
        /// The function or method.
        func: String,
        /// How many it takes (e.g. `2` or `1 or 2`).
        expected: String,
        /// How many were given.
        found: usize,
    },
    /// An operator applied to operands of types it does not accept.
    #[error("cannot apply `{op}` to {left} and {right}")]
    TypeMismatch {
        /// The operator.
        op: &'static str,
        /// The left operand's type.
        left: &'static str,
        /// The right operand's type.
        right: &'static str,
    },
    /// A value of the wrong type where one type is expected.
    #[error("{context}: expected {expected}, found {found}")]
    WrongType {
        /// Where the value was used (e.g. "argument `x` of `f`").
        context: String,
        /// The expected type.
        expected: String,
        /// The type found.
        found: &'static str,
    },
    /// An elementwise operation on tuples of different lengths.
    #[error("`{op}` on tuples of different lengths {left} and {right}")]
    TupleLength {
        /// The operator.
        op: &'static str,
        /// The left tuple's length.
        left: usize,
        /// The right tuple's length.
        right: usize,
    },
    /// An index outside a tuple.
    #[error("index {index} out of range for a tuple of length {len}")]
    IndexOutOfRange {
        /// The index as given.
        index: i64,
        /// The tuple's length.
        len: usize,
    },
    /// An index list a value does not accept (wrong count, wildcard or slice where not
    /// meaningful).
    #[error("bad index: {0}")]
    BadIndex(String),
    /// `/` or `%` by zero.
    #[error("`{op}` by zero")]
    DivisionByZero {
        /// The operator.
        op: &'static str,
    },
    /// Integer overflow.
    #[error("integer overflow in `{op}`")]
    Overflow {
        /// The operator.
        op: &'static str,
    },
    /// A machine-model error (a bad transformation or an index outside a space).
    #[error("{0}")]
    Machine(MachineError),
    /// `*e`, a bare `*` or `a:b` where they mean nothing.
    #[error("{0} is only allowed in {1}")]
    Misplaced(&'static str, &'static str),
    /// `print` with a different number of `{}` than arguments.
    #[error("format string has {placeholders} `{{}}` but {args} argument(s) were given")]
    Format {
        /// The number of `{}` in the format.
        placeholders: usize,
        /// The number of arguments.
        args: usize,
    },
    /// `task.processor(m)` on the task being mapped.
    #[error("the task being mapped has no processor yet (only `task.parent.processor(m)` has)")]
    Unmapped,
    /// `task.parent` of a task without a known parent.
    #[error("the task has no known parent")]
    NoParent,
    /// `task.processor(m)` where the task's processor is not in `m`.
    #[error("{processor} is not a point of {space}")]
    NotInSpace {
        /// The processor.
        processor: String,
        /// The space.
        space: String,
    },
    /// Function calls nested deeper than [`super::MAX_CALL_DEPTH`] (e.g. unbounded recursion),
    /// or expressions nested deeper than [`super::MAX_EVAL_DEPTH`] in all.
    #[error("evaluation nested too deeply (more than {0} levels; unbounded recursion?)")]
    TooDeep(usize),
    /// More than [`super::MAX_STEPS`] evaluation steps in one top-level statement or call.
    #[error("evaluation took more than {0} steps")]
    TooManySteps(u64),
    /// A tuple with more than [`super::MAX_TUPLE_LEN`] values in all (nested ones included) or
    /// nested deeper than [`super::MAX_TUPLE_DEPTH`].
    #[error(
        "tuple too large: {size} values nested {depth} deep (at most {max_size} values, \
         {max_depth} deep)"
    )]
    TupleTooLarge {
        /// Its number of values (nested ones included).
        size: usize,
        /// Its nesting depth.
        depth: usize,
        /// The most values allowed.
        max_size: usize,
        /// The deepest nesting allowed.
        max_depth: usize,
    },
    /// A mapping function that did not return a processor.
    #[error("mapping function `{func}` returned {found}, expected a processor")]
    NotAProcessor {
        /// The function.
        func: String,
        /// The type it returned.
        found: &'static str,
    },
}
