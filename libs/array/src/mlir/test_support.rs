//! Helpers shared by the MLIR generators' unit tests: argument descriptions and checks on
//! the generated text.

use diffuse_ir::{DType, MlirArg, Privilege};

/// An argument of `dtype` and `rank` with `privilege` and no unit dimensions.
pub(super) fn arg(dtype: DType, rank: usize, privilege: Privilege) -> MlirArg {
    MlirArg {
        dtype,
        rank,
        privilege,
        unit_dims: 0,
    }
}

/// Fails, showing `text`, unless `text` contains every one of `needles`.
#[track_caller]
pub(super) fn assert_contains(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "no `{needle}` in:\n{text}");
    }
}

/// Fails, showing `text`, if `text` contains any of `needles`.
#[track_caller]
pub(super) fn assert_lacks(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(!text.contains(needle), "`{needle}` in:\n{text}");
    }
}
