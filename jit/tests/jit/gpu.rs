//! The GPU path: PTX generation everywhere, launches where a GPU is present.
//!
//! Compilation (PTX for sm_90 and the host code that launches it, JIT-compiled with the GPU
//! runtime functions resolved) needs no GPU and is checked on every machine. Launches need
//! one: without a GPU those tests print `skipped: no GPU (<reason>)` and return, after
//! checking that a launch reports the missing GPU as an error.

use std::sync::Arc;

use diffuse_ir::{
    element_type, tensor_type, DType, KernelError, MlirGenerator, MlirSignature, Privilege, Scalar,
    TaskKind,
};
use diffuse_jit::{
    gpu_available, GpuError, GpuJit, GpuTarget, Jit, JitError, KernelSignature, KernelStep, MemRef,
    PtxModule,
};

use super::{add_then_scale, memref, param};

/// `out = f(x)` element-wise, `f` given as MLIR statements from `%a` to `%y`.
struct Unary {
    body: &'static str,
}

impl MlirGenerator for Unary {
    fn generate(&self, symbol: &str, sig: &MlirSignature<'_>) -> Result<String, KernelError> {
        let out = &sig.args[1];
        let (t, f) = (tensor_type(out), element_type(out.dtype));
        let id = format!(
            "affine_map<({}) -> ({})>",
            (0..out.rank)
                .map(|d| format!("d{d}"))
                .collect::<Vec<_>>()
                .join(", "),
            (0..out.rank)
                .map(|d| format!("d{d}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let iters = vec!["\"parallel\""; out.rank].join(", ");
        Ok(format!(
            "func.func private @{symbol}(%x: {t}, %out: {t}) -> {t} {{
  %r = linalg.generic {{indexing_maps = [{id}, {id}], iterator_types = [{iters}]}}
      ins(%x : {t}) outs(%out : {t}) {{
  ^bb0(%a: {f}, %o: {f}):
    {}
    linalg.yield %y : {f}
  }} -> {t}
  return %r : {t}
}}",
            self.body.replace("{f}", f)
        ))
    }
}

fn unary_kind(name: &str, body: &'static str) -> Arc<TaskKind> {
    if let Some(k) = TaskKind::lookup(name) {
        return k;
    }
    TaskKind::builder(name)
        .arg("x", DType::F64, Privilege::Read)
        .arg("out", DType::F64, Privilege::Write)
        .elementwise()
        .mlir(Arc::new(Unary { body }))
        .register(|_| Ok(()))
        .expect("registering a test kind")
}

/// `out = erf(exp(-x^2)) + log(1 + x^2) + sqrt(x^2) + floor(4 |x|)`: exp, erf, log, sqrt,
/// absf and floor on the device.
const GAUSS: &str = "%x2 = arith.mulf %a, %a : {f}
    %n = arith.negf %x2 : {f}
    %e = math.exp %n : {f}
    %r = math.erf %e : {f}
    %one = arith.constant 1.0 : {f}
    %p = arith.addf %x2, %one : {f}
    %l = math.log %p : {f}
    %s = math.sqrt %x2 : {f}
    %abs = math.absf %a : {f}
    %four = arith.constant 4.0 : {f}
    %q = arith.mulf %abs, %four : {f}
    %fl = math.floor %q : {f}
    %rl = arith.addf %r, %l : {f}
    %rls = arith.addf %rl, %s : {f}
    %y = arith.addf %rls, %fl : {f}";

/// `t = a + b` (b a broadcast row, as in `add_then_scale`), then `out = GAUSS(t)`: a
/// temporary, broadcasting and transcendental math in one fused kernel.
fn add_then_gauss() -> KernelSignature {
    let mut sig = add_then_scale();
    sig.name = "add+gauss".into();
    sig.steps[1] = KernelStep {
        kind: unary_kind("jit_test.gauss", GAUSS),
        bindings: vec![(2, Privilege::Read), (3, Privilege::Write)],
    };
    sig
}

/// `out = sin(x)`: no device definition of `sin`.
fn sine() -> KernelSignature {
    KernelSignature {
        name: "sin".into(),
        steps: vec![KernelStep {
            kind: unary_kind("jit_test.sin", "%y = math.sin %a : {f}"),
            bindings: vec![(0, Privilege::Read), (1, Privilege::Write)],
        }],
        params: vec![
            param(0, Privilege::Read, false, 0),
            param(1, Privilege::Write, false, 0),
        ],
    }
}

fn sm90() -> GpuJit {
    GpuJit::with_target(GpuTarget::for_chip("sm_90"))
}

