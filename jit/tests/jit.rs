//! The JIT end to end on hand-written kinds: composition, temporaries, broadcasting,
//! scalars, reductions, caching (in memory and on disk) and failures.

use std::sync::Arc;

use diffuse_ir::{
    element_type, tensor_type, DType, KernelError, MlirGenerator, MlirSignature, Privilege,
    ReductionOp, Scalar, TaskKind,
};
use diffuse_jit::{
    CpuKernel, Jit, JitError, KernelCache, KernelParam, KernelSignature, KernelStep, MemRef,
};

#[path = "jit/gpu.rs"]
mod gpu;

/// `out = f(x, y[, s])` over rank-r tensors with broadcasting of unit dims; with
/// `element`, also as an element function (the JIT's one-loop-nest route).
struct Binary {
    op: &'static str,
    scalar: bool,
    element: bool,
}

impl Binary {
    fn apply(&self, f: &str) -> String {
        if self.scalar {
            format!(
                "%u = {} %a, %b : {f}\n    %y = arith.mulf %u, %s : {f}",
                self.op
            )
        } else {
            format!("%y = {} %a, %b : {f}", self.op)
        }
    }
}

fn map(rank: usize, arg: &diffuse_ir::MlirArg, out: &diffuse_ir::MlirArg) -> String {
    let dims: Vec<String> = (0..rank).map(|d| format!("d{d}")).collect();
    let results: Vec<String> = (0..rank)
        .map(|d| {
            if arg.is_unit(d) && !out.is_unit(d) {
                "0".into()
            } else {
                format!("d{d}")
            }
        })
        .collect();
    format!(
        "affine_map<({}) -> ({})>",
        dims.join(", "),
        results.join(", ")
    )
}

impl MlirGenerator for Binary {
    fn generate(&self, symbol: &str, sig: &MlirSignature<'_>) -> Result<String, KernelError> {
        let [x, y, out] = sig.args else {
            return Err(KernelError {
                kind: symbol.into(),
                point: diffuse_ir::Point::splat(0, 0),
                reason: "three arguments expected".into(),
            });
        };
        let (t, f, r) = (tensor_type(out), element_type(out.dtype), out.rank);
        let scalar = if self.scalar {
            format!(", %s: {f}")
        } else {
            String::new()
        };
        let apply = if self.scalar {
            format!(
                "%u = {} %a, %b : {f}\n    %y = arith.mulf %u, %s : {f}",
                self.op
            )
        } else {
            format!("%y = {} %a, %b : {f}", self.op)
        };
        let iters = vec!["\"parallel\""; r].join(", ");
        Ok(format!(
            "func.func private @{symbol}(%x: {t}, %z: {t}, %out: {t}{scalar}) -> {t} {{
  %r = linalg.generic {{indexing_maps = [{}, {}, {}], iterator_types = [{iters}]}}
      ins(%x, %z : {t}, {t}) outs(%out : {t}) {{
  ^bb0(%a: {f}, %b: {f}, %o: {f}):
    {apply}
    linalg.yield %y : {f}
  }} -> {t}
  return %r : {t}
}}",
            map(r, x, out),
            map(r, y, out),
            map(r, out, out)
        ))
    }

    fn generate_element(
        &self,
        symbol: &str,
        sig: &MlirSignature<'_>,
    ) -> Option<Result<String, KernelError>> {
        if !self.element {
            return None;
        }
        let f = element_type(sig.args[2].dtype);
        let scalar = if self.scalar {
            format!(", %s: {f}")
        } else {
            String::new()
        };
        Some(Ok(format!(
            "func.func private @{symbol}(%a: {f}, %b: {f}, %o: {f}{scalar}) -> {f} {{\n    {}\n    return %y : {f}\n}}",
            self.apply(f)
        )))
    }
}

/// `acc += sum(x)` over a 1-d f64 tensor into a rank-0 accumulator.
struct Sum;

impl MlirGenerator for Sum {
    fn generate(&self, symbol: &str, _sig: &MlirSignature<'_>) -> Result<String, KernelError> {
        Ok(format!(
            "func.func private @{symbol}(%x: tensor<?xf64>, %acc: tensor<f64>) -> tensor<f64> {{
  %r = linalg.generic {{indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = [\"reduction\"]}} ins(%x : tensor<?xf64>) outs(%acc : tensor<f64>) {{
  ^bb0(%a: f64, %o: f64):
    %e = math.exp %a : f64
    %s = arith.addf %o, %e : f64
    linalg.yield %s : f64
  }} -> tensor<f64>
  return %r : tensor<f64>
}}"
        ))
    }
}

