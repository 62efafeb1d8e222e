//! `diffuse-mapper`: the Mapple mapping language (parser, evaluator, machine model and the
//! transformation primitives including `decompose`) that decides on which processor each point
//! task of a (fused) index task runs.
//!
//! Empty until the mapper issue (#6) lands; until then the embedded backend spreads the points
//! of a launch over its processors in contiguous blocks.
