//! SpMV through the JIT: the generated kernel compiles for both index widths, computes the
//! sequential CSR product bit for bit, and fuses with the vector operations of a Krylov step.

use std::sync::{Arc, OnceLock};

use diffuse::{BackendConfig, EmbeddedConfig, FusionConfig, RuntimeConfig};
use diffuse_array::{Array, ArrayContext};
use diffuse_ir::{DType, Privilege, TaskKind};
use diffuse_jit::{Jit, KernelParam, KernelSignature, KernelStep, MemRef};
use diffuse_sparse::{generators, ColumnIndices, CsrMatrix, HostCsr, IndexWidth, Triplets};
use proptest::prelude::*;

use crate::spmv::{bits, matrix, vector, width};

/// An array context over a fresh embedded backend, with the runtime kept to read its
/// counters and stream log.
struct Jitted {
    cx: ArrayContext,
    runtime: Arc<diffuse::Runtime>,
}

impl Jitted {
    fn start(procs: usize, fusion: FusionConfig, jit: Option<Arc<Jit>>) -> Self {
        let backend = BackendConfig::Embedded(EmbeddedConfig {
            procs: Some(procs),
            ..Default::default()
        });
        let runtime = diffuse::start(
            &backend,
            RuntimeConfig {
                fusion,
                jit,
                gpu: None,
                placement: None,
                min_block: 1,
            },
        )
        .expect("the embedded backend starts");
        let cx = ArrayContext::new(diffuse_ir::Context::new(runtime.clone()));
        Jitted { cx, runtime }
    }

    fn compiled_points(&self) -> u64 {
        self.runtime.stats().compiled_points
    }
}

/// One blocking JIT for the property cases, so each distinct kernel compiles once.
fn shared_jit() -> Arc<Jit> {
    static JIT: OnceLock<Arc<Jit>> = OnceLock::new();
    Arc::clone(JIT.get_or_init(|| Arc::new(Jit::new())))
}

/// Finite values of many magnitudes, signed zeros included: products and sums round
/// differently if anything contracts `v * x + sum` into an `fma` or reorders the sum.
fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => -1e3f64..1e3,
        1 => -1e-3f64..1e-3,
        1 => Just(-0.0),
        1 => Just(0.0),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Two products with one matrix fuse into one task, which runs the compiled kernel; both
    /// equal the sequential product bit for bit (empty rows are +0.0, duplicates summed as
    /// `HostCsr` sums them).
    #[test]
    fn compiled_spmv_equals_the_sequential_product(
        rows in 1i64..60,
        cols in 1i64..60,
        raw in prop::collection::vec((0i64..1000, 0i64..1000, value()), 0..300),
        x1 in prop::collection::vec(value(), 60),
        x2 in prop::collection::vec(value(), 60),
        procs in 1usize..=4,
        wide in any::<bool>(),
    ) {
        let mut t = Triplets::new(rows, cols).unwrap();
        // Every entry into the first half of the rows: the rest are empty.
        let filled = if raw.len() % 2 == 0 { rows } else { (rows + 1) / 2 };
        for (r, c, v) in raw {
            t.push(r % filled, c % cols, v).unwrap();
        }
        let (x1, x2) = (x1[..cols as usize].to_vec(), x2[..cols as usize].to_vec());
        let jit = shared_jit();
        let rt = Jitted::start(procs, FusionConfig::default(), Some(jit.clone()));
        let (host, a) = matrix(&rt.cx, &t, width(wide));
        let (x1a, x2a) = (vector(&rt.cx, &x1), vector(&rt.cx, &x2));
        let y1 = a.spmv(&x1a).unwrap();
        let y2 = a.spmv(&x2a).unwrap();
        let got1 = y1.to_vec::<f64>().unwrap();
        let got2 = y2.to_vec::<f64>().unwrap();
        prop_assert_eq!(bits(&got1), bits(&host.matvec(&x1).unwrap()));
        prop_assert_eq!(bits(&got2), bits(&host.matvec(&x2).unwrap()));
        // Not a silent native fallback.
        prop_assert!(rt.compiled_points() > 0, "no point ran compiled code");
        prop_assert_eq!(jit.stats().compile_failures, 0);
    }
}

