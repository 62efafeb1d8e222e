//! The MLIR generators against the native kernels. Each case runs an operation natively,
//! then runs the generated kernel of the kind it registered on the same values: the kernel
//! is wrapped in a caller shaped like the JIT's (strided memrefs handed to the kernel as
//! tensors, results materialized into them), compiled with `mlir-opt-22` through the JIT's
//! tensor pipeline and run by `mlir-runner-22`, which prints every written element's bits.
//! The values are picked for their edge cases (NaN, infinities, signed zeros, integer
//! extremes, out-of-range and double-rounding casts), and the results must be the native
//! ones bit for bit (any NaN equals any NaN). The tests say so and pass where the MLIR tools
//! are not installed. Float sums and dot products, whose rounding depends on the order, are
//! also compared inside fused kernels the JIT compiles, against the same fused tasks run
//! natively.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

use diffuse_array::{
    binary, full, unary, where_, Array, ArrayContext, BinaryOp, DType, Operand, Orientation,
    UnaryOp,
};
use diffuse_ir::{
    tensor_type, Element, HostData, MlirArg, MlirSignature, Privilege, ReductionOp, Scalar,
    TaskKind,
};

use crate::cx;

const DTYPES: [DType; 5] = [DType::F64, DType::F32, DType::I64, DType::I32, DType::Bool];
const NUMERIC: [DType; 4] = [DType::F64, DType::F32, DType::I64, DType::I32];

/// The MLIR 22 tools the JIT's prefix provides.
struct Tools {
    opt: PathBuf,
    runner: PathBuf,
    runtime: PathBuf,
}

impl Tools {
    /// The tools under `MLIR_SYS_220_PREFIX` (default `/usr/lib/llvm-22`), if all are there.
    fn find() -> Option<Tools> {
        let prefix = PathBuf::from(
            std::env::var("MLIR_SYS_220_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-22".into()),
        );
        let tools = Tools {
            opt: prefix.join("bin/mlir-opt"),
            runner: prefix.join("bin/mlir-runner"),
            runtime: prefix.join("lib/libmlir_c_runner_utils.so"),
        };
        let found = [&tools.opt, &tools.runner, &tools.runtime]
            .iter()
            .all(|p| p.exists());
        if !found {
            eprintln!(
                "skipped: mlir-opt, mlir-runner or libmlir_c_runner_utils.so missing under {}",
                prefix.display()
            );
        }
        found.then_some(tools)
    }
}

/// One store argument: its shape and row-major contents.
#[derive(Clone, Debug)]
struct Tensor {
    shape: Vec<i64>,
    data: HostData,
}

impl Tensor {
    fn new(shape: &[i64], data: HostData) -> Self {
        let volume: i64 = shape.iter().product();
        assert_eq!(volume as usize, data.len(), "shape {shape:?}");
        Tensor {
            shape: shape.to_vec(),
            data,
        }
    }

    /// A tensor of `shape` holding `sentinel(dtype)` everywhere: what a written argument
    /// holds before the kernel overwrites it.
    fn sentinel(shape: &[i64], dtype: DType) -> Self {
        let n = shape.iter().product::<i64>() as usize;
        let data = match dtype {
            DType::F64 => HostData::F64(vec![-12345.5; n]),
            DType::F32 => HostData::F32(vec![-12345.5; n]),
            DType::I64 => HostData::I64(vec![-12345; n]),
            DType::I32 => HostData::I32(vec![-12345; n]),
            DType::Bool => HostData::Bool(vec![true; n]),
            DType::C64 | DType::C128 => unreachable!("complex values are not compiled"),
        };
        Tensor::new(shape, data)
    }

    /// The tensor as an array of `cx`.
    fn array(&self, cx: &ArrayContext) -> Array {
        let shape = &self.shape;
        match self.data.clone() {
            HostData::F64(v) => Array::from_vec(cx, shape, v),
            HostData::F32(v) => Array::from_vec(cx, shape, v),
            HostData::I64(v) => Array::from_vec(cx, shape, v),
            HostData::I32(v) => Array::from_vec(cx, shape, v),
            HostData::Bool(v) => Array::from_vec(cx, shape, v),
            HostData::C64(_) | HostData::C128(_) => unreachable!("complex values are not compiled"),
        }
        .unwrap()
    }

    /// The values of `a`.
    fn of(a: &Array) -> Self {
        let data = match a.dtype() {
            DType::F64 => HostData::F64(a.to_vec().unwrap()),
            DType::F32 => HostData::F32(a.to_vec().unwrap()),
            DType::I64 => HostData::I64(a.to_vec().unwrap()),
            DType::I32 => HostData::I32(a.to_vec().unwrap()),
            DType::Bool => HostData::Bool(a.to_vec().unwrap()),
            DType::C64 | DType::C128 => unreachable!("complex values are not compiled"),
        };
        Tensor::new(a.shape().as_slice(), data)
    }
}

/// One kernel run: the kind, the initial contents of its store arguments, its scalars, and
/// what each argument that is not `Read` must hold afterwards.
struct Case {
    kind: String,
    args: Vec<Tensor>,
    scalars: Vec<Scalar>,
    expected: Vec<HostData>,
}

/// Edge-case values of `dtype`.
fn specials(dtype: DType) -> HostData {
    const F: [f64; 18] = [
        0.0,
        -0.0,
        1.0,
        -1.5,
        2.5,
        0.1,
        -7.25,
        1e300,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        3e9,
        -3e9,
        2147483647.9,
        -2147483648.5,
        9.3e18,
        -9.3e18,
        5e-324,
    ];
    match dtype {
        DType::F64 => HostData::F64(F.to_vec()),
        DType::F32 => HostData::F32(F.iter().map(|&x| x as f32).collect()),
        // 2^60 + 2^36 + 1 rounds to a different f32 directly than through f64.
        DType::I64 => HostData::I64(vec![
            0,
            1,
            -1,
            2,
            -7,
            46341,
            12_345_678_901,
            (1 << 53) + 1,
            (1 << 60) + (1 << 36) + 1,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
            -(1 << 31),
        ]),
        DType::I32 => HostData::I32(vec![
            0,
            1,
            -1,
            2,
            -7,
            46341,
            123_456,
            i32::MAX,
            i32::MIN,
            i32::MIN + 1,
        ]),
        DType::Bool => HostData::Bool(vec![false, true]),
        DType::C64 | DType::C128 => unreachable!("complex values are not compiled"),
    }
}

