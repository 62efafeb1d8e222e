//! Scalar work (arithmetic on 0-d arrays, as solvers compute `alpha = rr / pq`) fused into
//! the element-wise launch that consumes it compiles with that launch's loop nest, runs at
//! every point, and gives the unfused results bit for bit.

use std::sync::Arc;

use diffuse_array::{binary, Array, ArrayContext, BinaryOp};

use crate::{iota, R};

/// A context on 2 processors, fusing with the default window and compiling through `jit`
/// (or running native kernels unfused).
fn context(fused: bool, jit: Option<Arc<diffuse_jit::Jit>>) -> ArrayContext {
    let runtime = diffuse::RuntimeConfig::default();
    ArrayContext::new(
        diffuse::embedded_with(
            diffuse::EmbeddedConfig {
                procs: Some(2),
                ..Default::default()
            },
            diffuse::RuntimeConfig {
                fusion: if fused {
                    runtime.fusion
                } else {
                    diffuse::FusionConfig::off()
                },
                jit,
                min_block: 1,
                ..runtime
            },
        )
        .expect("the embedded backend starts"),
    )
}

/// `y = x * (2 a + b) + x`, three times with new 0-d operands, then `y`'s elements.
fn program(c: &ArrayContext) -> Result<Vec<f64>, diffuse_array::ArrayError> {
    let x = iota(c, &[64])?;
    let mut y = x.copy()?;
    for k in 0..3 {
        let a = Array::from_vec(c, &[], vec![1.25 + f64::from(k)])?;
        let b = Array::from_vec(c, &[], vec![-0.5])?;
        let s = ((&a * 2.0)? + &b)?;
        y = ((&y * &s)? + &x)?;
    }
    y.to_vec::<f64>()
}

#[test]
fn scalar_work_compiles_with_the_launch_that_consumes_it() -> R {
    let want = program(&context(false, None))?;
    let jit = Arc::new(diffuse_jit::Jit::new());
    let got = program(&context(true, Some(jit.clone())))?;
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&got), bits(&want));
    let stats = jit.stats();
    assert!(stats.kernels_compiled > 0, "{stats:?}");
    assert_eq!(stats.compile_failures, 0, "{stats:?}");
    Ok(())
}

/// Scalar work after a step that stays in the loop and writes what it reads is not hoisted
/// before the loop: `p0 = -(p0 + min(-0.25, p0))` (the assignment writes `p0` in the loop),
/// then `p2[0:4] = -(-p0)` must read the new `p0` (regression: it read the old one).
#[test]
fn scalar_work_reading_a_value_written_before_it_sees_the_write() -> R {
    let run = |fused: bool,
               jit: Option<Arc<diffuse_jit::Jit>>|
     -> Result<Vec<f64>, diffuse_array::ArrayError> {
        let c = context(fused, jit);
        let p0 = Array::from_vec(&c, &[], vec![0.0])?;
        let p2 = Array::from_vec(&c, &[5], vec![0.0; 5])?;
        let minimum = binary(BinaryOp::Minimum, -0.25, &p0)?;
        let sum = (&p0 + &minimum)?;
        p0.assign(&(-&sum)?)?;
        let negated = (-&p0)?;
        p2.slice(&diffuse_array::s![0..4])?.assign(&(-&negated)?)?;
        p2.to_vec::<f64>()
    };
    assert_eq!(run(false, None)?, vec![0.25, 0.25, 0.25, 0.25, 0.0]);
    let jit = Arc::new(diffuse_jit::Jit::new());
    assert_eq!(
        run(true, Some(jit.clone()))?,
        vec![0.25, 0.25, 0.25, 0.25, 0.0]
    );
    assert_eq!(jit.stats().compile_failures, 0);
    Ok(())
}
