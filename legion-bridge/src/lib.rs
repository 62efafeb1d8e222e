//! `diffuse-legion`: executes diffuse's index tasks on the Legion runtime (from the `legate`
//! wheel): stores as logical regions, tilings as restricted partitions, index tasks as index
//! launches, with a Mapple-driven mapper.
//!
//! Empty until the Legion backend issue lands; the embedded backend in the root crate is the
//! only backend so far.
