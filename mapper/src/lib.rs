//! `diffuse-mapper`: the Mapple mapping language (parser, evaluator, machine model and the
//! transformation primitives including `decompose`) that decides on which processor each point
//! task of a (fused) index task runs.
//!
//! Issue #6. What exists: the parser ([`parse`], producing the syntax tree of [`ast`]), the
//! machine model with its transformation primitives ([`machine`]), `decompose` ([`decompose`]),
//! the evaluator ([`eval`]: runs a parsed program against a machine) and the placement API
//! ([`placement`]: [`placement::Mapper`] answers which processor runs each point of a (fused)
//! task, falling back to a documented block mapping, and reads the processor-kind, region,
//! layout, collection and backpressure decisions). Errors of the whole pipeline are
//! [`error::MappleError`]. The runtime integration (running the embedded backend's point tasks
//! where a mapper says) and the CLI live outside this crate and come next.

#![warn(missing_docs)]

pub mod ast;
pub mod decompose;
pub mod effects;
pub mod error;
pub mod eval;
pub mod machine;
pub mod parse;
pub mod placement;
