//! Pieces of the `diffuse` command line.

pub mod grid;
pub mod launch;
