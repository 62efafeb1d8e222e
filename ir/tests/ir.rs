//! Integration tests of `diffuse-ir`: sub-store semantics (paper Figure 4), the partition
//! coverage property, interning, submission-time validation errors and the split reference
//! counts of stores.
//!
//! One test target; the modules live under `tests/ir/`.

// `IrError` carries its shapes inline (the crate allows this lint for the same reason).
#![allow(clippy::result_large_err)]

#[path = "ir/common.rs"]
mod common;
#[path = "ir/coverage.rs"]
mod coverage;
#[path = "ir/errors.rs"]
mod errors;
#[path = "ir/figure4.rs"]
mod figure4;
#[path = "ir/interning.rs"]
mod interning;
#[path = "ir/refcounts.rs"]
mod refcounts;
