//! The GPU path without a GPU: PTX for sm_90, and host code linked against a recording
//! runtime ([`recording_runtime`]) whose calls show what an enqueue launches, with which
//! descriptors. Running the kernels on a GPU, against the CPU kernels, is the device layer's
//! test.

use std::sync::Arc;

use diffuse_ir::{
    element_type, tensor_type, DType, KernelError, MlirGenerator, MlirSignature, Privilege, Scalar,
    TaskKind,
};
use diffuse_jit::{
    GpuError, GpuJit, GpuTarget, JitError, KernelSignature, KernelStep, MemRef, PtxModule,
};

use super::{add_then_scale, param};

#[path = "recording_runtime.rs"]
mod recording_runtime;

use recording_runtime::Call;

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
    unary_kind_of(name, body, DType::F64)
}

fn unary_kind_of(name: &str, body: &'static str, dtype: DType) -> Arc<TaskKind> {
    if let Some(k) = TaskKind::lookup(name) {
        return k;
    }
    TaskKind::builder(name)
        .arg("x", dtype, Privilege::Read)
        .arg("out", dtype, Privilege::Write)
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

/// `out = f(x)` for the kind `name` with element `body` (see [`Unary`]) over `dtype`.
fn unary(name: &str, body: &'static str, dtype: DType) -> KernelSignature {
    let param = |store, privilege| diffuse_jit::KernelParam {
        dtype,
        ..param(store, privilege, false, 0)
    };
    KernelSignature {
        name: name.into(),
        steps: vec![KernelStep {
            kind: unary_kind_of(name, body, dtype),
            bindings: vec![(0, Privilege::Read), (1, Privilege::Write)],
        }],
        params: vec![param(0, Privilege::Read), param(1, Privilege::Write)],
    }
}

/// `out = cbrt(x)`: no device definition of `cbrt`.
fn cube_root() -> KernelSignature {
    unary("jit_test.cbrt", "%y = math.cbrt %a : {f}", DType::F64)
}

/// Every libm function the device defines beyond the prelude, in one expression.
const LIBM: &str = "%s = math.sin %a : {f}
    %c = math.cos %a : {f}
    %t = math.tan %a : {f}
    %th = math.tanh %a : {f}
    %sh = math.sinh %a : {f}
    %ch = math.cosh %a : {f}
    %as = math.asin %a : {f}
    %ac = math.acos %a : {f}
    %at = math.atan %a : {f}
    %a2 = math.atan2 %a, %s : {f}
    %pw = math.powf %a, %c : {f}
    %l2 = math.log2 %a : {f}
    %l10 = math.log10 %a : {f}
    %l1p = math.log1p %a : {f}
    %em1 = math.expm1 %a : {f}
    %rem = arith.remf %a, %c : {f}
    %y0 = arith.addf %s, %c : {f}
    %y1 = arith.addf %y0, %t : {f}
    %y2 = arith.addf %y1, %th : {f}
    %y3 = arith.addf %y2, %sh : {f}
    %y4 = arith.addf %y3, %ch : {f}
    %y5 = arith.addf %y4, %as : {f}
    %y6 = arith.addf %y5, %ac : {f}
    %y7 = arith.addf %y6, %at : {f}
    %y8 = arith.addf %y7, %a2 : {f}
    %y9 = arith.addf %y8, %pw : {f}
    %y10 = arith.addf %y9, %l2 : {f}
    %y11 = arith.addf %y10, %l10 : {f}
    %y12 = arith.addf %y11, %l1p : {f}
    %y13 = arith.addf %y12, %em1 : {f}
    %y = arith.addf %y13, %rem : {f}";

fn sm90() -> GpuJit {
    GpuJit::new(GpuTarget::for_chip("sm_90"), recording_runtime::runtime())
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
    match jit.kernel(&cube_root()) {
        Err(JitError::Unsupported { reason, .. }) => {
            assert!(reason.contains("cbrt"), "{reason}")
        }
        other => panic!(
            "expected cbrt to be unsupported, got {:?}",
            other.map(|_| ())
        ),
    }
    // Failures are cached like successes.
    assert!(jit.kernel(&cube_root()).is_err());
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
}

/// A device address as a memref pointer (the recording runtime never dereferences it).
fn device(address: usize, sizes: &'static [i64], strides: &'static [i64]) -> MemRef<'static> {
    MemRef {
        ptr: address as *mut u8,
        sizes,
        strides,
    }
}