/// Checks what every kernel's PTX must say; returns the number of global stores.
fn check_sm90(modules: &[PtxModule]) -> usize {
    assert!(!modules.is_empty(), "no GPU module");
    let mut stores = 0;
    for m in modules {
        let ptx = &m.ptx;
        assert!(ptx.contains(".version 8.0"), "{}:\n{ptx}", m.name);
        assert!(ptx.contains(".target sm_90"), "{}:\n{ptx}", m.name);
        assert!(ptx.contains(".address_size 64"), "{}:\n{ptx}", m.name);
        assert!(ptx.contains(".visible .entry"), "{}:\n{ptx}", m.name);
        assert!(
            !ptx.contains(".extern"),
            "unresolved call in {}:\n{ptx}",
            m.name
        );
        stores += ptx.matches("st.global").count();
    }
    stores
}

#[test]
fn ptx_for_a_fused_kernel_with_a_temporary_and_broadcasting() {
    let jit = sm90();
    let modules = jit
        .ptx_for(&add_then_scale())
        .expect("compiles for the GPU");
    // Both constituents fused into one loop nest, hence one kernel, and the temporary never
    // reaches memory: the kernel stores only `out`, once per element.
    assert_eq!(modules.len(), 1, "{modules:#?}");
    assert_eq!(check_sm90(&modules), 1, "{}", modules[0].ptx);
    let ptx = &modules[0].ptx;
    assert_eq!(ptx.matches(".entry").count(), 1, "{ptx}");
    // The scalar factor is a kernel parameter; the math is double precision.
    assert!(
        ptx.contains("mul.rn.f64") || ptx.contains("mul.f64"),
        "{ptx}"
    );
    // Cached: the same kernel object for the same signature.
    let k1 = jit.kernel(&add_then_scale()).expect("cached");
    let k2 = jit.kernel(&add_then_scale()).expect("cached");
    assert!(Arc::ptr_eq(&k1, &k2));
    assert!(k1.compile_seconds() > 0.0);
}

#[test]
fn ptx_for_exp_erf_log_and_sqrt_is_self_contained() {
    let modules = sm90()
        .ptx_for(&add_then_gauss())
        .expect("compiles for the GPU");
    assert_eq!(modules.len(), 1, "{modules:#?}");
    assert_eq!(check_sm90(&modules), 1, "{}", modules[0].ptx);
    let ptx = &modules[0].ptx;
    // sqrt, abs and floor are single instructions; exp, erf and log are inlined polynomials
    // (no libdevice calls: `check_sm90` refused any `.extern`), with fused multiply-adds.
    assert!(ptx.contains("sqrt.rn.f64"), "{ptx}");
    assert!(ptx.contains("abs.f64"), "{ptx}");
    assert!(ptx.contains("cvt.rmi.f64.f64"), "{ptx}");
    assert!(ptx.contains("fma.rn.f64"), "{ptx}");
    assert!(!ptx.contains("call"), "{ptx}");
}

#[test]
fn kernels_the_gpu_path_cannot_run_are_typed_errors() {
    let jit = sm90();
    match jit.kernel(&sine()) {
        Err(JitError::Unsupported { reason, .. }) => {
            assert!(reason.contains("sin"), "{reason}")
        }
        other => panic!(
            "expected sin to be unsupported, got {:?}",
            other.map(|_| ())
        ),
    }
    // A reduction leaves a loop on the host: refused rather than run on device pointers.
    let reduction = super::sum_exp();
    match jit.kernel(&reduction) {
        Err(JitError::Unsupported { reason, .. }) => {
            assert!(reason.contains("host code"), "{reason}")
        }
        other => panic!(
            "expected the reduction to be refused, got {:?}",
            other.map(|_| ())
        ),
    }
    // Failures are cached like successes.
    assert!(jit.kernel(&sine()).is_err());
}

#[test]
fn gpu_kernels_can_be_shared_between_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<GpuJit>();
    shared::<diffuse_jit::GpuKernel>();
    shared::<GpuError>();
}

#[test]
fn targets_follow_the_chip() {
    assert_eq!(GpuTarget::for_chip("sm_90").features, "+ptx80");
    assert_eq!(GpuTarget::for_chip("sm_80").features, "+ptx70");
    assert_eq!(GpuTarget::for_chip("sm_100").features, "+ptx86");
    let detected = GpuTarget::detect();
    match gpu_available() {
        Ok(info) => assert_eq!(detected.chip, info.chip()),
        Err(_) => assert_eq!(detected.chip, "sm_90"),
    }
}

/// A deterministic pseudo-random sequence in [lo, hi).
fn random(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + (hi - lo) * (s >> 11) as f64 / (1u64 << 53) as f64
        })
        .collect()
}