/// Small integers as `dtype`: sums and products of them are exact in any order.
fn small(dtype: DType, values: &[i64]) -> HostData {
    match dtype {
        DType::F64 => HostData::F64(values.iter().map(|&v| v as f64).collect()),
        DType::F32 => HostData::F32(values.iter().map(|&v| v as f32).collect()),
        DType::I64 => HostData::I64(values.to_vec()),
        DType::I32 => HostData::I32(values.iter().map(|&v| v as i32).collect()),
        DType::Bool => HostData::Bool(values.iter().map(|&v| v != 0).collect()),
        DType::C64 | DType::C128 => unreachable!("complex values are not compiled"),
    }
}

/// A scalar operand of `dtype`.
fn scalar(dtype: DType) -> Scalar {
    match dtype {
        DType::F64 => Scalar::F64(2.5),
        DType::F32 => Scalar::F32(-0.0),
        DType::I64 => Scalar::I64(-3),
        DType::I32 => Scalar::I32(i32::MAX),
        DType::Bool => Scalar::Bool(true),
        DType::C64 | DType::C128 => unreachable!("complex values are not compiled"),
    }
}

/// A second scalar operand of `dtype`.
fn other_scalar(dtype: DType) -> Scalar {
    match dtype {
        DType::F64 => Scalar::F64(f64::NAN),
        DType::F32 => Scalar::F32(1.5),
        DType::I64 => Scalar::I64(i64::MIN),
        DType::I32 => Scalar::I32(0),
        DType::Bool => Scalar::Bool(false),
        DType::C64 | DType::C128 => unreachable!("complex values are not compiled"),
    }
}

/// `data` in reverse order.
fn reversed(data: &HostData) -> HostData {
    fn rev<T: Clone>(v: &[T]) -> Vec<T> {
        v.iter().rev().cloned().collect()
    }
    match data {
        HostData::F64(v) => HostData::F64(rev(v)),
        HostData::F32(v) => HostData::F32(rev(v)),
        HostData::I64(v) => HostData::I64(rev(v)),
        HostData::I32(v) => HostData::I32(rev(v)),
        HostData::Bool(v) => HostData::Bool(rev(v)),
        HostData::C64(_) | HostData::C128(_) => unreachable!("complex values are not compiled"),
    }
}

/// The MLIR literals of `data`'s values: floats by their bits, bools as bytes.
fn literals(data: &HostData) -> Vec<String> {
    match data {
        HostData::F64(v) => v
            .iter()
            .map(|x| format!("0x{:016X}", x.to_bits()))
            .collect(),
        HostData::F32(v) => v.iter().map(|x| format!("0x{:08X}", x.to_bits())).collect(),
        HostData::I64(v) => v.iter().map(ToString::to_string).collect(),
        HostData::I32(v) => v.iter().map(ToString::to_string).collect(),
        HostData::Bool(v) => v.iter().map(|&b| u8::from(b).to_string()).collect(),
        HostData::C64(_) | HostData::C128(_) => unreachable!("complex values are not compiled"),
    }
}

/// A `dense<...>` body for row-major `lits` of `shape` (empty for no elements).
fn nested(lits: &[String], shape: &[i64]) -> String {
    if lits.is_empty() {
        return String::new();
    }
    match shape.split_first() {
        None => lits[0].clone(),
        Some((&n, rest)) => {
            let rows: Vec<String> = lits
                .chunks(lits.len() / n as usize)
                .map(|c| nested(c, rest))
                .collect();
            format!("[{}]", rows.join(", "))
        }
    }
}

fn scalar_literal(s: Scalar) -> (String, &'static str) {
    match s {
        Scalar::F64(v) => (format!("0x{:016X}", v.to_bits()), "f64"),
        Scalar::F32(v) => (format!("0x{:08X}", v.to_bits()), "f32"),
        Scalar::I64(v) => (v.to_string(), "i64"),
        Scalar::I32(v) => (v.to_string(), "i32"),
        Scalar::Bool(v) => (u8::from(v).to_string(), "i8"),
        Scalar::C64(_) | Scalar::C128(_) => unreachable!("complex values are not compiled"),
    }
}

/// The static memref type of `t` and the strided one the JIT hands over.
fn memref_types(t: &Tensor, elem: &str) -> (String, String) {
    let dims: String = t.shape.iter().map(|e| format!("{e}x")).collect();
    let rank = t.shape.len();
    let mut strides = vec!["?"; rank.saturating_sub(1)];
    if rank > 0 {
        strides.push("1");
    }
    (
        format!("memref<{dims}{elem}>"),
        format!(
            "memref<{}{elem}, strided<[{}], offset: ?>>",
            "?x".repeat(rank),
            strides.join(", ")
        ),
    )
}

