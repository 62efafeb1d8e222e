//! Integration tests of `diffuse-fusion`: the paper's worked examples (Figures 2, 8 and 10),
//! one minimal case per fusion constraint (Figure 7) with its fusible control, temporaries
//! (the Definition of §5.1), fused-task signatures (§4.2.2), memoization (§5.2), the stages of
//! one-point groups, and property tests of the planner against a brute-force
//! reimplementation of the constraints.
//!
//! One test target; the modules live under `tests/fusion/`. Nothing here executes a task:
//! tasks are built and handed to the analyses, never submitted.

// `IrError` carries its shapes inline (the IR crate allows this lint for the same reason).
#![allow(clippy::result_large_err)]

#[path = "fusion/common.rs"]
mod common;
#[path = "fusion/constraints.rs"]
mod constraints;
#[path = "fusion/cut.rs"]
mod cut;
#[path = "fusion/figures.rs"]
mod figures;
#[path = "fusion/fused.rs"]
mod fused;
#[path = "fusion/memo.rs"]
mod memo;
#[path = "fusion/property.rs"]
mod property;
#[path = "fusion/reorder.rs"]
mod reorder;
#[path = "fusion/scalars.rs"]
mod scalars;
#[path = "fusion/stages.rs"]
mod stages;
#[path = "fusion/temporaries.rs"]
mod temporaries;