/// The launches of one enqueue of `kernel` (no scalars) on the recording runtime.
fn launches_of(kernel: &diffuse_jit::GpuKernel, memrefs: &[MemRef<'_>]) -> Vec<Call> {
    recording_runtime::take();
    // SAFETY: the recording runtime dereferences no device address.
    unsafe { kernel.enqueue(memrefs, &[]) }.expect("enqueues");
    recording_runtime::take()
        .into_iter()
        .filter(|c| matches!(c, Call::Launch { .. }))
        .collect()
}

/// The grid, block and parameter words of `call`, a launch.
fn launch_parts(call: &Call) -> (&[isize; 3], &[isize; 3], &[u64]) {
    let Call::Launch {
        grid,
        block,
        params,
    } = call
    else {
        panic!("expected a launch, got {call:?}");
    };
    (grid, block, params)
}

/// True when `words` contains `descriptor` as consecutive words.
fn passes(words: &[u64], descriptor: &[i64]) -> bool {
    let descriptor: Vec<u64> = descriptor.iter().map(|&w| w as u64).collect();
    words.windows(descriptor.len()).any(|w| w == descriptor)
}

#[test]
fn the_host_code_loads_the_ptx_once_and_launches_a_grid_over_the_sizes() {
    let jit = sm90();
    let kernel = jit.kernel(&add_then_scale()).expect("compiles");
    let kernel_name = &kernel.ptx()[0].name;
    // `a` dense, `b` a broadcast row, the temporary, and `out` a 3 x 1000 block of a device
    // buffer 1003 elements wide, at an offset: descriptors into device buffers, as given.
    let (a, b, out) = (0x7000_0000usize, 0x7100_0000usize, 0x7200_0000usize + 8 * 5);
    let memrefs = [
        device(a, &[3, 1000], &[1000, 1]),
        device(b, &[1, 1000], &[1000, 1]),
        device(0, &[3, 1000], &[1000, 1]),
        device(out, &[3, 1000], &[1003, 1]),
    ];
    recording_runtime::take();
    // SAFETY: the recording runtime dereferences no device address.
    unsafe { kernel.enqueue(&memrefs, &[Scalar::F64(2.0)]) }.expect("enqueues");
    let calls = recording_runtime::take();
    // The global constructor loads the PTX (opt level 3, as compiled); the call gets the
    // kernel, makes a stream, launches rows x ceil(cols / 256) blocks of 1 x 256 threads and
    // synchronizes.
    let [load, get, create, launch, sync, destroy] = &calls[..] else {
        panic!("unexpected calls {calls:#?}");
    };
    assert_eq!(
        load,
        &Call::LoadJit {
            opt_level: 3,
            has_entry: true
        }
    );
    assert_eq!(get, &Call::GetFunction(kernel_name.clone()));
    assert_eq!(create, &Call::StreamCreate);
    let (grid, block, params) = launch_parts(launch);
    assert_eq!((grid, block), (&[3, 4, 1], &[1, 256, 1]));
    // Each store's descriptor reaches the kernel with its own address and strides: nothing
    // packed, nothing copied (the strided `out` included).
    let (a, b, out) = (a as i64, b as i64, out as i64);
    assert!(passes(params, &[a, a, 0, 3, 1000, 1000, 1]), "{params:x?}");
    assert!(passes(params, &[b, b, 0, 1, 1000, 1000, 1]), "{params:x?}");
    assert!(
        passes(params, &[out, out, 0, 3, 1000, 1003, 1]),
        "{params:x?}"
    );
    assert!(params.contains(&2.0f64.to_bits()), "{params:x?}");
    assert_eq!(
        (sync, destroy),
        (&Call::StreamSynchronize, &Call::StreamDestroy)
    );

    // The module is loaded once per kernel, not per call.
    // SAFETY: as above.
    unsafe { kernel.enqueue(&memrefs, &[Scalar::F64(2.0)]) }.expect("enqueues");
    let again = recording_runtime::take();
    assert_eq!(again.len(), 5, "{again:?}");
    assert_eq!(again[0], Call::GetFunction(kernel_name.clone()));

    // An empty sub-store still goes through the host code, with an empty grid.
    let empty = [
        device(a as usize, &[0, 1000], &[1000, 1]),
        device(b as usize, &[1, 1000], &[1000, 1]),
        device(0, &[0, 1000], &[1000, 1]),
        device(out as usize, &[0, 1000], &[1003, 1]),
    ];
    // SAFETY: as above.
    unsafe { kernel.enqueue(&empty, &[Scalar::F64(2.0)]) }.expect("enqueues");
    let calls = recording_runtime::take();
    assert!(
        calls
            .iter()
            .any(|c| matches!(c, Call::Launch { grid, .. } if grid == &[0, 4, 1])),
        "{calls:?}"
    );
}

#[test]
fn arguments_that_do_not_fit_are_refused_before_anything_is_enqueued() {
    let kernel = sm90().kernel(&add_then_scale()).expect("compiles");
    let memrefs = [
        device(0x1000, &[2, 2], &[2, 1]),
        device(0x2000, &[1, 2], &[2, 1]),
        device(0, &[2, 2], &[2, 1]),
        device(0x3000, &[2, 2], &[2, 1]),
    ];
    recording_runtime::take();
    // SAFETY: each call fails its argument check; nothing runs.
    let refused = [
        unsafe { kernel.enqueue(&memrefs[..3], &[Scalar::F64(2.0)]) },
        unsafe { kernel.enqueue(&memrefs, &[]) },
        unsafe {
            kernel.enqueue(
                &[
                    memrefs[0],
                    memrefs[1],
                    memrefs[2],
                    device(0x3000, &[2, 2], &[4, 2]),
                ],
                &[Scalar::F64(2.0)],
            )
        },
    ];
    for outcome in refused {
        match outcome {
            Err(GpuError::Arguments { kernel, reason }) => {
                assert_eq!(kernel, "add+mul");
                assert!(!reason.is_empty());
            }
            other => panic!("expected an argument error, got {other:?}"),
        }
    }
    assert_eq!(recording_runtime::take(), vec![], "nothing was enqueued");
}

/// `out = x * x + x`, the multiply and the add with fast-math `flags` (e.g. `contract`).
fn square_plus(flags: &'static str) -> KernelSignature {
    let (name, body) = match flags {
        "" => (
            "jit_test.square_plus",
            "%m = arith.mulf %a, %a : {f}\n    %y = arith.addf %m, %a : {f}",
        ),
        "contract" => (
            "jit_test.square_plus_contract",
            "%m = arith.mulf %a, %a fastmath<contract> : {f}\n    %y = arith.addf %m, %a fastmath<contract> : {f}",
        ),
        other => panic!("no kernel with flags {other}"),
    };
    unary(name, body, DType::F64)
}

#[test]
fn multiplies_and_adds_are_not_contracted_unless_the_source_asks() {
    let jit = sm90();
    let modules = jit.ptx_for(&square_plus("")).expect("compiles");
    check_sm90(&modules);
    let ptx = &modules[0].ptx;
    // As on the CPU: a rounded multiply, then a rounded add.
    assert!(!ptx.contains("fma"), "{ptx}");
    assert!(ptx.contains("mul.rn.f64"), "{ptx}");
    assert!(ptx.contains("add.rn.f64"), "{ptx}");
    // Where the source allows contraction (as the math prelude's polynomials do), the
    // device fuses them, as the CPU does where it has FMA.
    let modules = jit.ptx_for(&square_plus("contract")).expect("compiles");
    let ptx = &modules[0].ptx;
    assert!(ptx.contains("fma.rn.f64"), "{ptx}");
}

/// `out = x`: an identity `linalg.generic` once the bit casts fold (the array library's
/// copy kernel, e.g. for slicing and assignment).
fn copy() -> KernelSignature {
    unary(
        "jit_test.copy",
        "%i = arith.bitcast %a : {f} to i64\n    %y = arith.bitcast %i : i64 to {f}",
        DType::F64,
    )
}

#[test]
fn a_sub_store_copy_runs_on_the_device() {
    let jit = sm90();
    let modules = jit.ptx_for(&copy()).expect("compiles for the GPU");
    assert_eq!(check_sm90(&modules), 1, "{modules:#?}");
    let kernel = jit.kernel(&copy()).expect("cached");
    // A 2 x 300 block of a device buffer 512 wide into another 700 wide: one launch over the
    // block's elements, both views passed as they are.
    let (x, out) = (0x5000_0000usize, 0x6000_0000usize);
    let memrefs = [
        device(x, &[2, 300], &[512, 1]),
        device(out, &[2, 300], &[700, 1]),
    ];
    let launches = launches_of(&kernel, &memrefs);
    let [Call::Launch { grid, params, .. }] = &launches[..] else {
        panic!("expected one launch, got {launches:?}");
    };
    assert_eq!(grid, &[2, 2, 1]);
    let (x, out) = (x as i64, out as i64);
    assert!(passes(params, &[x, x, 0, 2, 300, 512, 1]), "{params:x?}");
    assert!(
        passes(params, &[out, out, 0, 2, 300, 700, 1]),
        "{params:x?}"
    );
}

/// CSR SpMV as the sparse library generates it: `y[i] = sum over k in starts[i]..ends[i] of
/// values[k] * x[columns[k]]`, an `scf.for` over the rows inserting into `y`.
struct Spmv;

impl MlirGenerator for Spmv {
    fn generate(&self, symbol: &str, _sig: &MlirSignature<'_>) -> Result<String, KernelError> {
        let (f, i) = ("tensor<?xf64>", "tensor<?xi64>");
        Ok(format!(
            "func.func private @{symbol}(%y: {f}, %starts: {i}, %ends: {i}, %columns: tensor<?xi32>, \
%values: {f}, %x: {f}) -> ({f}) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %rows = tensor.dim %y, %c0 : {f}
  %out = scf.for %i = %c0 to %rows step %c1 iter_args(%acc_y = %y) -> ({f}) {{
    %lo_i64 = tensor.extract %starts[%i] : {i}
    %hi_i64 = tensor.extract %ends[%i] : {i}
    %lo = arith.index_cast %lo_i64 : i64 to index
    %hi = arith.index_cast %hi_i64 : i64 to index
    %sum = scf.for %k = %lo to %hi step %c1 iter_args(%acc = %zero) -> (f64) {{
      %col = tensor.extract %columns[%k] : tensor<?xi32>
      %j = arith.index_cast %col : i32 to index
      %v = tensor.extract %values[%k] : {f}
      %xj = tensor.extract %x[%j] : {f}
      %prod = arith.mulf %v, %xj : f64
      %next = arith.addf %acc, %prod : f64
      scf.yield %next : f64
    }}
    %row = tensor.insert %sum into %acc_y[%i] : {f}
    scf.yield %row : {f}
  }}
  return %out : {f}
}}"
        ))
    }
}