/// The module running every case in order and printing the bits of every element of every
/// argument it changes.
fn module(cases: &[Case]) -> String {
    let (mut globals, mut kernels, mut main) = (String::new(), String::new(), String::new());
    main.push_str("  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n");
    for (c, case) in cases.iter().enumerate() {
        let kind = TaskKind::lookup(&case.kind)
            .unwrap_or_else(|| panic!("{} is not registered", case.kind));
        let generator = kind
            .mlir_generator()
            .unwrap_or_else(|| panic!("{} has no MLIR generator", case.kind));
        let args: Vec<MlirArg> = kind
            .args()
            .iter()
            .zip(&case.args)
            .map(|(decl, t)| {
                assert_eq!(decl.dtype, t.data.dtype(), "{}", case.kind);
                MlirArg {
                    dtype: decl.dtype,
                    rank: t.shape.len(),
                    privilege: decl.privilege,
                    unit_dims: (0..t.shape.len())
                        .filter(|&d| t.shape[d] == 1)
                        .fold(0, |bits, d| bits | 1 << d),
                }
            })
            .collect();
        let scalars: Vec<DType> = case.scalars.iter().map(|s| s.dtype()).collect();
        assert_eq!(scalars, kind.scalars(), "{}", case.kind);
        let sig = MlirSignature::host(&args, &scalars);
        let text = generator
            .generate(&format!("k{c}"), &sig)
            .unwrap_or_else(|e| panic!("{e}"));
        kernels.push_str(&text);
        let mut operands = Vec::new();
        let mut types = Vec::new();
        let mut written = Vec::new();
        for (i, (t, arg)) in case.args.iter().zip(&args).enumerate() {
            let elem = diffuse_ir::element_type(arg.dtype);
            let (fixed, strided) = memref_types(t, elem);
            let lits = literals(&t.data);
            let _ = writeln!(
                globals,
                "memref.global \"private\" constant @g{c}_{i} : {fixed} = dense<{}>",
                nested(&lits, &t.shape)
            );
            let _ = writeln!(main, "  %g{c}_{i} = memref.get_global @g{c}_{i} : {fixed}");
            let mutated = arg.privilege != Privilege::Read;
            let buffer = if mutated {
                let _ = writeln!(
                    main,
                    "  %b{c}_{i} = memref.alloc() : {fixed}\n  memref.copy %g{c}_{i}, %b{c}_{i} : {fixed} to {fixed}"
                );
                format!("%b{c}_{i}")
            } else {
                format!("%g{c}_{i}")
            };
            let tensor = tensor_type(arg);
            let _ = writeln!(
                main,
                "  %m{c}_{i} = memref.cast {buffer} : {fixed} to {strided}\n  %t{c}_{i} = bufferization.to_tensor %m{c}_{i} restrict{} : {strided} to {tensor}",
                if mutated { " writable" } else { "" }
            );
            operands.push(format!("%t{c}_{i}"));
            types.push(tensor.clone());
            if mutated {
                written.push((i, strided, tensor, elem));
            }
        }
        for (j, s) in case.scalars.iter().enumerate() {
            let (lit, ty) = scalar_literal(*s);
            let _ = writeln!(main, "  %s{c}_{j} = arith.constant {lit} : {ty}");
            operands.push(format!("%s{c}_{j}"));
            types.push(ty.to_string());
        }
        let results: Vec<&str> = written.iter().map(|w| w.2.as_str()).collect();
        let _ = writeln!(
            main,
            "  %r{c}:{} = func.call @k{c}({}) : ({}) -> ({})",
            written.len(),
            operands.join(", "),
            types.join(", "),
            results.join(", ")
        );
        for (n, (i, strided, tensor, elem)) in written.iter().enumerate() {
            let _ = writeln!(
                main,
                "  bufferization.materialize_in_destination %r{c}#{n} in restrict writable %m{c}_{i} : ({tensor}, {strided}) -> ()"
            );
            print_elements(
                &mut main,
                &format!("{c}_{i}"),
                &case.args[*i],
                strided,
                elem,
            );
        }
    }
    format!("{globals}{kernels}func.func @main() {{\n{main}  return\n}}\n")
}

/// Loops printing the bits of every element of `%m<id>` (of `t`'s shape), one per line.
fn print_elements(main: &mut String, id: &str, t: &Tensor, strided: &str, elem: &str) {
    let rank = t.shape.len();
    let mut indices = Vec::new();
    for (d, &extent) in t.shape.iter().enumerate() {
        let _ = writeln!(
            main,
            "  %e{id}_{d} = arith.constant {extent} : index\n  scf.for %i{id}_{d} = %c0 to %e{id}_{d} step %c1 {{"
        );
        indices.push(format!("%i{id}_{d}"));
    }
    let _ = writeln!(
        main,
        "  %l{id} = memref.load %m{id}[{}] : {strided}",
        indices.join(", ")
    );
    let printed = match elem {
        "f64" => {
            let _ = writeln!(main, "  %p{id} = arith.bitcast %l{id} : f64 to i64");
            ("p", "i64")
        }
        "f32" => {
            let _ = writeln!(main, "  %p{id} = arith.bitcast %l{id} : f32 to i32");
            ("p", "i32")
        }
        other => ("l", other),
    };
    let _ = writeln!(main, "  vector.print %{}{id} : {}", printed.0, printed.1);
    main.push_str(&"  }\n".repeat(rank));
}

/// The JIT's tensor pipeline (inlining, fusion, bufferization, loops), then a lowering to
/// the LLVM dialect for the runner.
const PIPELINE: &str = "builtin.module(convert-math-to-libm,inline,\
    func.func(linalg-fuse-elementwise-ops),eliminate-empty-tensors,one-shot-bufferize,\
    func.func(convert-linalg-to-loops,canonicalize,cse),symbol-dce,\
    convert-scf-to-cf,expand-strided-metadata,finalize-memref-to-llvm,convert-vector-to-llvm,\
    convert-math-to-llvm,convert-arith-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,\
    reconcile-unrealized-casts)";