fn kind(name: &str, generator: Arc<dyn MlirGenerator>, scalar: bool) -> Arc<TaskKind> {
    if let Some(k) = TaskKind::lookup(name) {
        return k;
    }
    let mut b = TaskKind::builder(name)
        .arg("x", DType::F64, Privilege::Read)
        .arg("y", DType::F64, Privilege::Read)
        .arg("out", DType::F64, Privilege::Write)
        .elementwise()
        .mlir(generator);
    if scalar {
        b = b.scalar(DType::F64);
    }
    b.register(|_| Ok(())).expect("registering a test kind")
}

/// The kind `name` (registered on first use) with `f64` arguments `args` (name, privilege)
/// and `generator`'s MLIR.
fn generated_kind(
    name: &str,
    args: &[(&str, Privilege)],
    generator: Arc<dyn MlirGenerator>,
) -> Arc<TaskKind> {
    if let Some(k) = TaskKind::lookup(name) {
        return k;
    }
    let mut b = TaskKind::builder(name);
    for &(arg, privilege) in args {
        b = b.arg(arg, DType::F64, privilege);
    }
    b.mlir(generator)
        .register(|_| Ok(()))
        .expect("registering a test kind")
}

fn param(store: usize, privilege: Privilege, temporary: bool, unit_dims: u8) -> KernelParam {
    KernelParam {
        dtype: DType::F64,
        rank: 2,
        privilege,
        temporary,
        store,
        unit_dims,
    }
}

fn memref<'a>(data: &'a mut [f64], sizes: &'a [i64], strides: &'a [i64]) -> MemRef<'a> {
    MemRef {
        ptr: data.as_mut_ptr().cast(),
        sizes,
        strides,
    }
}

/// The constituent `kind` with its store arguments bound to `bindings` (parameter,
/// privilege).
fn step(kind: Arc<TaskKind>, bindings: &[(usize, Privilege)]) -> KernelStep {
    KernelStep {
        kind,
        bindings: bindings.to_vec(),
    }
}

/// `t = a + b` (b a broadcast row), `out = (t * a) * s`: t is a temporary.
fn add_then_scale() -> KernelSignature {
    let add = kind(
        "jit_test.add",
        Arc::new(Binary {
            op: "arith.addf",
            scalar: false,
            element: false,
        }),
        false,
    );
    let mul = kind(
        "jit_test.mul_s",
        Arc::new(Binary {
            op: "arith.mulf",
            scalar: true,
            element: false,
        }),
        true,
    );
    chained(
        "add+mul",
        [add, mul],
        Privilege::Write,
        vec![
            param(0, Privilege::Read, false, 0),
            param(1, Privilege::Read, false, 0b01),
            param(2, Privilege::ReadWrite, true, 0),
            param(3, Privilege::Write, false, 0),
        ],
    )
}

/// `t = first(a, b)` into parameter 2, then `second(t, a)` into parameter 3 with `last`
/// (parameters 0 to 3 given by `params`).
fn chained(
    name: &str,
    [first, second]: [Arc<TaskKind>; 2],
    last: Privilege,
    params: Vec<KernelParam>,
) -> KernelSignature {
    let (read, write) = (Privilege::Read, Privilege::Write);
    KernelSignature {
        name: name.into(),
        steps: vec![
            step(first, &[(0, read), (1, read), (2, write)]),
            step(second, &[(2, read), (0, read), (3, last)]),
        ],
        params,
    }
}

/// A call whose arguments do not fit the kernel is refused before any memory is touched
/// (the same checks guard GPU launches): wrong counts, ranks, scalar types, negative sizes,
/// and a null pointer for a parameter that is not a temporary.

