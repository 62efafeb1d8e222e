//! `diffuse-mapper`: the Mapple mapping language, which decides on which processor each point
//! task of a (fused) index task runs, and in which memories and layouts its regions live.
//!
//! The pipeline: [`parse`] turns Mapple source into the syntax tree of [`ast`]; [`eval`] runs
//! a parsed program against a machine; [`machine`] is the processor-space model with the
//! transformation primitives (`split`, `merge`, `swap`, `slice`, `reverse`, `balance_split`,
//! `auto_split`), and [`decompose`] chooses the factors of `decompose`. [`placement`] is the
//! API the runtime and the backends use: [`placement::Mapper`] answers which processor runs
//! each point of a (fused) task, falling back to a documented block mapping, and reads the
//! processor-kind, region, layout, collection and backpressure decisions. [`effects`] says
//! what each statement does on a backend, from the capabilities that backend declares (the
//! machine vocabulary itself is crate `diffuse-machine`). Errors of the whole pipeline are
//! [`error::MappleError`].

#![warn(missing_docs)]

pub mod ast;
pub mod decompose;
pub mod effects;
pub mod error;
pub mod eval;
pub mod machine;
pub mod parse;
pub mod placement;
