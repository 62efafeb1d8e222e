//! Creating arrays: constants, ranges and seeded random numbers.
//!
//! Ranges and random numbers are computed by tasks from each element's linear index, so the
//! values do not depend on how many processors fill them: `random` with a given seed gives the
//! same array on 1 processor or 64 (a counter-based generator, not a sequential stream).

use diffuse_ir::{DType, IndexTask, Privilege, Scalar, Tuple};

use crate::array::Array;
use crate::context::ArrayContext;
use crate::element::{is_float, with_numeric, Convert};
use crate::error::{ArrayError, ArrayResult};
use crate::kernels::for_each_out_row;
use crate::kinds::{kind, undefined, Kernel};
use crate::ops::elementwise::{assign, Operand};

/// A distribution for [`random`].
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Distribution {
    /// Uniform on `[low, high)`.
    Uniform {
        /// Inclusive lower bound.
        low: f64,
        /// Exclusive upper bound.
        high: f64,
    },
    /// Normal (Gaussian) with the given mean and standard deviation.
    Normal {
        /// The mean.
        mean: f64,
        /// The standard deviation.
        std: f64,
    },
}

/// A zero-filled array (false for bool).
pub fn zeros(cx: &ArrayContext, shape: &[i64], dtype: DType) -> ArrayResult {
    Array::fresh(cx, Tuple::shape(shape)?, dtype)
}

/// An array of `shape` with every element `value` (its dtype is the value's).
pub fn full(cx: &ArrayContext, shape: &[i64], value: impl Into<Scalar>) -> ArrayResult {
    let value = value.into();
    let out = Array::fresh(cx, Tuple::shape(shape)?, value.dtype())?;
    assign(&out, Operand::Scalar(value))?;
    Ok(out)
}

/// An array of ones of `dtype` (true for bool).
pub fn ones(cx: &ArrayContext, shape: &[i64], dtype: DType) -> ArrayResult {
    let one = match dtype {
        DType::F64 => Scalar::F64(1.0),
        DType::F32 => Scalar::F32(1.0),
        DType::I64 => Scalar::I64(1),
        DType::I32 => Scalar::I32(1),
        DType::Bool => Scalar::Bool(true),
        DType::C64 => Scalar::C64(diffuse_ir::Complex32::new(1.0, 0.0)),
        DType::C128 => Scalar::C128(diffuse_ir::Complex64::new(1.0, 0.0)),
    };
    full(cx, shape, one)
}

/// `start, start + step, ...` up to but excluding `stop` (NumPy's `arange`), as `dtype`.
pub fn arange(cx: &ArrayContext, start: f64, stop: f64, step: f64, dtype: DType) -> ArrayResult {
    let bad = |reason: String| ArrayError::BadArgument {
        op: "arange",
        reason,
    };
    if !(start.is_finite() && stop.is_finite() && step.is_finite()) || step == 0.0 {
        return Err(bad(format!(
            "start {start}, stop {stop} and step {step} must be finite, step non-zero"
        )));
    }
    if dtype == DType::Bool {
        return Err(ArrayError::UnsupportedDType {
            op: "arange",
            dtype,
            expected: "a numeric dtype",
        });
    }
    let len = ((stop - start) / step).ceil().max(0.0);
    if len > i64::MAX as f64 {
        return Err(bad(format!("{len} elements are too many")));
    }
    // NumPy fills with the difference of the first two values, not `step` itself.
    let delta = (start + step) - start;
    indexed(
        cx,
        Rule::Affine,
        &[len as i64],
        dtype,
        Scalar::F64(start),
        delta,
        f64::NAN,
    )
}

/// `num` evenly spaced values from `start` to `stop`, both included (NumPy's `linspace`), in a
/// float `dtype`.
pub fn linspace(cx: &ArrayContext, start: f64, stop: f64, num: i64, dtype: DType) -> ArrayResult {
    if !is_float(dtype) {
        return Err(ArrayError::UnsupportedDType {
            op: "linspace",
            dtype,
            expected: "a float dtype",
        });
    }
    if num < 0 {
        return Err(ArrayError::BadArgument {
            op: "linspace",
            reason: format!("num {num} is negative"),
        });
    }
    let step = if num > 1 {
        (stop - start) / (num - 1) as f64
    } else {
        0.0
    };
    // The last element is exactly `stop`, as in NumPy.
    let last = if num > 1 { stop } else { f64::NAN };
    indexed(
        cx,
        Rule::Affine,
        &[num],
        dtype,
        Scalar::F64(start),
        step,
        last,
    )
}

/// An array of `shape` drawn from `dist` with `seed`, in a float `dtype`. Element `i` (in
/// row-major order) depends only on `seed` and `i`.
pub fn random(
    cx: &ArrayContext,
    shape: &[i64],
    dist: Distribution,
    seed: u64,
    dtype: DType,
) -> ArrayResult {
    if !is_float(dtype) {
        return Err(ArrayError::UnsupportedDType {
            op: "random",
            dtype,
            expected: "a float dtype",
        });
    }
    let (rule, a, b) = match dist {
        Distribution::Uniform { low, high } => (Rule::Uniform, low, high),
        Distribution::Normal { mean, std } => (Rule::Normal, mean, std),
    };
    if !(a.is_finite() && b.is_finite()) {
        return Err(ArrayError::BadArgument {
            op: "random",
            reason: format!("distribution parameters {a} and {b} must be finite"),
        });
    }
    // The seed travels as the bits of an i64 so that all 64 of them survive.
    indexed(cx, rule, shape, dtype, Scalar::I64(seed as i64), a, b)
}