fn spmv() -> KernelSignature {
    let kind = TaskKind::lookup("jit_test.spmv").unwrap_or_else(|| {
        TaskKind::builder("jit_test.spmv")
            .arg("y", DType::F64, Privilege::Write)
            .arg("starts", DType::I64, Privilege::Read)
            .arg("ends", DType::I64, Privilege::Read)
            .arg("columns", DType::I32, Privilege::Read)
            .arg("values", DType::F64, Privilege::Read)
            .arg("x", DType::F64, Privilege::Read)
            .mlir(Arc::new(Spmv))
            .register(|_| Ok(()))
            .expect("registers")
    });
    let vector = |store, dtype, privilege| diffuse_jit::KernelParam {
        dtype,
        rank: 1,
        ..param(store, privilege, false, 0)
    };
    let read = Privilege::Read;
    KernelSignature {
        name: "spmv".into(),
        steps: vec![KernelStep {
            kind,
            bindings: (0..6)
                .map(|p| (p, if p == 0 { Privilege::Write } else { read }))
                .collect(),
        }],
        params: vec![
            vector(0, DType::F64, Privilege::Write),
            vector(1, DType::I64, read),
            vector(2, DType::I64, read),
            vector(3, DType::I32, read),
            vector(4, DType::F64, read),
            vector(5, DType::F64, read),
        ],
    }
}

