//! Pieces of the `diffuse` command line.

pub mod grid;
