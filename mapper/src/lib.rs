//! `diffuse-mapper`: the Mapple mapping language (parser, evaluator, machine model and the
//! transformation primitives including `decompose`) that decides on which processor each point
//! task of a (fused) index task runs.
//!
//! In progress (issue #6): the parser ([`parse`]), the machine model with its transformation
//! primitives ([`machine`]) and `decompose` ([`decompose`]) exist; the evaluator, the placement
//! API and the runtime integration come next. Until then the embedded backend spreads the
//! points of a launch over its processors in contiguous blocks.

#![warn(missing_docs)]

pub mod ast;
pub mod decompose;
pub mod machine;
pub mod parse;
