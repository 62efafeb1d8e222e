//! Calling dtype-generic code on a run-time [`DType`](crate::DType).

/// Expands `$body` with `$t` bound to the Rust type of `$dtype` when `$dtype` is one of the
/// listed `DType` variants (each paired with its Rust type); evaluates `$otherwise` for the
/// other dtypes (no `else` when the list names them all).
#[macro_export]
macro_rules! with_dtypes {
    ($dtype:expr, [$($variant:ident => $rust:ty),* $(,)?], $t:ident => $body:expr $(, else $otherwise:expr)?) => {
        match $dtype {
            $($crate::DType::$variant => {
                type $t = $rust;
                $body
            })*
            $(_ => $otherwise,)?
        }
    };
}

/// Expands `$body` once per element type with `$t` bound to the Rust type of `$dtype`.
#[macro_export]
macro_rules! with_element_type {
    ($dtype:expr, $t:ident => $body:expr) => {
        $crate::with_dtypes!(
            $dtype,
            [
                F64 => f64, F32 => f32, I64 => i64, I32 => i32, Bool => bool,
                C64 => $crate::Complex32, C128 => $crate::Complex64
            ],
            $t => $body
        )
    };
}
