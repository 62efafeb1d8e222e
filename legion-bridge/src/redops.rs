//! Legion's built-in reduction operators for diffuse's reductions.

use diffuse_ir::{DType, ReductionOp};

use crate::ffi::legion_reduction_op_id_t;

/// Legion's built-in reduction operator for `op` on `dtype` (`or`/`and` for bools); `None`
/// for the complex types, which the Legion build diffuse uses registers no operators for
/// (diffuse folds those reductions itself, [`crate::partials`]).
pub(crate) fn redop(op: ReductionOp, dtype: DType) -> Option<legion_reduction_op_id_t> {
    use crate::ffi::*;
    let id = match (dtype, op) {
        (DType::F64, ReductionOp::Sum) => legion_builtin_redop_t_LEGION_REDOP_SUM_FLOAT64,
        (DType::F64, ReductionOp::Prod) => legion_builtin_redop_t_LEGION_REDOP_PROD_FLOAT64,
        (DType::F64, ReductionOp::Min) => legion_builtin_redop_t_LEGION_REDOP_MIN_FLOAT64,
        (DType::F64, ReductionOp::Max) => legion_builtin_redop_t_LEGION_REDOP_MAX_FLOAT64,
        (DType::F32, ReductionOp::Sum) => legion_builtin_redop_t_LEGION_REDOP_SUM_FLOAT32,
        (DType::F32, ReductionOp::Prod) => legion_builtin_redop_t_LEGION_REDOP_PROD_FLOAT32,
        (DType::F32, ReductionOp::Min) => legion_builtin_redop_t_LEGION_REDOP_MIN_FLOAT32,
        (DType::F32, ReductionOp::Max) => legion_builtin_redop_t_LEGION_REDOP_MAX_FLOAT32,
        (DType::I64, ReductionOp::Sum) => legion_builtin_redop_t_LEGION_REDOP_SUM_INT64,
        (DType::I64, ReductionOp::Prod) => legion_builtin_redop_t_LEGION_REDOP_PROD_INT64,
        (DType::I64, ReductionOp::Min) => legion_builtin_redop_t_LEGION_REDOP_MIN_INT64,
        (DType::I64, ReductionOp::Max) => legion_builtin_redop_t_LEGION_REDOP_MAX_INT64,
        (DType::I32, ReductionOp::Sum) => legion_builtin_redop_t_LEGION_REDOP_SUM_INT32,
        (DType::I32, ReductionOp::Prod) => legion_builtin_redop_t_LEGION_REDOP_PROD_INT32,
        (DType::I32, ReductionOp::Min) => legion_builtin_redop_t_LEGION_REDOP_MIN_INT32,
        (DType::I32, ReductionOp::Max) => legion_builtin_redop_t_LEGION_REDOP_MAX_INT32,
        (DType::Bool, ReductionOp::Sum | ReductionOp::Max) => {
            legion_builtin_redop_t_LEGION_REDOP_OR_BOOL
        }
        (DType::Bool, ReductionOp::Prod | ReductionOp::Min) => {
            legion_builtin_redop_t_LEGION_REDOP_AND_BOOL
        }
        (DType::C64 | DType::C128, _) => return None,
    };
    Some(id as legion_reduction_op_id_t)
}