/// Runs `sig` (the shape of `add_then_scale`: a, a broadcast row b, a temporary, out) on the
/// CPU and, if there is one, on the GPU, on `rows x cols` random data with `out` a block of
/// a wider buffer; returns (cpu out, gpu out or the skip reason), each the whole buffer.
fn cpu_and_gpu(
    sig: &KernelSignature,
    rows: usize,
    cols: usize,
    scalars: &[Scalar],
) -> (Vec<f64>, Result<Vec<f64>, String>) {
    let pitch = cols + 3;
    let mut a = random(rows * cols, 1, -2.0, 2.0);
    let mut b = random(cols, 2, -1.0, 1.0);
    let full = [rows as i64, cols as i64];
    let row = [1, cols as i64];
    let dense = [cols as i64, 1];
    let strided = [pitch as i64, 1];
    let run = |out: &mut Vec<f64>, a: &mut Vec<f64>, b: &mut Vec<f64>, gpu: Option<&GpuJit>| {
        let memrefs = [
            memref(a, &full, &dense),
            memref(b, &row, &dense),
            MemRef {
                ptr: std::ptr::null_mut(),
                sizes: &full,
                strides: &dense,
            },
            memref(out, &full, &strided),
        ];
        match gpu {
            None => {
                let k = Jit::new().kernel(sig).expect("compiles for the CPU");
                // SAFETY: the buffers match the sizes and strides.
                unsafe { k.call(&memrefs, scalars) }.map_err(|e| e.to_string())
            }
            Some(jit) => {
                let k = jit.kernel(sig).expect("compiles for the GPU");
                // SAFETY: as above.
                unsafe { k.launch(&memrefs, scalars) }.map_err(|e| e.to_string())
            }
        }
    };
    let mut cpu = vec![-1.0; rows * pitch];
    run(&mut cpu, &mut a, &mut b, None).expect("the CPU kernel runs");
    let gpu = match gpu_available() {
        Err(reason) => Err(reason),
        Ok(_) => {
            let mut out = vec![-1.0; rows * pitch];
            run(&mut out, &mut a, &mut b, Some(&GpuJit::new())).expect("the GPU kernel runs");
            Ok(out)
        }
    };
    (cpu, gpu)
}

fn assert_close(cpu: &[f64], gpu: &[f64], tolerance: f64) {
    assert_eq!(cpu.len(), gpu.len());
    for (i, (&c, &g)) in cpu.iter().zip(gpu).enumerate() {
        let scale = c.abs().max(1.0);
        assert!(
            (c - g).abs() <= tolerance * scale,
            "element {i}: CPU {c:e}, GPU {g:e}"
        );
    }
}

#[test]
fn gpu_launch_of_a_fused_kernel_matches_the_cpu() {
    let (rows, cols) = (300, 517);
    let (cpu, gpu) = cpu_and_gpu(&add_then_scale(), rows, cols, &[Scalar::F64(3.0)]);
    // Outside the sub-store (the last 3 columns of each row) nothing is written.
    for i in 0..rows {
        for j in cols..cols + 3 {
            assert_eq!(cpu[i * (cols + 3) + j], -1.0);
        }
    }
    match gpu {
        Err(reason) => println!("skipped: no GPU ({reason})"),
        // (x + b) * x * s: the same two roundings on both sides, unless the GPU fuses the
        // multiply-add; 1e-12 relative covers that.
        Ok(gpu) => assert_close(&cpu, &gpu, 1e-12),
    }
}

#[test]
fn gpu_launch_of_exp_erf_log_sqrt_matches_the_cpu() {
    let (cpu, gpu) = cpu_and_gpu(&add_then_gauss(), 64, 1000, &[]);
    match gpu {
        Err(reason) => println!("skipped: no GPU ({reason})"),
        Ok(gpu) => assert_close(&cpu, &gpu, 1e-12),
    }
}

#[test]
fn without_a_gpu_a_launch_is_an_error_not_a_crash() {
    let Err(reason) = gpu_available() else {
        println!("skipped: a GPU is present (the launch tests run instead)");
        return;
    };
    assert!(!reason.is_empty());
    let kernel = sm90().kernel(&add_then_scale()).expect("compiles");
    let mut a = vec![1.0; 4];
    let mut b = vec![1.0; 2];
    let mut out = vec![0.0; 4];
    let (full, row, dense) = ([2i64, 2], [1i64, 2], [2i64, 1]);
    let memrefs = [
        memref(&mut a, &full, &dense),
        memref(&mut b, &row, &dense),
        MemRef {
            ptr: std::ptr::null_mut(),
            sizes: &full,
            strides: &dense,
        },
        memref(&mut out, &full, &dense),
    ];
    // SAFETY: the buffers match the sizes and strides.
    match unsafe { kernel.launch(&memrefs, &[Scalar::F64(2.0)]) } {
        Err(GpuError::Unavailable(r)) => assert_eq!(r, reason),
        other => panic!("expected Unavailable, got {other:?}"),
    }
    // Bad arguments are refused before the device is touched.
    // SAFETY: nothing is dereferenced: the call fails on the argument count.
    match unsafe { kernel.launch(&memrefs[..3], &[Scalar::F64(2.0)]) } {
        Err(GpuError::Arguments { .. }) => {}
        other => panic!("expected an argument error, got {other:?}"),
    }
    assert_eq!(out, vec![0.0; 4]);
    println!("no GPU ({reason}): a launch reports GpuError::Unavailable");
}