#[test]
fn calls_that_do_not_fit_the_kernel_are_errors() {
    let jit = Jit::new();
    let kernel = jit.kernel(&add_then_scale()).expect("compiles");
    let mut data = vec![0.0; 4];
    let (full, strides) = ([2i64, 2], [2i64, 1]);
    let null = MemRef {
        ptr: std::ptr::null_mut(),
        sizes: &full,
        strides: &strides,
    };
    let one = MemRef {
        ptr: data.as_mut_ptr().cast(),
        sizes: &full,
        strides: &strides,
    };
    let flat = MemRef {
        sizes: &full[..1],
        strides: &strides[..1],
        ..one
    };
    let negative = MemRef {
        sizes: &[2, -1],
        ..one
    };
    let cases: [(Vec<MemRef<'_>>, Vec<Scalar>, &str); 5] = [
        (vec![one, one, null], vec![Scalar::F64(1.0)], "3 memrefs"),
        (
            vec![one, one, null, one],
            vec![Scalar::I64(1)],
            "scalar types",
        ),
        (vec![flat, one, null, one], vec![Scalar::F64(1.0)], "rank 1"),
        (
            vec![one, negative, null, one],
            vec![Scalar::F64(1.0)],
            "negative size",
        ),
        (
            vec![one, one, null, null],
            vec![Scalar::F64(1.0)],
            "null but not a temporary",
        ),
    ];
    for (memrefs, scalars, expected) in cases {
        // SAFETY: every non-null memref addresses `data`, large enough; the calls are refused.
        let err = unsafe { kernel.call(&memrefs, &scalars) }.expect_err(expected);
        assert!(err.contains(expected), "{err}");
    }
}

#[test]
fn a_fused_kernel_with_a_temporary_and_broadcasting_computes_the_reference() {
    let jit = Jit::new();
    let kernel = jit.kernel(&add_then_scale()).expect("compiles");
    let (rows, cols) = (5usize, 7usize);
    let mut a: Vec<f64> = (0..rows * cols).map(|i| i as f64 * 0.5).collect();
    let mut b: Vec<f64> = (0..cols).map(|j| 1.0 + j as f64).collect();
    // `out` is a sub-block of a wider buffer: row stride 9.
    let mut out = vec![-1.0; rows * 9];
    let full = [rows as i64, cols as i64];
    let row = [1, cols as i64];
    let s = 3.0;
    unsafe {
        kernel
            .call(
                &[
                    memref(&mut a, &full, &[cols as i64, 1]),
                    memref(&mut b, &row, &[cols as i64, 1]),
                    MemRef {
                        ptr: std::ptr::null_mut(),
                        sizes: &full,
                        strides: &[cols as i64, 1],
                    },
                    memref(&mut out, &full, &[9, 1]),
                ],
                &[Scalar::F64(s)],
            )
            .expect("calls");
    }
    for i in 0..rows {
        for j in 0..9 {
            let got = out[i * 9 + j];
            if j < cols {
                let x = a[i * cols + j];
                assert_eq!(got, (x + b[j]) * x * s, "at ({i}, {j})");
            } else {
                assert_eq!(got, -1.0, "outside the sub-store at ({i}, {j})");
            }
        }
    }
    let again = jit.kernel(&add_then_scale()).expect("cached");
    assert!(Arc::ptr_eq(&kernel, &again));
    let stats = jit.stats();
    assert_eq!((stats.kernels_compiled, stats.cache_hits), (1, 1));
    assert!(stats.compile_seconds > 0.0);
}

/// `out = x + y` with an element function.
fn element_add() -> Arc<TaskKind> {
    kind(
        "jit_test.add_e",
        Arc::new(Binary {
            op: "arith.addf",
            scalar: false,
            element: true,
        }),
        false,
    )
}

/// `t = a + b` (b a broadcast row), `out = t * t * s`: with element functions the kernel is
/// one loop nest and `t`, used twice, never exists in memory.
#[test]
fn element_functions_make_one_loop_nest_even_for_values_used_twice() {
    let add = element_add();
    let mul = kind(
        "jit_test.mul_s_e",
        Arc::new(Binary {
            op: "arith.mulf",
            scalar: true,
            element: true,
        }),
        true,
    );
    let mut sig = add_then_scale();
    sig.steps[0].kind = add;
    sig.steps[1].kind = mul;
    sig.steps[1].bindings[1] = (2, Privilege::Read);
    let kernel = Jit::new().kernel(&sig).expect("compiles");
    assert_eq!(
        kernel.iteration_space().map(|s| s.param),
        Some(2),
        "the temporary's extent is the space"
    );
    let (rows, cols) = (3usize, 4usize);
    let a: Vec<f64> = (0..rows * cols).map(|i| i as f64 - 4.5).collect();
    let b: Vec<f64> = (0..cols).map(|j| 0.25 * j as f64).collect();
    let out = call_with_a_row(&kernel, (rows, cols), &a, &b, -2.0);
    for i in 0..rows {
        for j in 0..cols {
            let t = a[i * cols + j] + b[j];
            assert_eq!(out[i * cols + j], t * t * -2.0, "at ({i}, {j})");
        }
    }
}

/// `acc += sum(exp(x))`: one 1-d input reduced into a 0-d accumulator.
fn sum_exp() -> KernelSignature {
    let sum = generated_kind(
        "jit_test.sum_exp",
        &[
            ("x", Privilege::Read),
            ("acc", Privilege::Reduce(ReductionOp::Sum)),
        ],
        Arc::new(Sum),
    );
    KernelSignature {
        name: "sum_exp".into(),
        steps: vec![step(
            sum,
            &[
                (0, Privilege::Read),
                (1, Privilege::Reduce(ReductionOp::Sum)),
            ],
        )],
        params: vec![
            KernelParam {
                rank: 1,
                ..param(0, Privilege::Read, false, 0)
            },
            KernelParam {
                rank: 0,
                ..param(1, Privilege::Reduce(ReductionOp::Sum), false, 0)
            },
        ],
    }
}

#[test]
fn a_reduction_accumulates_into_its_running_value() {
    let sig = sum_exp();
    let kernel = Jit::new().kernel(&sig).expect("compiles");
    let mut x: Vec<f64> = (0..1000).map(|i| (i as f64 - 500.0) / 100.0).collect();
    let mut acc = [2.0f64];
    unsafe {
        kernel
            .call(
                &[memref(&mut x, &[1000], &[1]), memref(&mut acc, &[], &[])],
                &[],
            )
            .expect("calls");
    }
    let expected = 2.0 + x.iter().map(|v| v.exp()).sum::<f64>();
    assert!(
        (acc[0] - expected).abs() <= 1e-12 * expected,
        "{} vs {expected}",
        acc[0]
    );
}

/// `acc += x . y` over rank-2 f64 tensors, as a library writes it: a tensor function (one
/// running total, the order does not matter here) and an element function folding one
/// product into a partial, which the JIT folds in `REDUCTION_LANES` order.
struct Dot;

impl MlirGenerator for Dot {
    fn generate(&self, symbol: &str, _sig: &MlirSignature<'_>) -> Result<String, KernelError> {
        let t = "tensor<?x?xf64>";
        Ok(format!(
            "func.func private @{symbol}(%x: {t}, %y: {t}, %acc: tensor<f64>) -> tensor<f64> {{
  %r = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, \
affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], \
iterator_types = [\"reduction\", \"reduction\"]}} ins(%x, %y : {t}, {t}) outs(%acc : tensor<f64>) {{
  ^bb0(%a: f64, %b: f64, %o: f64):
    %p = arith.mulf %a, %b : f64
    %s = arith.addf %o, %p : f64
    linalg.yield %s : f64
  }} -> tensor<f64>
  return %r : tensor<f64>
}}"
        ))
    }

    fn generate_element(
        &self,
        symbol: &str,
        _sig: &MlirSignature<'_>,
    ) -> Option<Result<String, KernelError>> {
        Some(Ok(format!(
            "func.func private @{symbol}(%a: f64, %b: f64, %acc: f64) -> f64 {{
    %p = arith.mulf %a, %b : f64
    %s = arith.addf %acc, %p : f64
    return %s : f64
}}"
        )))
    }
}