/// A deterministic vector of `n` values with many significant bits.
fn wavy(n: i64, phase: f64) -> Vec<f64> {
    (0..n)
        .map(|i| (i as f64 * 0.731 + phase).sin() * 3.7 + 0.01 * i as f64)
        .collect()
}

/// `t`'s sparsity pattern with values of many significant bits (so that a fused
/// multiply-add, or a reordered sum, would round differently from the native kernel).
fn perturbed(t: &Triplets) -> Triplets {
    let mut out = Triplets::new(t.rows(), t.cols()).unwrap();
    for (k, &(r, c, v)) in t.entries().iter().enumerate() {
        out.push(r, c, v * (1.0 + 0.3 * (k as f64 * 1.37).sin()))
            .unwrap();
    }
    out
}

/// What one CG-like step computes, read back to the host.
struct Step {
    q: Vec<f64>,
    pq: f64,
    r: Vec<f64>,
    pap: f64,
}

/// `q = A p; pq = p . q; r = r - alpha q`, and `pap = p . (A p)` with `A p` a temporary.
fn cg_step(rt: &Jitted, host: &HostCsr, alpha: f64) -> Step {
    let n = host.rows();
    let cx = &rt.cx;
    let a = CsrMatrix::from_host(cx, host).unwrap();
    let p = Array::from_vec(cx, &[n], wavy(n, 0.3)).unwrap();
    let r = Array::from_vec(cx, &[n], wavy(n, 1.9)).unwrap();
    let alpha = Array::from_vec(cx, &[], vec![alpha]).unwrap();
    rt.runtime.record_streams(true);
    let q = a.spmv(&p).unwrap();
    let pq = p.dot(&q).unwrap();
    let r = (&r - (&alpha * &q)).unwrap();
    let pap = p.dot(&a.spmv(&p).unwrap()).unwrap();
    Step {
        q: q.to_vec().unwrap(),
        pq: pq.item().unwrap(),
        r: r.to_vec().unwrap(),
        pap: pap.item().unwrap(),
    }
}

#[test]
fn spmv_fuses_with_vector_operations_and_runs_compiled() {
    let jit = Arc::new(Jit::new());
    for procs in 1..=4 {
        for wide in [false, true] {
            for k in [7, 12] {
                let host = HostCsr::from_triplets(
                    &perturbed(&generators::poisson_2d(k).unwrap()),
                    width(wide),
                )
                .unwrap();
                let fused = Jitted::start(procs, FusionConfig::default(), Some(jit.clone()));
                let native = Jitted::start(procs, FusionConfig::off(), None);
                let got = cg_step(&fused, &host, 0.37);
                let want = cg_step(&native, &host, 0.37);
                let case = format!("{procs} processors, {} rows, {wide}", host.rows());
                assert_eq!(bits(&got.q), bits(&want.q), "{case}");
                assert_eq!(bits(&got.r), bits(&want.r), "{case}");
                // The dot products, folded in the product's loop nest, add in the native
                // kernels' order.
                for (g, w) in [(got.pq, want.pq), (got.pap, want.pap)] {
                    assert_eq!(g.to_bits(), w.to_bits(), "{g} vs {w}: {case}");
                }
                let log = fused.runtime.take_stream_log();
                let executed: Vec<&String> = log.iter().flat_map(|f| &f.executed).collect();
                let kind = if wide {
                    "sparse.spmv.f64.i64"
                } else {
                    "sparse.spmv.f64.i32"
                };
                assert!(
                    executed.iter().any(|e| e.contains(kind) && e.contains('+')),
                    "the SpMV did not fuse ({case}): {executed:?}"
                );
                assert!(
                    executed.iter().all(|e| e.contains('+')),
                    "a task ran unfused, hence natively ({case}): {executed:?}"
                );
                // Every point of the fused tasks ran compiled code.
                let points = fused.runtime.stats().points_executed;
                assert!(fused.compiled_points() > 0, "{case}");
                assert_eq!(fused.compiled_points(), points, "{case}");
                assert_eq!(native.compiled_points(), 0, "{case}");
            }
        }
    }
    assert_eq!(jit.stats().compile_failures, 0);
}

