//! Floating-point exceptions of the library's kernels as the backend records them for
//! NumPy's `errstate`: error-free chains of `erf`, `exp` and `log` (the JIT's polynomial
//! prelude) raise nothing compiled, so their points stay compiled instead of running again
//! natively; integer division by zero raises `divide`, as NumPy reports it.

use std::sync::Arc;

use diffuse::backend::point::fp::FpFlags;
use diffuse::{Backend, EmbeddedBackend, EmbeddedConfig, FusionConfig, Runtime, RuntimeConfig};
use diffuse_array::{binary, Array, ArrayContext, BinaryOp};
use diffuse_ir::Context;

/// A context over a fresh two-processor backend (JIT-compiling fused kernels when `jit`),
/// and the backend.
fn setup(jit: bool, fusion: FusionConfig) -> (Arc<EmbeddedBackend>, ArrayContext) {
    let backend = Arc::new(
        EmbeddedBackend::new(EmbeddedConfig {
            procs: Some(2),
            inline_bytes: 0,
            ..Default::default()
        })
        .expect("the embedded backend starts"),
    );
    let runtime = Runtime::new(
        backend.clone(),
        RuntimeConfig {
            fusion,
            jit: jit.then(|| Arc::new(diffuse_jit::Jit::new())),
            gpu: None,
            placement: None,
            min_block: 1,
        },
    );
    (backend, ArrayContext::new(Context::new(Arc::new(runtime))))
}

#[test]
fn error_free_transcendental_chains_stay_compiled() {
    let (backend, cx) = setup(true, FusionConfig::default());
    let n = 4096;
    // erf over both of its branches, 0 exactly and past its clamp at 6.
    let x: Vec<f64> = (0..n).map(|i| -8.0 + 16.0 * i as f64 / n as f64).collect();
    let positive: Vec<f64> = (0..n).map(|i| 0.01 + i as f64).collect();
    let x = Array::from_vec(&cx, &[n as i64], x).unwrap();
    let positive = Array::from_vec(&cx, &[n as i64], positive).unwrap();
    let run = || {
        let e = (x.erf().unwrap() * 0.5).unwrap();
        let l = (positive.log().unwrap() + e).unwrap();
        let r = (l + (&x * 0.25).unwrap().exp().unwrap()).unwrap();
        r.to_vec::<f64>().unwrap()
    };
    for _ in 0..2 {
        run();
        // One fused task per run, every point of it compiled (none ran again natively).
        let stats = backend.stats();
        assert!(stats.compiled_points > 0, "nothing compiled: {stats:?}");
        assert_eq!(stats.compiled_points, stats.points_executed, "{stats:?}");
    }
    assert_eq!(backend.take_fp_errors(), Vec::new());
}

#[test]
fn integer_division_by_zero_raises_divide() {
    let (backend, cx) = setup(false, FusionConfig::off());
    let a = Array::from_vec(&cx, &[8], (0..8i64).collect()).unwrap();
    let zero = Array::from_vec(&cx, &[8], vec![0i64; 8]).unwrap();
    for (name, op) in [
        ("floor_divide", BinaryOp::FloorDivide),
        ("remainder", BinaryOp::Remainder),
    ] {
        let result = binary(op, &a, &zero).unwrap();
        assert_eq!(result.to_vec::<i64>().unwrap(), vec![0; 8]);
        let raised = backend.take_fp_errors();
        assert_eq!(raised.len(), 1, "{name}: {raised:?}");
        assert!(
            raised[0].0.starts_with(&format!("array.{name}.")),
            "{raised:?}"
        );
        assert_eq!(raised[0].1, FpFlags::DIVIDE, "{name}");
    }
    let one = Array::from_vec(&cx, &[8], vec![1i64; 8]).unwrap();
    binary(BinaryOp::FloorDivide, &a, &one)
        .unwrap()
        .to_vec::<i64>()
        .unwrap();
    assert_eq!(backend.take_fp_errors(), Vec::new());
}
