//! Calling dtype-generic code on a run-time [`DType`](crate::DType).

/// Expands `$body` once per element type with `$t` bound to the Rust type of `$dtype`.
#[macro_export]
macro_rules! with_element_type {
    ($dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            $crate::DType::F64 => {
                type $t = f64;
                $body
            }
            $crate::DType::F32 => {
                type $t = f32;
                $body
            }
            $crate::DType::I64 => {
                type $t = i64;
                $body
            }
            $crate::DType::I32 => {
                type $t = i32;
                $body
            }
            $crate::DType::Bool => {
                type $t = bool;
                $body
            }
        }
    };
}
