//! The Legion backend against the same specification as the embedded one: the differential
//! property over random task streams, placement, faults, injected failures (compared across
//! both backends), floating-point exceptions, and two Legion nodes under `diffuse launch`.
//!
//! Legion starts once per process (it cannot restart), so every Legion test lives in this
//! binary and shares one runtime (see `common::legion`).

// Helpers return `IrError`, which is large by design (see the IR crate).
#![allow(clippy::result_large_err)]

// Not every shared helper is used by the Legion tests.
#[allow(dead_code)]
#[path = "../common/mod.rs"]
mod common;

mod backend;
mod distributed;
mod failures;
mod float_errors;