/// Compiles and runs the cases; the printed contents of each case's changed arguments.
fn run(tools: &Tools, family: &str, cases: &[Case]) -> Vec<Vec<HostData>> {
    let dir = std::env::temp_dir();
    let source = dir.join(format!(
        "diffuse-array-mlir-{family}-{}.mlir",
        std::process::id()
    ));
    let lowered = source.with_extension("llvm.mlir");
    std::fs::write(&source, module(cases)).unwrap();
    let opt = Command::new(&tools.opt)
        .arg(format!("--pass-pipeline={PIPELINE}"))
        .arg(&source)
        .arg("-o")
        .arg(&lowered)
        .output()
        .unwrap();
    assert!(
        opt.status.success(),
        "mlir-opt failed on {}:\n{}",
        source.display(),
        String::from_utf8_lossy(&opt.stderr)
    );
    let out = Command::new(&tools.runner)
        .args(["-e", "main", "-entry-point-result=void"])
        .arg(format!("-shared-libs={}", tools.runtime.display()))
        .arg(&lowered)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "mlir-runner failed on {}:\n{}",
        lowered.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let mut printed = stdout.lines().map(|l| {
        l.trim()
            .parse::<i64>()
            .unwrap_or_else(|_| panic!("unexpected output line {l:?}"))
    });
    let results = cases
        .iter()
        .map(|case| {
            case.expected
                .iter()
                .map(|want| {
                    let mut next = || printed.next().expect("too few printed values");
                    let n = want.len();
                    match want {
                        HostData::F64(_) => {
                            HostData::F64((0..n).map(|_| f64::from_bits(next() as u64)).collect())
                        }
                        HostData::F32(_) => HostData::F32(
                            (0..n)
                                .map(|_| f32::from_bits(next() as i32 as u32))
                                .collect(),
                        ),
                        HostData::I64(_) => HostData::I64((0..n).map(|_| next()).collect()),
                        HostData::I32(_) => HostData::I32((0..n).map(|_| next() as i32).collect()),
                        HostData::Bool(_) => HostData::Bool(
                            (0..n)
                                .map(|_| match next() {
                                    0 => false,
                                    1 => true,
                                    other => panic!("bool byte {other}"),
                                })
                                .collect(),
                        ),
                        HostData::C64(_) | HostData::C128(_) => {
                            unreachable!("complex values are not compiled")
                        }
                    }
                })
                .collect()
        })
        .collect();
    assert!(
        printed.next().is_none(),
        "more values printed than expected"
    );
    let _ = std::fs::remove_file(&source);
    let _ = std::fs::remove_file(&lowered);
    results
}

/// Bitwise equality, any NaN equal to any NaN.
fn same(a: &HostData, b: &HostData) -> Vec<usize> {
    fn diff<T>(a: &[T], b: &[T], eq: impl Fn(&T, &T) -> bool) -> Vec<usize> {
        (0..a.len()).filter(|&i| !eq(&a[i], &b[i])).collect()
    }
    match (a, b) {
        (HostData::F64(a), HostData::F64(b)) => diff(a, b, |x, y| {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }),
        (HostData::F32(a), HostData::F32(b)) => diff(a, b, |x, y| {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }),
        (HostData::I64(a), HostData::I64(b)) => diff(a, b, PartialEq::eq),
        (HostData::I32(a), HostData::I32(b)) => diff(a, b, PartialEq::eq),
        (HostData::Bool(a), HostData::Bool(b)) => diff(a, b, PartialEq::eq),
        _ => panic!("dtypes differ"),
    }
}