#[test]
fn csr_spmv_runs_one_row_per_thread() {
    let jit = sm90();
    let modules = jit.ptx_for(&spmv()).expect("compiles for the GPU");
    // One kernel storing each row's sum once, after a loop over the row's entries; the
    // products are rounded before they are added, as on the CPU.
    assert_eq!(modules.len(), 1, "{modules:#?}");
    assert_eq!(check_sm90(&modules), 1, "{}", modules[0].ptx);
    let ptx = &modules[0].ptx;
    assert!(ptx.contains("bra"), "{ptx}");
    assert!(!ptx.contains("fma"), "{ptx}");
    assert!(ptx.contains("mul.rn.f64"), "{ptx}");
    // 1000 rows: four blocks of 256 threads, every descriptor as given.
    let kernel = jit.kernel(&spmv()).expect("cached");
    let addresses = [0x1000usize, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000];
    let entries: &'static [i64] = &[5000];
    let memrefs = [
        device(addresses[0], &[1000], &[1]),
        device(addresses[1], &[1000], &[1]),
        device(addresses[2], &[1000], &[1]),
        device(addresses[3], entries, &[1]),
        device(addresses[4], entries, &[1]),
        device(addresses[5], &[800], &[1]),
    ];
    let launches = launches_of(&kernel, &memrefs);
    let [Call::Launch {
        grid,
        block,
        params,
    }] = &launches[..]
    else {
        panic!("expected one launch, got {launches:?}");
    };
    assert_eq!((grid, block), (&[4, 1, 1], &[256, 1, 1]));
    for (address, memref) in addresses.iter().zip(&memrefs) {
        let a = *address as i64;
        assert!(
            passes(params, &[a, a, 0, memref.sizes[0], 1]),
            "{params:x?}"
        );
    }
}

