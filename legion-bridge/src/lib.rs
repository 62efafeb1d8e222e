//! `diffuse-legion`: executes diffuse's launch plans on the Legion runtime (from the
//! `legate` wheel, installed by `scripts/legion-setup.sh`).
//!
//! Stores are logical regions (one field space per dtype, one index space per shape),
//! tilings are restricted partitions cached per (index space, partition), `Replicate` is the
//! whole region, non-identity projections go through one registered projection functor,
//! small reductions over several points are folded by diffuse (each point writes a row of
//! partials, one point folds them in order), larger ones use Legion's built-in reduction
//! operators, and every launch plan is one index launch of diffuse's point task (and a fold), which runs the plan's point with the same executor as the
//! embedded backend. A C++ `DefaultMapper` subclass places every point and instance as the
//! runtime's placement (Mapple) decided. See `ARCHITECTURE.md`.
//!
//! Legion is loaded at run time: without it the crate still builds and
//! [`LegionBackend::start`] fails with a message naming what is missing.
#![warn(missing_docs)]
// Backends return `diffuse_ir::IrError`, which carries shapes inline by design (see the IR).
#![allow(clippy::result_large_err)]

mod capabilities;
mod cluster;
// The checks and flag helpers serve the build with Legion; without it only the settings do.
#[cfg_attr(not(legion), allow(dead_code))]
mod config;

pub use capabilities::CAPABILITIES;
pub use cluster::Cluster;
pub use config::{is_legion_flag, LegionConfig};

#[cfg(legion)]
mod backend;
#[cfg(legion)]
mod driver;
#[cfg(legion)]
mod ffi;
#[cfg(legion)]
mod geometry;
#[cfg(legion)]
mod gpu_point;
#[cfg(legion)]
mod launch;
#[cfg(legion)]
mod library;
#[cfg(legion)]
mod machine;
#[cfg(legion)]
mod mapped_point;
#[cfg(legion)]
mod mapper;
#[cfg(legion)]
mod partials;
#[cfg(legion)]
mod point_task;
#[cfg(legion)]
mod process;
#[cfg(legion)]
mod redops;
#[cfg(legion)]
mod shared;
#[cfg(all(legion, test))]
mod test_plans;
#[cfg(legion)]
mod traces;
#[cfg(legion)]
mod traffic;

#[cfg(legion)]
pub use backend::LegionBackend;
#[cfg(legion)]
pub use process::shutdown;
#[cfg(legion)]
pub use shared::PointRecord;

#[cfg(not(legion))]
mod unavailable;
#[cfg(not(legion))]
pub use unavailable::{shutdown, LegionBackend, PointRecord};
