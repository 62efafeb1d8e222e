//! Tests of the Mapple evaluator (`diffuse_mapper::eval`) and the placement API
//! (`diffuse_mapper::placement`).
//!
//! - `sources`: the mappers of the two sources place tasks as the sources say (Figure 3, the
//!   manual's circuit, `hierarchicalblock1d`, `cyclic1d`, Cannon's mapper of Figure A1(b),
//!   Solomonik's `merge` and `auto_split` mappers, `same_point`/`same_node`, Figure 1(a)).
//! - `fixtures`: every fixture loads on a 2 x 4 machine, or fails with the expected typed error.
//! - `semantics`: values, operators, indexing, comprehensions, `print`.
//! - `errors`: runtime errors with their exact `file:line:col`.
//! - `placement`: default block mapping, map selection, fused tasks, data decisions.
//! - `reference`: the reference compiler's statement forms, evaluated and placed.
//! - `props`: block mappers land on valid processors and are balanced; evaluating mutated
//!   fixtures never panics. `MAPPLE_EVAL_FUZZ_CASES=N` sets the number of fuzz cases
//!   (default 300).

#[path = "eval/common.rs"]
mod common;
#[path = "eval/errors.rs"]
mod errors;
#[path = "eval/fixtures.rs"]
mod fixtures;
#[path = "eval/placement.rs"]
mod placement;
#[path = "eval/props.rs"]
mod props;
#[path = "eval/reference.rs"]
mod reference;
#[path = "eval/semantics.rs"]
mod semantics;
#[path = "mapple/common.rs"]
mod source_fixtures;
#[path = "eval/sources.rs"]
mod sources;