#[test]
fn the_libm_functions_compile_for_the_device_in_both_precisions() {
    let jit = sm90();
    for (name, dtype) in [
        ("jit_test.libm64", DType::F64),
        ("jit_test.libm32", DType::F32),
    ] {
        let modules = jit
            .ptx_for(&unary(name, LIBM, dtype))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        // Self-contained (no `.extern`), one kernel, one store; computed in f64 with one
        // rounding to f32 per function for f32.
        assert_eq!(modules.len(), 1, "{modules:#?}");
        assert_eq!(check_sm90(&modules), 1, "{}", modules[0].ptx);
        let ptx = &modules[0].ptx;
        assert!(!ptx.contains("call"), "{ptx}");
        assert!(ptx.contains("div.rn.f64"), "{ptx}");
        if dtype == DType::F32 {
            assert!(ptx.contains("cvt.rn.f32.f64"), "{ptx}");
        }
    }
}

/// Integer arithmetic and casts as the array library's kernels use them.
const INTEGER: &str = "%c7 = arith.constant 7 : {f}
    %c3 = arith.constant 3 : {f}
    %r = arith.remsi %a, %c7 : {f}
    %u = arith.remui %a, %c7 : {f}
    %d = arith.divsi %a, %c3 : {f}
    %s = arith.shrsi %a, %c3 : {f}
    %m = arith.muli %r, %u : {f}
    %f = arith.sitofp %m : {f} to f64
    %g = arith.uitofp %d : {f} to f64
    %h = arith.maximumf %f, %g : f64
    %k = arith.fptosi %h : f64 to {f}
    %t = arith.trunci %k : {f} to i8
    %e = arith.extsi %t : i8 to {f}
    %x0 = arith.xori %e, %s : {f}
    %y = arith.addi %x0, %m : {f}";