/// `t = a + b; acc += t . a` (`t` a temporary when `temporary`): the element route's nest
/// with a dot product folded in.
fn add_then_dot(temporary: bool) -> KernelSignature {
    let add = element_add();
    let sum = Privilege::Reduce(ReductionOp::Sum);
    let dot = generated_kind(
        "jit_test.dot_e",
        &[("x", Privilege::Read), ("y", Privilege::Read), ("acc", sum)],
        Arc::new(Dot),
    );
    let read = Privilege::Read;
    chained(
        "add+dot",
        [add, dot],
        sum,
        vec![
            param(0, read, false, 0),
            param(1, read, false, 0),
            param(2, Privilege::ReadWrite, temporary, 0),
            KernelParam {
                rank: 0,
                ..param(3, sum, false, 0)
            },
        ],
    )
}

/// The dot product of a vector update's result is folded in the update's loop nest (one
/// iteration space, no second pass over memory), row by row in `REDUCTION_LANES` order from
/// the partial on entry, so it gives the bits the dot product's own kernel gives; the
/// update is written, through strided rows, unless it is a temporary.
#[test]
fn a_dot_product_joins_the_loop_nest_of_its_operands_in_lane_order() {
    let jit = Jit::new();
    let (rows, cols, stride) = (3usize, 2 * diffuse_ir::REDUCTION_LANES + 3, 23usize);
    // Magnitudes far apart, so that the order of the additions shows in the result.
    let value =
        |i: usize, scale: f64| (i as f64 * 0.37).sin() * 10f64.powi((i % 9) as i32 - 4) * scale;
    let a: Vec<f64> = (0..rows * stride).map(|i| value(i, 1.0)).collect();
    let b: Vec<f64> = (0..rows * stride).map(|i| value(i + 5, -3.0)).collect();
    let start = 0.125;
    let products: Vec<Vec<f64>> = (0..rows)
        .map(|r| {
            (0..cols)
                .map(|c| (a[r * stride + c] + b[r * stride + c]) * a[r * stride + c])
                .collect()
        })
        .collect();
    let mut expected = start;
    for row in &products {
        let mut lanes = [-0.0f64; diffuse_ir::REDUCTION_LANES];
        let whole = row.len() / lanes.len() * lanes.len();
        for (i, p) in row[..whole].iter().enumerate() {
            lanes[i % lanes.len()] += p;
        }
        expected = lanes.iter().fold(expected, |acc, l| acc + l);
        expected = row[whole..].iter().fold(expected, |acc, p| acc + p);
    }
    let naive = products.iter().flatten().fold(start, |acc, p| acc + p);
    assert_ne!(
        expected.to_bits(),
        naive.to_bits(),
        "order-independent data"
    );
    for temporary in [false, true] {
        let kernel = jit.kernel(&add_then_dot(temporary)).expect("compiles");
        assert_eq!(
            kernel.iteration_space().map(|s| s.param),
            Some(2),
            "one loop nest over t"
        );
        let (mut a, mut b) = (a.clone(), b.clone());
        let mut t = vec![-1.0; rows * stride];
        let mut acc = [start];
        let (sizes, strides) = ([rows as i64, cols as i64], [stride as i64, 1]);
        let t_ref = if temporary {
            MemRef {
                ptr: std::ptr::null_mut(),
                sizes: &sizes,
                strides: &strides,
            }
        } else {
            memref(&mut t, &sizes, &strides)
        };
        // SAFETY: every memref addresses a buffer of its sizes and strides; a temporary is
        // null.
        unsafe {
            kernel
                .call(
                    &[
                        memref(&mut a, &sizes, &strides),
                        memref(&mut b, &sizes, &strides),
                        t_ref,
                        memref(&mut acc, &[], &[]),
                    ],
                    &[],
                )
                .expect("calls");
        }
        assert_eq!(
            acc[0].to_bits(),
            expected.to_bits(),
            "{} vs {expected}",
            acc[0]
        );
        for r in 0..rows {
            for c in 0..stride {
                let want = if c < cols && !temporary {
                    a[r * stride + c] + b[r * stride + c]
                } else {
                    -1.0
                };
                assert_eq!(t[r * stride + c], want, "t at ({r}, {c})");
            }
        }
    }
}

