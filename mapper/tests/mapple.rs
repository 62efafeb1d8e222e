//! Tests of the Mapple parser (`diffuse_mapper::parse`).
//!
//! - `fixtures`: every mapper text of the two sources (the DSL mapper manual and the Mapple paper),
//!   stored under `tests/mapple/fixtures/`, parses, and printing is a fixed point.
//! - `structure`: the exact trees of small inputs.
//! - `errors`: malformed inputs give `file:line:col: expected ..., found ...` at the right place.
//! - `fuzz`: random bytes and mutated fixtures never panic. `MAPPLE_FUZZ_CASES=N` sets the number
//!   of cases per fuzz property (default 1000, i.e. ~2,000 in all); for the long local run use e.g.
//!   `MAPPLE_FUZZ_CASES=500000 cargo test --release -p diffuse-mapper --test mapple fuzz`.

#[path = "mapple/common.rs"]
mod common;
#[path = "mapple/errors.rs"]
mod errors;
#[path = "mapple/fixtures.rs"]
mod fixtures;
#[path = "mapple/fuzz.rs"]
mod fuzz;
#[path = "mapple/structure.rs"]
mod structure;
