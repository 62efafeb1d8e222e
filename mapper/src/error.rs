//! The crate's error type: everything that can go wrong between Mapple source text and a
//! placement decision.

use crate::eval::EvalError;
use crate::parse::ParseError;
use crate::placement::PlacementError;

/// An error of loading a Mapple program or of placing a task with it.
///
/// Each variant displays as its inner error: `file:line:col: ...` for parse and evaluation
/// errors, a plain message for placement queries that do not fit the launch or machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MappleError {
    /// The source does not parse.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// Evaluating the program (its top-level statements or a mapping function) failed.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// The placement query itself is invalid (a point outside its launch domain, a machine
    /// without processors).
    #[error(transparent)]
    Placement(#[from] PlacementError),
}