#[test]
fn integer_arithmetic_and_casts_compile_for_the_device() {
    let modules = sm90()
        .ptx_for(&unary("jit_test.integer", INTEGER, DType::I64))
        .expect("compiles for the GPU");
    // (LLVM may store the i64 as two 32-bit halves.)
    assert!(check_sm90(&modules) >= 1, "{}", modules[0].ptx);
    let ptx = &modules[0].ptx;
    assert!(ptx.contains("rem.s64"), "{ptx}");
    assert!(ptx.contains("cvt.rzi.s64.f64"), "{ptx}");
}

/// `y = A x` as the array library writes a matvec: `y` filled with -0.0, then a
/// `linalg.generic` with a parallel row dimension and a reduction column dimension.
struct Matvec;

impl MlirGenerator for Matvec {
    fn generate(&self, symbol: &str, _sig: &MlirSignature<'_>) -> Result<String, KernelError> {
        Ok(format!(
            "func.func private @{symbol}(%a: tensor<?x?xf64>, %x: tensor<?xf64>, %y: tensor<?xf64>) -> tensor<?xf64> {{
  %zero = arith.constant -0.0 : f64
  %filled = linalg.fill ins(%zero : f64) outs(%y : tensor<?xf64>) -> tensor<?xf64>
  %r = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i)>],
      iterator_types = [\"parallel\", \"reduction\"]}}
      ins(%a, %x : tensor<?x?xf64>, tensor<?xf64>) outs(%filled : tensor<?xf64>) {{
  ^bb0(%aij: f64, %xj: f64, %acc: f64):
    %p = arith.mulf %aij, %xj : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  }} -> tensor<?xf64>
  return %r : tensor<?xf64>
}}"
        ))
    }
}

#[test]
fn a_matvec_runs_one_row_per_thread() {
    let kind = TaskKind::lookup("jit_test.matvec").unwrap_or_else(|| {
        TaskKind::builder("jit_test.matvec")
            .arg("a", DType::F64, Privilege::Read)
            .arg("x", DType::F64, Privilege::Read)
            .arg("y", DType::F64, Privilege::Write)
            .mlir(Arc::new(Matvec))
            .register(|_| Ok(()))
            .expect("registers")
    });
    let vector = |store, privilege| diffuse_jit::KernelParam {
        rank: 1,
        ..param(store, privilege, false, 0)
    };
    let signature = KernelSignature {
        name: "matvec".into(),
        steps: vec![KernelStep {
            kind,
            bindings: vec![
                (0, Privilege::Read),
                (1, Privilege::Read),
                (2, Privilege::Write),
            ],
        }],
        params: vec![
            param(0, Privilege::Read, false, 0),
            vector(1, Privilege::Read),
            vector(2, Privilege::Write),
        ],
    };
    let jit = sm90();
    let modules = jit.ptx_for(&signature).expect("compiles for the GPU");
    let kernel = jit.kernel(&signature).expect("cached");
    let launches = launches_of(
        &kernel,
        &[
            device(0x1000, &[1000, 300], &[300, 1]),
            device(0x2000, &[300], &[1]),
            device(0x3000, &[1000], &[1]),
        ],
    );
    // The fill and the product: each a kernel over the 1000 rows in blocks of 256 threads
    // (the loops are 1-d though `a` is 2-d), the product's columns summed in order by each
    // row's thread, without contraction.
    assert_eq!(check_sm90(&modules), 2, "{modules:#?}");
    for launch in &launches {
        let (grid, block, _) = launch_parts(launch);
        assert_eq!((grid, block), (&[4, 1, 1], &[256, 1, 1]));
    }
    assert_eq!(launches.len(), 2);
    let ptx: String = modules.iter().map(|m| m.ptx.as_str()).collect();
    assert!(ptx.contains("bra"), "{ptx}");
    assert!(!ptx.contains("fma"), "{ptx}");
}