/// `out[i] = x[i - 1]` (`x[0]` for the first), 1-d f64: the element function reads `x`
/// whole, at an index of its own.
struct Previous;

impl MlirGenerator for Previous {
    fn generate(&self, symbol: &str, _sig: &MlirSignature<'_>) -> Result<String, KernelError> {
        Err(KernelError {
            kind: symbol.into(),
            point: diffuse_ir::Point::splat(0, 0),
            reason: "only an element function".into(),
        })
    }

    fn generate_element(
        &self,
        symbol: &str,
        _sig: &MlirSignature<'_>,
    ) -> Option<Result<String, KernelError>> {
        Some(Ok(format!(
            "func.func private @{symbol}(%i: index, %x: tensor<?xf64>, %o: f64) -> f64 {{
    %c1 = arith.constant 1 : index
    %above = arith.maxui %i, %c1 : index
    %before = arith.subi %above, %c1 : index
    %v = tensor.extract %x[%before] : tensor<?xf64>
    return %v : f64
}}"
        )))
    }

    fn element_reads_whole(&self, _sig: &MlirSignature<'_>) -> Vec<usize> {
        vec![0]
    }
}

/// `y = previous(x); z = y + x`: `x` is read whole by one step and element by element by the
/// other, through one parameter; the nest hands the first its indices.
#[test]
fn an_argument_read_whole_and_element_by_element_gets_the_indexed_nest() {
    let previous = generated_kind(
        "jit_test.previous",
        &[("x", Privilege::Read), ("out", Privilege::Write)],
        Arc::new(Previous),
    );
    let (read, write) = (Privilege::Read, Privilege::Write);
    let one_d = |store, privilege| KernelParam {
        rank: 1,
        ..param(store, privilege, false, 0)
    };
    let sig = KernelSignature {
        name: "previous+add".into(),
        steps: vec![
            step(previous, &[(0, read), (1, write)]),
            step(element_add(), &[(1, read), (0, read), (2, write)]),
        ],
        params: vec![one_d(0, read), one_d(1, write), one_d(2, write)],
    };
    let kernel = Jit::new().kernel(&sig).expect("compiles");
    assert_eq!(kernel.iteration_space().map(|s| s.param), Some(1));
    let n = 2 * diffuse_ir::REDUCTION_LANES + 3;
    let mut x: Vec<f64> = (0..n).map(|i| (i * i) as f64 + 0.5).collect();
    let (mut y, mut z) = (vec![0.0; n], vec![0.0; n]);
    let (sizes, strides) = ([n as i64], [1i64]);
    // SAFETY: every memref addresses a buffer of its size.
    unsafe {
        kernel
            .call(
                &[
                    memref(&mut x, &sizes, &strides),
                    memref(&mut y, &sizes, &strides),
                    memref(&mut z, &sizes, &strides),
                ],
                &[],
            )
            .expect("calls");
    }
    for i in 0..n {
        let before = x[i.max(1) - 1];
        assert_eq!((y[i], z[i]), (before, before + x[i]), "at {i}");
    }
}