/// What an index-driven fill computes for the element at linear index `i`, from a first
/// parameter `p0` and two `f64` parameters `p1`, `p2`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Rule {
    /// `p0 + i * p1` (`p0` an `f64`); the last element is `p2` unless `p2` is NaN.
    Affine,
    /// Uniform on `[p1, p2)`, from the seed bits `p0` (an `i64`).
    Uniform,
    /// Normal with mean `p1` and standard deviation `p2`, from the seed bits `p0`.
    Normal,
}

impl Rule {
    fn name(self) -> &'static str {
        match self {
            Rule::Affine => "affine",
            Rule::Uniform => "random_uniform",
            Rule::Normal => "random_normal",
        }
    }
}

/// The splitmix64 finalizer: a bijective mix of 64 bits.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniform value in `[0, 1)` for counter `i` of stream `seed`.
fn uniform01(seed: u64, i: u64) -> f64 {
    let bits = mix64(mix64(seed).wrapping_add(i.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
    (bits >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A standard normal value for element `i` of stream `seed` (Box-Muller on two counters).
fn normal01(seed: u64, i: u64) -> f64 {
    let u1 = 1.0 - uniform01(seed, 2 * i);
    let u2 = uniform01(seed, 2 * i + 1);
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A native kernel filling argument 0 by `rule` from each element's linear index in its store.
fn indexed_kernel<T: Convert>(rule: Rule) -> impl Kernel {
    move |task| {
        let (p1, p2) = (task.scalar::<f64>(1)?, task.scalar::<f64>(2)?);
        let value: Box<dyn Fn(i64) -> f64> = match rule {
            Rule::Affine => {
                let (start, len) = (task.scalar::<f64>(0)?, task.store_shape(0)?.volume());
                Box::new(move |i| {
                    if i == len - 1 && !p2.is_nan() {
                        p2
                    } else {
                        start + i as f64 * p1
                    }
                })
            }
            Rule::Uniform => {
                let seed = task.scalar::<i64>(0)? as u64;
                Box::new(move |i| p1 + (p2 - p1) * uniform01(seed, i as u64))
            }
            Rule::Normal => {
                let seed = task.scalar::<i64>(0)? as u64;
                Box::new(move |i| p1 + p2 * normal01(seed, i as u64))
            }
        };
        let sub = task.sub_store(0)?;
        let strides = task.store_shape(0)?.row_major_strides();
        let dims = sub.dims();
        let mut out = task.write::<T>(0)?;
        for_each_out_row(&mut out, |row, lead| {
            let mut start = if dims == 0 { 0 } else { sub.lo[dims - 1] };
            for (d, &l) in lead.iter().enumerate() {
                start += (sub.lo[d] + l) * strides[d];
            }
            for (j, x) in row.iter_mut().enumerate() {
                *x = T::from_f64(value(start + j as i64));
            }
        });
        Ok(())
    }
}

/// A new array of `shape` filled by `rule` with parameters `p0`, `p1`, `p2`.
fn indexed(
    cx: &ArrayContext,
    rule: Rule,
    shape: &[i64],
    dtype: DType,
    p0: Scalar,
    p1: f64,
    p2: f64,
) -> ArrayResult {
    let out = Array::fresh(cx, Tuple::shape(shape)?, dtype)?;
    if out.is_empty() {
        return Ok(out);
    }
    let first = p0.dtype();
    let kind = kind(format!("array.{}.{dtype}", rule.name()), move |b| {
        let b = b
            .arg("out", dtype, Privilege::Write)
            .scalar(first)
            .scalar(DType::F64)
            .scalar(DType::F64)
            .elementwise();
        with_numeric!(dtype, T => b.register(indexed_kernel::<T>(rule)), else undefined(rule.name(), dtype))
    })?;
    let shape = out.shape();
    let launch = cx.launch_for(shape);
    let task = IndexTask::new(&kind, launch)
        .arg(
            out.store(),
            out.partition_for(shape, launch)?,
            Privilege::Write,
        )
        .scalar(p0)
        .scalar(p1)
        .scalar(p2);
    cx.submit(task)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{normal01, uniform01};

    #[test]
    fn generator_moments_are_plausible() {
        let n = 200_000u64;
        let mean_u = (0..n).map(|i| uniform01(7, i)).sum::<f64>() / n as f64;
        assert!((mean_u - 0.5).abs() < 0.01, "uniform mean {mean_u}");
        let z: Vec<f64> = (0..n).map(|i| normal01(7, i)).collect();
        let mean = z.iter().sum::<f64>() / n as f64;
        let var = z.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        assert!(
            mean.abs() < 0.01 && (var - 1.0).abs() < 0.02,
            "normal mean {mean} var {var}"
        );
        assert_ne!(
            uniform01(7, 0),
            uniform01(8, 0),
            "seeds give different streams"
        );
    }
}