#[test]
fn a_full_reduction_runs_as_two_launches_of_fixed_shape() {
    let jit = sm90();
    let kernel = jit
        .kernel(&super::sum_exp())
        .expect("a reduction compiles for the GPU");
    // One workspace: a partial per block of the first launch.
    assert_eq!(kernel.workspace_bytes(), &[1024 * 8]);
    let modules = kernel.ptx();
    assert_eq!(modules.len(), 2, "{modules:#?}");
    check_sm90(modules);
    for m in modules {
        // A tree in shared memory, with barriers between its levels.
        assert!(m.ptx.contains(".shared"), "{}", m.ptx);
        assert!(m.ptx.contains("bar.sync"), "{}", m.ptx);
    }
    let (x, acc, workspace) = (0x7000_0000usize, 0x7100_0000usize, 0x7200_0000usize);
    let memrefs = [
        device(x, &[100_000], &[1]),
        device(acc, &[], &[]),
        device(workspace, &[1024], &[1]),
    ];
    let launches = launches_of(&kernel, &memrefs);
    let [first, second] = &launches[..] else {
        panic!("expected two launches, got {launches:#?}");
    };
    // The shapes depend on the number of elements only (one per thread up to 1024 blocks),
    // never on the GPU: neither does the result.
    let (grid, block, params) = launch_parts(first);
    assert_eq!((*grid, *block), ([391, 1, 1], [256, 1, 1]));
    assert!(params.contains(&(x as u64)), "{params:x?}");
    assert!(params.contains(&(workspace as u64)), "{params:x?}");
    assert!(!params.contains(&(acc as u64)), "{params:x?}");
    let (grid, block, params) = launch_parts(second);
    assert_eq!((*grid, *block), ([1, 1, 1], [256, 1, 1]));
    assert!(params.contains(&(workspace as u64)), "{params:x?}");
    assert!(params.contains(&(acc as u64)), "{params:x?}");
    for (elements, blocks) in [(10_000_000i64, 1024), (10, 1), (0, 1), (512, 2)] {
        let sizes: &'static [i64] = Box::leak(Box::new([elements]));
        let memrefs = [
            device(x, sizes, &[1]),
            device(acc, &[], &[]),
            device(workspace, &[1024], &[1]),
        ];
        let launches = launches_of(&kernel, &memrefs);
        let Some(Call::Launch { grid, .. }) = launches.first() else {
            panic!("no launch for {elements} elements: {launches:#?}");
        };
        assert_eq!(grid[0], blocks, "{elements} elements");
    }
    // Without its workspace the call is refused.
    // SAFETY: refused before anything is launched.
    let missing = unsafe { kernel.enqueue(&memrefs[..2], &[]) };
    assert!(
        matches!(missing, Err(GpuError::Arguments { .. })),
        "{missing:?}"
    );
}

#[test]
fn a_kernel_over_scalars_runs_in_one_thread() {
    let mut signature = unary("jit_test.sqrt", "%y = math.sqrt %a : {f}", DType::F64);
    for param in &mut signature.params {
        param.rank = 0;
    }
    let kernel = sm90().kernel(&signature).expect("compiles for the GPU");
    assert!(kernel.workspace_bytes().is_empty());
    let modules = kernel.ptx();
    assert_eq!(check_sm90(modules), 1, "{modules:#?}");
    assert!(modules[0].ptx.contains("sqrt.rn.f64"), "{}", modules[0].ptx);
    let (x, out) = (0x7000_0000usize, 0x7100_0000usize);
    let launches = launches_of(&kernel, &[device(x, &[], &[]), device(out, &[], &[])]);
    let [Call::Launch { grid, block, .. }] = &launches[..] else {
        panic!("expected one launch, got {launches:#?}");
    };
    assert_eq!((*grid, *block), ([1, 1, 1], [1, 1, 1]));
}
