//! `diffuse-array`: NumPy-like distributed arrays whose operations are index tasks on the
//! diffuse IR. Depends only on `diffuse-ir`.
//!
//! In progress (issue #3): so far the partitioner that picks each operation's launch domain
//! from the array's shape and the processor count. Arrays and their operations come next.

#![warn(missing_docs)]

mod partitioner;

pub use partitioner::{blocks_fit, Partitioner};