#[test]
fn failures_are_typed_and_cached() {
    struct Broken;
    impl MlirGenerator for Broken {
        fn generate(&self, symbol: &str, _: &MlirSignature<'_>) -> Result<String, KernelError> {
            Ok(format!(
                "func.func private @{symbol}() {{ this is not mlir }}"
            ))
        }
    }
    let broken = kind("jit_test.broken", Arc::new(Broken), false);
    let mut sig = add_then_scale();
    sig.steps[0].kind = broken;
    let jit = Jit::new();
    match jit.kernel(&sig) {
        Err(JitError::Mlir {
            stage, diagnostics, ..
        }) => {
            assert_eq!(stage, "parsing");
            assert!(!diagnostics.is_empty());
        }
        other => panic!("expected a parse failure, got {:?}", other.map(|_| ())),
    }
    // The failure is cached: asking again fails without a second attempt.
    assert!(jit.kernel(&sig).is_err());
    assert_eq!(jit.stats().compile_failures, 1);
}

/// `add_then_scale` of fixed inputs (5 x 7, `b` a broadcast row, `s` = 3) through `jit`.
fn add_then_scale_through(jit: &Jit) -> Vec<f64> {
    let kernel = jit.kernel(&add_then_scale()).expect("compiles");
    let (rows, cols) = (5usize, 7usize);
    let a: Vec<f64> = (0..rows * cols).map(|i| i as f64 * 0.25 - 3.0).collect();
    let b: Vec<f64> = (0..cols).map(|j| 0.5 + j as f64).collect();
    call_with_a_row(&kernel, (rows, cols), &a, &b, 3.0)
}

/// Calls a kernel of `add_then_scale`'s parameters (a `rows x cols` array, a broadcast row,
/// a temporary, the output) and scalar `s`; returns the output.
fn call_with_a_row(
    kernel: &CpuKernel,
    (rows, cols): (usize, usize),
    a: &[f64],
    b: &[f64],
    s: f64,
) -> Vec<f64> {
    let (mut a, mut b) = (a.to_vec(), b.to_vec());
    let mut out = vec![0.0; rows * cols];
    let full = [rows as i64, cols as i64];
    let strides = [cols as i64, 1];
    // SAFETY: every memref addresses a buffer of its sizes; the temporary is null.
    unsafe {
        kernel
            .call(
                &[
                    memref(&mut a, &full, &strides),
                    memref(&mut b, &[1, cols as i64], &strides),
                    MemRef {
                        ptr: std::ptr::null_mut(),
                        sizes: &full,
                        strides: &strides,
                    },
                    memref(&mut out, &full, &strides),
                ],
                &[Scalar::F64(s)],
            )
            .expect("calls");
    }
    out
}

