//! `diffuse-fusion`: analyses over the window of buffered index tasks (Diffuse paper §4–5):
//! the four fusion constraints, the longest fusible prefix, fused-task construction,
//! temporary elimination and memoization. Depends only on `diffuse-ir`.
//!
//! Empty until the fusion issue (#4) lands; until then the runtime executes every task as
//! submitted.
