//! Operators on values: integer and tuple arithmetic, comparisons, negation.

use std::cmp::Ordering;

use super::error::EvalErrorKind;
use super::value::Value;
use crate::ast::BinaryOp;

/// `a / b` rounded towards negative infinity (Python's `//`); `None` on overflow. `b != 0`.
fn floor_div(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    let r = a.checked_rem(b)?;
    if r != 0 && ((r < 0) != (b < 0)) {
        q.checked_sub(1)
    } else {
        Some(q)
    }
}

/// `a mod b` with the sign of `b` (Python's `%`), so `floor_div(a, b) * b + floor_mod(a, b)
/// == a`; `None` on overflow. `b != 0`.
fn floor_mod(a: i64, b: i64) -> Option<i64> {
    if b == -1 {
        return Some(0);
    }
    let r = a.checked_rem(b)?;
    if r != 0 && ((r < 0) != (b < 0)) {
        r.checked_add(b)
    } else {
        Some(r)
    }
}

/// Integer arithmetic with overflow and division-by-zero checks.
fn int_arith(op: BinaryOp, a: i64, b: i64) -> Result<i64, EvalErrorKind> {
    let sym = op.symbol();
    let overflow = || EvalErrorKind::Overflow { op: sym };
    match op {
        BinaryOp::Add => a.checked_add(b).ok_or_else(overflow),
        BinaryOp::Sub => a.checked_sub(b).ok_or_else(overflow),
        BinaryOp::Mul => a.checked_mul(b).ok_or_else(overflow),
        BinaryOp::Div | BinaryOp::Rem if b == 0 => Err(EvalErrorKind::DivisionByZero { op: sym }),
        BinaryOp::Div => floor_div(a, b).ok_or_else(overflow),
        BinaryOp::Rem => floor_mod(a, b).ok_or_else(overflow),
        _ => Err(EvalErrorKind::TypeMismatch {
            op: sym,
            left: "int",
            right: "int",
        }),
    }
}

/// `l op r` for the arithmetic operators: on integers, elementwise on tuples of the same
/// length, and between a tuple and an integer (the integer applies to every element). Nested
/// tuples recurse.
pub(super) fn arith(op: BinaryOp, l: &Value, r: &Value) -> Result<Value, EvalErrorKind> {
    match (l, r) {
        (Value::Int(a), Value::Int(b)) => int_arith(op, *a, *b).map(Value::Int),
        (Value::Tuple(xs), Value::Tuple(ys)) => {
            if xs.len() != ys.len() {
                return Err(EvalErrorKind::TupleLength {
                    op: op.symbol(),
                    left: xs.len(),
                    right: ys.len(),
                });
            }
            xs.iter()
                .zip(ys)
                .map(|(x, y)| arith(op, x, y))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Tuple)
        }
        (Value::Tuple(xs), Value::Int(_)) => xs
            .iter()
            .map(|x| arith(op, x, r))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Tuple),
        (Value::Int(_), Value::Tuple(ys)) => ys
            .iter()
            .map(|y| arith(op, l, y))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Tuple),
        _ => Err(mismatch(op, l, r)),
    }
}

fn mismatch(op: BinaryOp, l: &Value, r: &Value) -> EvalErrorKind {
    EvalErrorKind::TypeMismatch {
        op: op.symbol(),
        left: l.type_name(),
        right: r.type_name(),
    }
}

/// The comparison operators. `==`/`!=` compare two values of the same type structurally;
/// `<`, `<=`, `>`, `>=` compare integers, or tuples of integers lexicographically.
pub(super) fn compare(op: BinaryOp, l: &Value, r: &Value) -> Result<Value, EvalErrorKind> {
    match op {
        BinaryOp::Eq | BinaryOp::Ne => {
            if std::mem::discriminant(l) != std::mem::discriminant(r) {
                return Err(mismatch(op, l, r));
            }
            Ok(Value::Bool((l == r) == (op == BinaryOp::Eq)))
        }
        _ => {
            let ord = match (l, r) {
                (Value::Int(a), Value::Int(b)) => a.cmp(b),
                (Value::Tuple(_), Value::Tuple(_)) => match (l.as_ints(), r.as_ints()) {
                    (Some(a), Some(b)) => a.cmp(&b),
                    _ => return Err(mismatch(op, l, r)),
                },
                _ => return Err(mismatch(op, l, r)),
            };
            let holds = match op {
                BinaryOp::Lt => ord == Ordering::Less,
                BinaryOp::Le => ord != Ordering::Greater,
                BinaryOp::Gt => ord == Ordering::Greater,
                _ => ord != Ordering::Less,
            };
            Ok(Value::Bool(holds))
        }
    }
}

/// `-v` on an integer, elementwise on a tuple.
pub(super) fn negate(v: &Value) -> Result<Value, EvalErrorKind> {
    match v {
        Value::Int(a) => a
            .checked_neg()
            .map(Value::Int)
            .ok_or(EvalErrorKind::Overflow { op: "-" }),
        Value::Tuple(xs) => xs
            .iter()
            .map(negate)
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Tuple),
        other => Err(EvalErrorKind::WrongType {
            context: "operand of unary `-`".to_string(),
            expected: "int or tuple".to_string(),
            found: other.type_name(),
        }),
    }
}

/// The truth of a condition: a `bool`, or an `int` (non-zero is true).
pub(super) fn truthy(v: &Value, context: &str) -> Result<bool, EvalErrorKind> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::Int(i) => Ok(*i != 0),
        other => Err(EvalErrorKind::WrongType {
            context: context.to_string(),
            expected: "bool or int".to_string(),
            found: other.type_name(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_semantics() {
        assert_eq!(floor_div(7, 2), Some(3));
        assert_eq!(floor_div(-7, 2), Some(-4));
        assert_eq!(floor_mod(-7, 2), Some(1));
        assert_eq!(floor_mod(7, -2), Some(-1));
        assert_eq!(floor_div(i64::MIN, -1), None);
        assert_eq!(floor_mod(i64::MIN, -1), Some(0));
    }
}