/// A kernel compiled with an on-disk cache is kept there (a shared library and its key); a
/// fresh JIT on the same directory, as another process would be, loads it instead of
/// compiling, and it computes the same bits. A key that does not match the kernel's material
/// in full (another version, a hash collision) is never loaded: the kernel is compiled again
/// and kept anew.
#[test]
fn kernels_kept_on_disk_load_in_a_fresh_jit() {
    let dir =
        std::env::temp_dir().join(format!("diffuse-kernel-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let jit = || Jit::new().with_kernel_cache(KernelCache::new(&dir));
    let counts = |jit: &Jit| (jit.stats().kernels_compiled, jit.stats().kernels_loaded);
    let files = |ext: &str| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&dir)
            .expect("the cache directory exists")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .collect()
    };

    let first = jit();
    let want = add_then_scale_through(&first);
    assert_eq!(counts(&first), (1, 0), "compiled");
    let (libraries, keys) = (files("so"), files("key"));
    assert_eq!(
        (libraries.len(), keys.len()),
        (1, 1),
        "{libraries:?} {keys:?}"
    );
    let expected: Vec<f64> = (0..35)
        .map(|k| {
            let x = k as f64 * 0.25 - 3.0;
            (x + (0.5 + (k % 7) as f64)) * x * 3.0
        })
        .collect();
    assert_eq!(want, expected);

    let second = jit();
    let got = add_then_scale_through(&second);
    assert_eq!(counts(&second), (0, 1), "loaded, not compiled");
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&got), bits(&want));

    std::fs::write(&keys[0], b"another kernel's material").expect("writes");
    let third = jit();
    assert_eq!(bits(&add_then_scale_through(&third)), bits(&want));
    assert_eq!(counts(&third), (1, 0), "a mismatched key is not loaded");
    let fourth = jit();
    add_then_scale_through(&fourth);
    assert_eq!(counts(&fourth), (0, 1), "kept again with its own key");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `out = x` written as the tensor `x` itself: bufferization copies it into `out`, which the
/// lowering makes a call of the JIT's `memrefCopy` (the memrefs are strided).
struct First;

impl MlirGenerator for First {
    fn generate(&self, symbol: &str, sig: &MlirSignature<'_>) -> Result<String, KernelError> {
        let t = tensor_type(&sig.args[2]);
        Ok(format!(
            "func.func private @{symbol}(%x: {t}, %z: {t}, %out: {t}) -> {t} {{\n  return %x : {t}\n}}"
        ))
    }
}

