//! Calling dtype-generic code on a run-time [`DType`](diffuse_ir::DType).

/// Expands `$body` once per element type with `$t` bound to the Rust type of `$dtype`.
macro_rules! with_element_type {
    ($dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            diffuse_ir::DType::F64 => {
                type $t = f64;
                $body
            }
            diffuse_ir::DType::F32 => {
                type $t = f32;
                $body
            }
            diffuse_ir::DType::I64 => {
                type $t = i64;
                $body
            }
            diffuse_ir::DType::I32 => {
                type $t = i32;
                $body
            }
            diffuse_ir::DType::Bool => {
                type $t = bool;
                $body
            }
        }
    };
}

pub(crate) use with_element_type;