/// Runs the cases and checks every result against the native one.
fn check(family: &str, cases: Vec<Case>) {
    let Some(tools) = Tools::find() else {
        return;
    };
    let got = run(&tools, family, &cases);
    let mut failures = Vec::new();
    for (case, got) in cases.iter().zip(got) {
        for (want, got) in case.expected.iter().zip(&got) {
            let bad = same(want, got);
            if let Some(&i) = bad.first() {
                failures.push(format!(
                    "{}: {} of {} elements differ; first at {i}: native {:?}, MLIR {:?} (inputs {:?}, scalars {:?})",
                    case.kind,
                    bad.len(),
                    want.len(),
                    element(want, i),
                    element(got, i),
                    case.args.iter().map(|t| &t.shape).collect::<Vec<_>>(),
                    case.scalars
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn element(d: &HostData, i: usize) -> String {
    match d {
        HostData::F64(v) => format!("{} ({:#x})", v[i], v[i].to_bits()),
        HostData::F32(v) => format!("{} ({:#x})", v[i], v[i].to_bits()),
        HostData::I64(v) => v[i].to_string(),
        HostData::I32(v) => v[i].to_string(),
        HostData::Bool(v) => v[i].to_string(),
        HostData::C64(_) | HostData::C128(_) => unreachable!("complex values are not compiled"),
    }
}

/// A case for the kind `kind`, which ran natively to `result`: its store arguments are
/// `inputs` and then the written output (holding a sentinel on entry), its scalars `scalars`.
fn native_case(kind: String, inputs: &[&Tensor], scalars: Vec<Scalar>, result: &Array) -> Case {
    let want = Tensor::of(result);
    let mut args: Vec<Tensor> = inputs.iter().map(|&t| t.clone()).collect();
    args.push(Tensor::sentinel(&want.shape, want.data.dtype()));
    Case {
        kind,
        args,
        scalars,
        expected: vec![want.data],
    }
}

const UNARY: [UnaryOp; 30] = [
    UnaryOp::Copy,
    UnaryOp::Neg,
    UnaryOp::Abs,
    UnaryOp::Exp,
    UnaryOp::Log,
    UnaryOp::Sqrt,
    UnaryOp::Erf,
    UnaryOp::Sin,
    UnaryOp::Cos,
    UnaryOp::Tanh,
    UnaryOp::Not,
    UnaryOp::Floor,
    UnaryOp::Ceil,
    UnaryOp::Trunc,
    UnaryOp::Rint,
    UnaryOp::Tan,
    UnaryOp::Arcsin,
    UnaryOp::Arccos,
    UnaryOp::Arctan,
    UnaryOp::Sinh,
    UnaryOp::Cosh,
    UnaryOp::Log2,
    UnaryOp::Log10,
    UnaryOp::Log1p,
    UnaryOp::Expm1,
    UnaryOp::Sign,
    UnaryOp::IsNan,
    UnaryOp::IsInf,
    UnaryOp::IsFinite,
    UnaryOp::Invert,
];

const BINARY: [BinaryOp; 23] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Pow,
    BinaryOp::Maximum,
    BinaryOp::Minimum,
    BinaryOp::Less,
    BinaryOp::LessEqual,
    BinaryOp::Greater,
    BinaryOp::GreaterEqual,
    BinaryOp::Equal,
    BinaryOp::NotEqual,
    BinaryOp::And,
    BinaryOp::Or,
    BinaryOp::FloorDivide,
    BinaryOp::Remainder,
    BinaryOp::BitAnd,
    BinaryOp::BitOr,
    BinaryOp::BitXor,
    BinaryOp::LeftShift,
    BinaryOp::RightShift,
    BinaryOp::Arctan2,
];

#[test]
fn unary_kernels_match_native() {
    let cx = cx(1);
    let mut cases = Vec::new();
    for dtype in DTYPES {
        let x = Tensor::new(&[specials(dtype).len() as i64], specials(dtype));
        for op in UNARY {
            if op.result_dtype(dtype).is_err() {
                continue;
            }
            let result = unary(op, &x.array(&cx)).unwrap();
            let kind = format!("array.{}.{dtype}.a", op.name());
            cases.push(native_case(kind, &[&x], vec![], &result));
        }
    }
    check("unary", cases);
}

#[test]
fn binary_kernels_match_native() {
    let cx = cx(1);
    let mut cases = Vec::new();
    for dtype in DTYPES {
        let values = specials(dtype);
        let n = values.len() as i64;
        // Every pair of values: an n x 1 column broadcast against a row of n.
        let column = Tensor::new(&[n, 1], values.clone());
        let row = Tensor::new(&[n], values.clone());
        let s = scalar(dtype);
        for op in BINARY {
            if op.result_dtype(dtype).is_err() {
                continue;
            }
            let (a, b) = (column.array(&cx), row.array(&cx));
            let name = |pattern: &str| format!("array.{}.{dtype}.{pattern}", op.name());
            let r = binary(op, &a, &b).unwrap();
            cases.push(native_case(name("aa"), &[&column, &row], vec![], &r));
            let r = binary(op, &b, Operand::Scalar(s)).unwrap();
            cases.push(native_case(name("as"), &[&row], vec![s], &r));
            let r = binary(op, Operand::Scalar(s), &a).unwrap();
            cases.push(native_case(name("sa"), &[&column], vec![s], &r));
        }
    }
    // Six dimensions, broadcasting both ways, with unit dimensions in the output too.
    let a = Tensor::new(
        &[2, 1, 3, 1, 2, 1],
        small(DType::F64, &(0..12).collect::<Vec<_>>()),
    );
    let b = Tensor::new(
        &[1, 3, 2, 2, 1],
        small(DType::F64, &(-6..6).collect::<Vec<_>>()),
    );
    let r = binary(BinaryOp::Sub, &a.array(&cx), &b.array(&cx)).unwrap();
    assert_eq!(r.shape().as_slice(), [2, 1, 3, 2, 2, 1]);
    cases.push(native_case(
        "array.subtract.f64.aa".into(),
        &[&a, &b],
        vec![],
        &r,
    ));
    check("binary", cases);
}

#[test]
fn where_copy_and_fill_kernels_match_native() {
    let cx = cx(1);
    let mut cases = Vec::new();
    let cond = Tensor::new(&[2, 1], HostData::Bool(vec![true, false]));
    let c = cond.array(&cx);
    for dtype in DTYPES {
        let values = specials(dtype);
        let n = values.len() as i64;
        let a = Tensor::new(&[n], values.clone());
        let b = Tensor::new(&[1, n], reversed(&values));
        let (aa, ba) = (a.array(&cx), b.array(&cx));
        let s = scalar(dtype);
        let name = |pattern: &str| format!("array.where.{dtype}.a{pattern}");
        let r = where_(&c, &aa, &ba).unwrap();
        cases.push(native_case(name("aa"), &[&cond, &a, &b], vec![], &r));
        let r = where_(&c, &aa, Operand::Scalar(s)).unwrap();
        cases.push(native_case(name("as"), &[&cond, &a], vec![s], &r));
        let r = where_(&c, Operand::Scalar(s), &ba).unwrap();
        cases.push(native_case(name("sa"), &[&cond, &b], vec![s], &r));
        let other = other_scalar(dtype);
        let r = where_(&c, Operand::Scalar(s), Operand::Scalar(other)).unwrap();
        cases.push(native_case(name("ss"), &[&cond], vec![s, other], &r));
        // A scalar fill (`full`), and a broadcasting assignment of a row into a matrix.
        let r = full(&cx, &[3, 2], s).unwrap();
        cases.push(native_case(
            format!("array.copy.{dtype}.s"),
            &[],
            vec![s],
            &r,
        ));
        let dst = Tensor::sentinel(&[3, n], dtype).array(&cx);
        dst.assign(&aa).unwrap();
        cases.push(native_case(
            format!("array.copy.{dtype}.a"),
            &[&a],
            vec![],
            &dst,
        ));
        // A 0-d copy.
        let zero_d = Tensor::new(&[], small(dtype, &[1]));
        let r = unary(UnaryOp::Copy, &zero_d.array(&cx)).unwrap();
        cases.push(native_case(
            format!("array.copy.{dtype}.a"),
            &[&zero_d],
            vec![],
            &r,
        ));
    }
    check("where", cases);
}

#[test]
fn cast_kernels_match_native() {
    let cx = cx(1);
    let mut cases = Vec::new();
    for from in DTYPES {
        let x = Tensor::new(&[specials(from).len() as i64], specials(from));
        for to in DTYPES {
            let r = x.array(&cx).astype(to).unwrap();
            cases.push(native_case(
                format!("array.cast.{from}.{to}"),
                &[&x],
                vec![],
                &r,
            ));
        }
    }
    check("cast", cases);
}

/// `data` with `p` added to each value (wrapping for integers).
fn plus(data: HostData, p: i64) -> HostData {
    match data {
        HostData::F64(v) => HostData::F64(v.into_iter().map(|x| x + p as f64).collect()),
        HostData::F32(v) => HostData::F32(v.into_iter().map(|x| x + p as f32).collect()),
        HostData::I64(v) => HostData::I64(v.into_iter().map(|x| x.wrapping_add(p)).collect()),
        HostData::I32(v) => {
            HostData::I32(v.into_iter().map(|x| x.wrapping_add(p as i32)).collect())
        }
        HostData::Bool(_) => unreachable!(),
        HostData::C64(_) | HostData::C128(_) => unreachable!("complex values are not compiled"),
    }
}

/// The 0-d partial value `identity(op)` of `dtype`.
fn identity(dtype: DType, op: ReductionOp) -> HostData {
    match dtype {
        DType::F64 => HostData::F64(vec![f64::reduction_identity(op)]),
        DType::F32 => HostData::F32(vec![f32::reduction_identity(op)]),
        DType::I64 => HostData::I64(vec![i64::reduction_identity(op)]),
        DType::I32 => HostData::I32(vec![i32::reduction_identity(op)]),
        DType::Bool => unreachable!(),
        DType::C64 | DType::C128 => unreachable!("complex values are not compiled"),
    }
}

#[test]
fn reduction_kernels_match_native() {
    let cx = cx(1);
    let mut cases = Vec::new();
    let ints = [3, -1, 4, 1, -5, 9, 2, -6, 5, 3, 5, -8];
    for dtype in NUMERIC {
        // Sums of small integers are exact in any order; integer sums of extremes wrap
        // the same way in any order.
        let summed = if matches!(dtype, DType::I64 | DType::I32) {
            specials(dtype)
        } else {
            small(dtype, &ints)
        };
        let n = summed.len() as i64;
        let mut shapes = vec![vec![n], vec![1, n]];
        if n % 2 == 0 {
            shapes.push(vec![2, 1, n / 2]);
        }
        for shape in &shapes {
            let x = Tensor::new(shape, summed.clone());
            let y = Tensor::new(shape, reversed(&summed));
            let (xa, ya) = (x.array(&cx), y.array(&cx));
            // The partial value on entry is 10: the kernel must add to it.
            let ten = small(dtype, &[10]);
            for (name, inputs, result) in [
                ("sum", vec![x.clone()], xa.sum().unwrap()),
                ("dot", vec![x.clone(), y.clone()], xa.dot(&ya).unwrap()),
            ] {
                let mut args = inputs;
                args.push(Tensor::new(&[], ten.clone()));
                cases.push(Case {
                    kind: format!("array.{name}.{dtype}"),
                    args,
                    scalars: vec![],
                    expected: vec![plus(Tensor::of(&result).data, 10)],
                });
            }
        }
        // Max and min over the edge cases, with and without NaN, from the identity.
        let values = specials(dtype);
        let no_nan = Tensor::new(&[values.len() as i64 - 1], without_nan(&values));
        for x in [Tensor::new(&[values.len() as i64], values.clone()), no_nan] {
            let xa = x.array(&cx);
            for (name, op, result) in [
                ("max", ReductionOp::Max, xa.max().unwrap()),
                ("min", ReductionOp::Min, xa.min().unwrap()),
            ] {
                cases.push(Case {
                    kind: format!("array.{name}.{dtype}"),
                    args: vec![x.clone(), Tensor::new(&[], identity(dtype, op))],
                    scalars: vec![],
                    expected: vec![Tensor::of(&result).data],
                });
            }
        }
        // A 0-d input.
        let x = Tensor::new(&[], small(dtype, &[7]));
        cases.push(Case {
            kind: format!("array.sum.{dtype}"),
            args: vec![x, Tensor::new(&[], small(dtype, &[10]))],
            scalars: vec![],
            expected: vec![small(dtype, &[17])],
        });
    }
    check("reduce", cases);
}

/// The values without NaN (integers have none, and lose their last value instead).
fn without_nan(data: &HostData) -> HostData {
    match data {
        HostData::F64(v) => HostData::F64(v.iter().copied().filter(|x| !x.is_nan()).collect()),
        HostData::F32(v) => HostData::F32(v.iter().copied().filter(|x| !x.is_nan()).collect()),
        HostData::I64(v) => HostData::I64(v[..v.len() - 1].to_vec()),
        HostData::I32(v) => HostData::I32(v[..v.len() - 1].to_vec()),
        HostData::Bool(_) => unreachable!(),
        HostData::C64(_) | HostData::C128(_) => unreachable!("complex values are not compiled"),
    }
}

#[test]
fn product_kernels_match_native() {
    let mut cases = Vec::new();
    let a_values = [3, -1, 4, 1, -5, 9, 2, -6, 5, 3, 5, -8];
    for dtype in NUMERIC {
        let a = Tensor::new(&[3, 4], small(dtype, &a_values));
        let x = Tensor::new(&[4], small(dtype, &[2, -7, 1, 8]));
        let b = Tensor::new(&[4, 2], small(dtype, &[2, -7, 1, 8, 2, 8, -1, 8]));
        let one = cx(1);
        let y = a.array(&one).matvec(&x.array(&one)).unwrap();
        cases.push(native_case(
            format!("array.matvec.{dtype}"),
            &[&a, &x],
            vec![],
            &y,
        ));
        let c = a.array(&one).matmul(&b.array(&one)).unwrap();
        cases.push(native_case(
            format!("array.matmul.{dtype}"),
            &[&a, &b],
            vec![],
            &c,
        ));
        // Matrices read transposed in place: `at` is a `4 x 3` matrix read as `3 x 4`, `bt`
        // a `2 x 4` one read as `4 x 2`.
        use Orientation::{AsStored, Transposed};
        let at = Tensor::new(&[4, 3], small(dtype, &a_values));
        let bt = Tensor::new(&[2, 4], small(dtype, &[2, -7, 1, 8, 2, 8, -1, 8]));
        let y = at
            .array(&one)
            .matvec_with(Transposed, &x.array(&one))
            .unwrap();
        cases.push(native_case(
            format!("array.matvec.{dtype}.t"),
            &[&at, &x],
            vec![],
            &y,
        ));
        for (lhs, lo, rhs, ro, letters) in [
            (&at, Transposed, &b, AsStored, "tn"),
            (&a, AsStored, &bt, Transposed, "nt"),
            (&at, Transposed, &bt, Transposed, "tt"),
        ] {
            let c = lhs
                .array(&one)
                .matmul_with(lo, &rhs.array(&one), ro)
                .unwrap();
            cases.push(native_case(
                format!("array.matmul.{dtype}.{letters}"),
                &[lhs, rhs],
                vec![],
                &c,
            ));
        }
        // A wide matrix on four processors splits its columns: the partial kind adds into
        // its output.
        let four = cx(4);
        let wide = Tensor::new(
            &[2, 8],
            small(
                dtype,
                &[1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -3, -4, -5, -6, -7, 9],
            ),
        );
        let v = Tensor::new(&[8], small(dtype, &[1, 1, 2, 2, 3, 3, 4, -4]));
        let y = wide.array(&four).matvec(&v.array(&four)).unwrap();
        let partial = format!("array.matvec_partial.{dtype}");
        assert!(
            TaskKind::lookup(&partial).is_some(),
            "{partial} was not used"
        );
        cases.push(Case {
            kind: partial,
            args: vec![wide, v, Tensor::new(&[2], small(dtype, &[10, 10]))],
            scalars: vec![],
            expected: vec![plus(Tensor::of(&y).data, 10)],
        });
    }
    check("product", cases);
}

/// The lane count of the native float reductions (`LANES` in the library's reduction
/// kernels and their MLIR generators): the lengths around it exercise the chunk loop, the
/// lanes' fold and the remainder.
const LANES: usize = diffuse_ir::REDUCTION_LANES;

/// `n` reproducible values of `dtype` (a float) of mixed signs and magnitudes, so that the
/// order of a sum changes its rounding.
fn mixed(dtype: DType, n: usize, seed: u64) -> HostData {
    let mut s = seed | 1;
    let values: Vec<f64> = (0..n)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let unit = (s >> 11) as f64 / (1u64 << 53) as f64 - 0.4;
            unit * [1.0, 1e3, 1e-3, 37.0][i % 4]
        })
        .collect();
    match dtype {
        DType::F64 => HostData::F64(values),
        DType::F32 => HostData::F32(values.iter().map(|&v| v as f32).collect()),
        _ => unreachable!("float dtypes only"),
    }
}

/// The left-to-right sum of `xs` (times `ys` element-wise when given), from `-0.0`: what a
/// kernel adding one value at a time computes.
fn sequential(xs: &HostData, ys: Option<&HostData>) -> f64 {
    match (xs, ys) {
        (HostData::F64(x), None) => x.iter().fold(-0.0, |a, &v| a + v),
        (HostData::F64(x), Some(HostData::F64(y))) => {
            x.iter().zip(y).fold(-0.0, |a, (&u, &v)| a + u * v)
        }
        (HostData::F32(x), None) => f64::from(x.iter().fold(-0.0f32, |a, &v| a + v)),
        (HostData::F32(x), Some(HostData::F32(y))) => {
            f64::from(x.iter().zip(y).fold(-0.0f32, |a, (&u, &v)| a + u * v))
        }
        _ => unreachable!("float data of one dtype"),
    }
}

/// `-0.0` of the float `dtype`, the identity of its sums.
fn negative_zero(dtype: DType) -> HostData {
    match dtype {
        DType::F64 => HostData::F64(vec![-0.0]),
        DType::F32 => HostData::F32(vec![-0.0]),
        _ => unreachable!("float dtypes only"),
    }
}

/// The first value of float `data`, as `f64`.
fn first(data: &HostData) -> f64 {
    match data {
        HostData::F64(v) => v[0],
        HostData::F32(v) => f64::from(v[0]),
        _ => unreachable!("float data"),
    }
}

#[test]
fn float_sums_and_dots_add_in_the_native_order() {
    let cx = cx(1);
    let mut cases = Vec::new();
    let k = LANES as i64;
    let long = 10_000 + 3;
    let mut shapes: Vec<Vec<i64>> = [0, 1, k - 1, k, k + 1, 3 * k + 2, long]
        .iter()
        .map(|&n| vec![n])
        .collect();
    // Several rows: each row folds its own lanes and remainder.
    shapes.extend([vec![3, 3 * k + 2], vec![2, 1, k - 1], vec![2, long]]);
    for dtype in [DType::F64, DType::F32] {
        for (s, shape) in shapes.iter().enumerate() {
            let n = shape.iter().product::<i64>() as usize;
            let x = Tensor::new(shape, mixed(dtype, n, 2 * s as u64 + 1));
            let y = Tensor::new(shape, mixed(dtype, n, 2 * s as u64 + 2));
            let (xa, ya) = (x.array(&cx), y.array(&cx));
            for (name, product, result) in [
                ("sum", false, xa.sum().unwrap()),
                ("dot", true, xa.dot(&ya).unwrap()),
            ] {
                let want = Tensor::of(&result).data;
                if n as i64 == long {
                    // The order matters here: one running total rounds differently.
                    let naive = sequential(&x.data, product.then_some(&y.data));
                    assert_ne!(
                        naive,
                        first(&want),
                        "{name} {dtype}: order-independent data"
                    );
                }
                // The partial value on entry is the identity `-0.0`, which the native kernel
                // starts from; an empty input leaves it unchanged (the library launches
                // nothing then and keeps the fresh store's 0).
                let start = Tensor::new(&[], negative_zero(dtype));
                let expected = if n == 0 { start.data.clone() } else { want };
                let mut args = vec![x.clone()];
                if product {
                    args.push(y.clone());
                }
                args.push(start);
                cases.push(Case {
                    kind: format!("array.{name}.{dtype}"),
                    args,
                    scalars: vec![],
                    expected: vec![expected],
                });
            }
        }
    }
    check("lanes", cases);
}

/// A one-processor context that fuses the tasks of a window of 16 and runs fused tasks
/// through `jit` (compiled), or natively without one.
fn fused_cx(jit: Option<std::sync::Arc<diffuse_jit::Jit>>) -> ArrayContext {
    ArrayContext::new(
        diffuse::embedded_with(
            diffuse::EmbeddedConfig {
                procs: Some(1),
                ..Default::default()
            },
            diffuse::RuntimeConfig {
                fusion: diffuse::FusionConfig {
                    enabled: true,
                    window: Some(16),
                    ..Default::default()
                },
                jit,
                gpu: None,
                placement: None,
                min_block: 1,
            },
        )
        .expect("the embedded backend starts"),
    )
}

#[test]
fn compiled_reductions_fused_with_element_wise_producers_match_native() {
    let jit = std::sync::Arc::new(diffuse_jit::Jit::new());
    let compiled = fused_cx(Some(jit.clone()));
    let native = fused_cx(None);
    let k = LANES as i64;
    for shape in [vec![3 * k + 2], vec![10_003], vec![3, 2 * k + 5]] {
        let n = shape.iter().product::<i64>() as usize;
        let results: Vec<Vec<f64>> = [&compiled, &native]
            .iter()
            .map(|cx| {
                let a = Tensor::new(&shape, mixed(DType::F64, n, 11)).array(cx);
                let b = Tensor::new(&shape, mixed(DType::F64, n, 12)).array(cx);
                // `t` stays held (a written store); `a - b` is a temporary the sum reads.
                let t = binary(BinaryOp::Add, &binary(BinaryOp::Mul, &a, &b).unwrap(), &a).unwrap();
                let dot = t.dot(&b).unwrap();
                let sum = binary(BinaryOp::Sub, &a, &b).unwrap().sum().unwrap();
                let norm = a.norm().unwrap();
                [dot, sum, norm]
                    .iter()
                    .map(|r| r.item::<f64>().unwrap())
                    .collect()
            })
            .collect();
        for (got, want) in results[0].iter().zip(&results[1]) {
            assert_eq!(got.to_bits(), want.to_bits(), "{shape:?}: {got} vs {want}");
        }
    }
    let stats = jit.stats();
    assert!(stats.kernels_compiled > 0, "{stats:?}");
    assert_eq!(stats.compile_failures, 0, "{stats:?}");
}

/// The JIT shared by the fused-reduction property's cases (each distinct kernel compiles
/// once).
fn shared_jit() -> std::sync::Arc<diffuse_jit::Jit> {
    static JIT: std::sync::OnceLock<std::sync::Arc<diffuse_jit::Jit>> = std::sync::OnceLock::new();
    JIT.get_or_init(|| std::sync::Arc::new(diffuse_jit::Jit::new()))
        .clone()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 32, ..Default::default() })]

    /// Sums and dot products of element-wise results fuse with them into one loop nest (the
    /// JIT's element route) and equal the same tasks run natively bit for bit, on any shape:
    /// rows shorter and longer than the lanes, several rows, a broadcast row among the
    /// element-wise operands, the element-wise result a temporary or kept.
    #[test]
    fn fused_sums_and_dots_of_element_wise_results_match_native_bits(
        shape in proptest::collection::vec(1i64..21, 1..=3),
        (first, second) in (0usize..3, 0usize..3),
        seed in 0u64..1000,
        keep in proptest::prelude::any::<bool>(),
    ) {
        let ops = [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul];
        let jit = shared_jit();
        let n = shape.iter().product::<i64>() as usize;
        let last = *shape.last().expect("at least one dimension");
        let run = |cx: &ArrayContext| -> Vec<u64> {
            let a = Tensor::new(&shape, mixed(DType::F64, n, seed)).array(cx);
            let b = Tensor::new(&shape, mixed(DType::F64, n, seed + 1)).array(cx);
            let row = Tensor::new(&[last], mixed(DType::F64, last as usize, seed + 2)).array(cx);
            let t = binary(ops[first], &a, &b).unwrap();
            let u = binary(ops[second], &t, &row).unwrap();
            let sum = u.sum().unwrap();
            let dot = u.dot(&a).unwrap();
            let mut bits: Vec<u64> = [sum, dot]
                .iter()
                .map(|r| r.item::<f64>().unwrap().to_bits())
                .collect();
            if keep {
                bits.extend(u.to_vec::<f64>().unwrap().iter().map(|v| v.to_bits()));
            }
            bits
        };
        let compiled = run(&fused_cx(Some(jit.clone())));
        let native = run(&fused_cx(None));
        proptest::prop_assert_eq!(compiled, native);
        proptest::prop_assert_eq!(jit.stats().compile_failures, 0);
    }
}