/// A kept kernel that calls a function the JIT provides (`memrefCopy`) loads in a fresh JIT
/// and copies as the compiled one did, into a strided sub-block.
#[test]
fn a_kept_kernel_calling_the_jits_functions_loads_and_runs() {
    let dir = std::env::temp_dir().join(format!("diffuse-kernel-copy-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let first = kind("jit_test.first", Arc::new(First), false);
    let (read, write) = (Privilege::Read, Privilege::Write);
    let signature = KernelSignature {
        name: "first".into(),
        steps: vec![step(first, &[(0, read), (1, read), (2, write)])],
        params: vec![
            param(0, read, false, 0),
            param(1, read, false, 0),
            param(2, write, false, 0),
        ],
    };
    let copy_through = |jit: &Jit| -> Vec<f64> {
        let kernel = jit.kernel(&signature).expect("compiles");
        let (rows, cols) = (4usize, 6usize);
        let mut a: Vec<f64> = (0..rows * cols).map(|i| i as f64 - 7.5).collect();
        let mut b = vec![0.0; rows * cols];
        let mut out = vec![-1.0; rows * 9];
        let full = [rows as i64, cols as i64];
        // SAFETY: every memref addresses a buffer of its sizes and strides.
        unsafe {
            kernel
                .call(
                    &[
                        memref(&mut a, &full, &[cols as i64, 1]),
                        memref(&mut b, &full, &[cols as i64, 1]),
                        memref(&mut out, &full, &[9, 1]),
                    ],
                    &[],
                )
                .expect("calls");
        }
        out
    };
    let jit = || Jit::new().with_kernel_cache(KernelCache::new(&dir));
    let compiled = jit();
    let want = copy_through(&compiled);
    let expected: Vec<f64> = (0..36)
        .map(|k| {
            if k % 9 < 6 {
                (k / 9 * 6 + k % 9) as f64 - 7.5
            } else {
                -1.0
            }
        })
        .collect();
    assert_eq!(want, expected);
    assert_eq!(compiled.stats().kernels_compiled, 1);
    let loaded = jit();
    assert_eq!(copy_through(&loaded), want);
    assert_eq!(
        (
            loaded.stats().kernels_compiled,
            loaded.stats().kernels_loaded
        ),
        (0, 1),
        "kept and loaded"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The cache the environment names: `DIFFUSE_KERNEL_CACHE` (a directory, or `off`), else
/// under `XDG_CACHE_HOME`, else under `HOME`'s `.cache`; none without any of them.
#[test]
fn the_kernel_cache_follows_the_environment() {
    let path = |s: &'static str| Some(std::path::Path::new(s));
    let dir = |cache: Option<KernelCache>| cache.map(|c| c.dir().to_path_buf());
    assert_eq!(
        dir(KernelCache::from_vars(
            path("/tmp/k"),
            path("/x"),
            path("/h")
        )),
        Some("/tmp/k".into())
    );
    for off in ["off", "0", ""] {
        assert!(KernelCache::from_vars(path(off), path("/x"), path("/h")).is_none());
    }
    assert_eq!(
        dir(KernelCache::from_vars(None, path("/x"), path("/h"))),
        Some("/x/diffuse/kernels".into())
    );
    assert_eq!(
        dir(KernelCache::from_vars(None, None, path("/h"))),
        Some("/h/.cache/diffuse/kernels".into())
    );
    assert!(KernelCache::from_vars(None, None, None).is_none());
}

/// Past its limit, a cache keeps the most recently used three quarters of it (by the keys'
/// modification times, which loading renews), each kernel's library going with its key.
#[test]
fn pruning_removes_the_least_recently_used_kernels() {
    let dir = std::env::temp_dir().join(format!("diffuse-kernel-prune-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creates");
    for i in 0..8u64 {
        for ext in ["so", "key"] {
            let path = dir.join(format!("k{i}.{ext}"));
            std::fs::write(&path, b"x").expect("writes");
            let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000 + i);
            std::fs::File::options()
                .append(true)
                .open(&path)
                .and_then(|f| f.set_modified(when))
                .expect("sets the time");
        }
    }
    let left = || {
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .expect("lists")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let cache = KernelCache::new(&dir);
    cache.prune(8);
    assert_eq!(left().len(), 16, "within the limit");
    cache.prune(4);
    assert_eq!(
        left(),
        ["k5.key", "k5.so", "k6.key", "k6.so", "k7.key", "k7.so"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The linker runs with the standard descriptors only: a descriptor the program holds
/// without close-on-exec (as C libraries open files; HDF5 also locks them) is not open in
/// it, so the program can reopen and lock its files while a kernel is being linked.
#[test]
fn the_linker_inherits_no_descriptors_but_the_standard_ones() {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::PermissionsExt;

    let dir = std::env::temp_dir().join(format!("diffuse-kernel-fds-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creates");
    let held = std::fs::File::create(dir.join("held")).expect("creates");
    const HELD: i32 = 987;
    // SAFETY: plain descriptor calls on a file this test owns; 987 is free in a test process.
    unsafe {
        assert_eq!(libc::dup2(held.as_raw_fd(), HELD), HELD);
        assert_eq!(
            libc::fcntl(HELD, libc::F_SETFD, 0),
            0,
            "clears close-on-exec"
        );
    }
    let linker = dir.join("linker.sh");
    let listing = dir.join("descriptors");
    std::fs::write(
        &linker,
        format!(
            "#!/bin/sh\nls /proc/$$/fd > '{}'\nexec cc \"$@\"\n",
            listing.display()
        ),
    )
    .expect("writes");
    std::fs::set_permissions(&linker, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let jit =
        Jit::new().with_kernel_cache(KernelCache::new(dir.join("kernels")).with_linker(&linker));
    add_then_scale_through(&jit);
    // SAFETY: closes the duplicate made above.
    unsafe { libc::close(HELD) };
    let open: Vec<String> = std::fs::read_to_string(&listing)
        .expect("the linker ran")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert!(!open.is_empty());
    assert!(
        !open.contains(&HELD.to_string()),
        "open in the linker: {open:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