/// The registered SpMV kind of `width` (kinds register on first use).
fn spmv_kind(width: IndexWidth) -> Arc<TaskKind> {
    let rt = Jitted::start(1, FusionConfig::off(), None);
    let host = HostCsr::from_triplets(&Triplets::new(1, 1).unwrap(), width).unwrap();
    let a = CsrMatrix::from_host(&rt.cx, &host).unwrap();
    let x = Array::from_vec(&rt.cx, &[1], vec![1.0]).unwrap();
    a.spmv(&x).unwrap().to_vec::<f64>().unwrap();
    let name = match width {
        IndexWidth::I32 => "sparse.spmv.f64.i32",
        IndexWidth::I64 => "sparse.spmv.f64.i64",
    };
    TaskKind::lookup(name).expect("registered by spmv")
}

fn param(dtype: DType, privilege: Privilege, store: usize) -> KernelParam {
    KernelParam {
        dtype,
        rank: 1,
        privilege,
        temporary: false,
        store,
        unit_dims: 0,
    }
}

fn memref<'a, T>(data: &mut [T], len: &'a [i64]) -> MemRef<'a> {
    MemRef {
        ptr: data.as_mut_ptr().cast(),
        sizes: len,
        strides: &[1],
    }
}

/// The kind's generated MLIR compiles on its own for both widths, and the kernel computes
/// a tile of rows from the middle of a matrix (its entries, row ends counted from its first
/// entry, the whole of `x`).
#[test]
fn the_generated_kernel_compiles_and_runs_for_both_widths() {
    let jit = Jit::new();
    let t = perturbed(&generators::poisson_2d(5).unwrap());
    let x: Vec<f64> = wavy(25, 0.8);
    for w in [IndexWidth::I32, IndexWidth::I64] {
        let kind = spmv_kind(w);
        let index = match w {
            IndexWidth::I32 => DType::I32,
            IndexWidth::I64 => DType::I64,
        };
        let sig = KernelSignature {
            name: kind.name().to_string(),
            steps: vec![KernelStep {
                kind,
                bindings: (0..5)
                    .map(|i| {
                        (
                            i,
                            if i == 0 {
                                Privilege::Write
                            } else {
                                Privilege::Read
                            },
                        )
                    })
                    .collect(),
            }],
            params: vec![
                param(DType::F64, Privilege::Write, 0),
                param(index, Privilege::Read, 1),
                param(index, Privilege::Read, 2),
                param(DType::F64, Privilege::Read, 3),
                param(DType::F64, Privilege::Read, 4),
            ],
        };
        let kernel = jit.kernel(&sig).expect("the SpMV kernel compiles");
        let host = HostCsr::from_triplets(&t, w).unwrap();
        let want = host.matvec(&x).unwrap();
        // Rows 7..19: their ends from their first entry, their entries, all of x.
        let (lo, hi) = (7usize, 19usize);
        let offsets = host.row_offsets();
        let (e0, e1) = (offsets[lo] as usize, offsets[hi] as usize);
        let ends = offsets[lo + 1..hi + 1].iter().map(|&e| e - offsets[lo]);
        let mut values = host.values()[e0..e1].to_vec();
        let mut x = x.clone();
        let mut y = vec![f64::NAN; hi - lo];
        let tile = [(hi - lo) as i64];
        let nnz = [values.len() as i64];
        let (mut ends32, mut ends64, mut columns32, mut columns64);
        let (ends, columns) = match host.columns() {
            ColumnIndices::I32(c) => {
                ends32 = ends.map(|e| e as i32).collect::<Vec<_>>();
                columns32 = c[e0..e1].to_vec();
                (memref(&mut ends32, &tile), memref(&mut columns32, &nnz))
            }
            ColumnIndices::I64(c) => {
                ends64 = ends.collect::<Vec<_>>();
                columns64 = c[e0..e1].to_vec();
                (memref(&mut ends64, &tile), memref(&mut columns64, &nnz))
            }
        };
        let memrefs = [
            memref(&mut y, &tile),
            ends,
            columns,
            memref(&mut values, &nnz),
            memref(&mut x, &[25]),
        ];
        // SAFETY: every memref describes a live vector of its parameter's element type and
        // length; only `y` is written; the offsets and columns come from a valid HostCsr.
        unsafe { kernel.call(&memrefs, &[]) }.expect("the kernel runs");
        assert_eq!(bits(&y), bits(&want[lo..hi]), "{w:?}");
    }
    assert_eq!(jit.stats().kernels_compiled, 2);
}
