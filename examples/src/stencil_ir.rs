//! The 5-point stencil of the Diffuse paper's Figure 2, written directly against the IR.
//!
//! `grid` is an (n+2)x(n+2) store; `center`, `north`, `east`, `west` and `south` are five
//! aliasing n x n views of it. Each iteration issues the task stream of Figure 2(c):
//! four `ADD`s into fresh temporaries, `MULT` by 0.2, and `COPY` of the result into `center`,
//! every task launched over a 2-D processor grid with each view blocked over it.
//!
//! Each kind has a native kernel and an MLIR body ([`Body`]), as a library targeting the IR
//! writes them: with the body the JIT fuses the six tasks into one compiled kernel, for the
//! CPU or for a GPU.

use std::sync::{Arc, OnceLock};

use anyhow::Context as _;
use diffuse_array::Partitioner;
use diffuse_ir::{
    element_type, for_each_row, tensor_type, Context, DType, IndexTask, KernelError, MlirGenerator,
    MlirSignature, Privilege, Shape, Store, TaskKind, Tuple, View,
};

use crate::common::{extent, AppArgs, RunRecord, Runtime};
use crate::stencil::{checked_record, grid_side, initial_grid};

/// Figure 2(e)'s three task kinds.
struct Kinds {
    add: Arc<TaskKind>,
    mult: Arc<TaskKind>,
    copy: Arc<TaskKind>,
}

/// The MLIR body of one of the kinds: one `linalg.generic` over the output's two dimensions
/// (the kernel ABI of `diffuse_ir::mlir`).
enum Body {
    /// `c = a + b`.
    Add,
    /// `b = s * a` for the scalar `s`.
    Mult,
    /// `b = a`.
    Copy,
}

impl MlirGenerator for Body {
    fn generate(&self, symbol: &str, sig: &MlirSignature<'_>) -> Result<String, KernelError> {
        let (inputs, scalars) = match self {
            Body::Add => (2, 0),
            Body::Mult => (1, 1),
            Body::Copy => (1, 0),
        };
        let out = sig.args.last().filter(|_| {
            sig.args.len() == inputs + 1
                && sig.scalars.len() == scalars
                && sig
                    .args
                    .iter()
                    .all(|a| a.rank == 2 && a.dtype == DType::F64)
        });
        let Some(out) = out else {
            return Err(KernelError {
                kind: "stencil_ir".to_string(),
                point: Tuple::splat(0, 0),
                reason: format!(
                    "no MLIR kernel for {} arguments and {} scalars (expected 2-d f64 stores)",
                    sig.args.len(),
                    sig.scalars.len()
                ),
            });
        };
        let (t, f) = (tensor_type(out), element_type(out.dtype));
        let map = "affine_map<(d0, d1) -> (d0, d1)>";
        let names: Vec<String> = (0..inputs).map(|i| format!("%a{i}")).collect();
        let params: Vec<String> = names
            .iter()
            .map(|n| format!("{n}: {t}"))
            .chain(std::iter::once(format!("%out: {t}")))
            .chain((0..scalars).map(|_| format!("%s: {f}")))
            .collect();
        let (value, op) = match self {
            Body::Add => ("%v", format!("%v = arith.addf %x0, %x1 : {f}")),
            Body::Mult => ("%v", format!("%v = arith.mulf %s, %x0 : {f}")),
            Body::Copy => ("%x0", String::new()),
        };
        Ok(format!(
            "func.func private @{symbol}({params}) -> {t} {{
  %r = linalg.generic {{indexing_maps = [{maps}], iterator_types = [\"parallel\", \"parallel\"]}} \
ins({names} : {types}) outs(%out : {t}) {{
  ^bb0({block}, %o: {f}):
    {op}
    linalg.yield {value} : {f}
  }} -> {t}
  return %r : {t}
}}
",
            params = params.join(", "),
            maps = vec![map; inputs + 1].join(", "),
            names = names.join(", "),
            types = vec![t.as_str(); inputs].join(", "),
            block = (0..inputs)
                .map(|i| format!("%x{i}: {f}"))
                .collect::<Vec<_>>()
                .join(", "),
        ))
    }
}

fn kinds() -> anyhow::Result<&'static Kinds> {
    static KINDS: OnceLock<Kinds> = OnceLock::new();
    if let Some(k) = KINDS.get() {
        return Ok(k);
    }
    let add = TaskKind::builder("stencil_ir.add")
        .arg("a", DType::F64, Privilege::Read)
        .arg("b", DType::F64, Privilege::Read)
        .arg("c", DType::F64, Privilege::Write)
        .aligned(&[0, 1, 2])
        .elementwise()
        .mlir(Arc::new(Body::Add))
        .register(|t| {
            for_each_row::<f64>(t, 2, &[0, 1], |c, ab| {
                for ((c, &a), &b) in c.iter_mut().zip(ab[0]).zip(ab[1]) {
                    *c = a + b;
                }
            })
        })?;
    let mult = TaskKind::builder("stencil_ir.mult")
        .arg("a", DType::F64, Privilege::Read)
        .arg("b", DType::F64, Privilege::Write)
        .scalar(DType::F64)
        .aligned(&[0, 1])
        .elementwise()
        .mlir(Arc::new(Body::Mult))
        .register(|t| {
            let s = t.scalar::<f64>(0)?;
            for_each_row::<f64>(t, 1, &[0], |b, a| {
                for (b, &a) in b.iter_mut().zip(a[0]) {
                    *b = s * a;
                }
            })
        })?;
    let copy = TaskKind::builder("stencil_ir.copy")
        .arg("a", DType::F64, Privilege::Read)
        .arg("b", DType::F64, Privilege::Write)
        .aligned(&[0, 1])
        .elementwise()
        .mlir(Arc::new(Body::Copy))
        .register(|t| for_each_row::<f64>(t, 1, &[0], |b, a| b.copy_from_slice(a[0])))?;
    Ok(KINDS.get_or_init(|| Kinds { add, mult, copy }))
}

/// Issues one element-wise task of `kind` over `launch`, every view blocked over it.
fn launch(
    ctx: &Context,
    kind: &Arc<TaskKind>,
    launch: Shape,
    reads: &[&View],
    write: &View,
    scalar: Option<f64>,
) -> anyhow::Result<()> {
    let mut task = IndexTask::new(kind, launch);
    for v in reads {
        task = task.arg(v.store(), v.blocked(launch)?, Privilege::Read);
    }
    task = task.arg(write.store(), write.blocked(launch)?, Privilege::Write);
    if let Some(s) = scalar {
        task = task.scalar(s);
    }
    ctx.submit(task)?;
    Ok(())
}

/// One stencil iteration: Figure 2(c)'s six tasks.
fn iteration(
    ctx: &Context,
    k: &Kinds,
    launch_domain: Shape,
    views: &[View; 5],
) -> anyhow::Result<()> {
    let [center, north, east, west, south] = views;
    let shape = center.shape();
    let temp =
        || -> anyhow::Result<View> { Ok(ctx.create_store(shape.as_slice(), DType::F64)?.view()) };
    let t1 = temp()?;
    launch(ctx, &k.add, launch_domain, &[center, north], &t1, None)?;
    let t2 = temp()?;
    launch(ctx, &k.add, launch_domain, &[&t1, east], &t2, None)?;
    let t3 = temp()?;
    launch(ctx, &k.add, launch_domain, &[&t2, west], &t3, None)?;
    let avg = temp()?;
    launch(ctx, &k.add, launch_domain, &[&t3, south], &avg, None)?;
    let work = temp()?;
    launch(ctx, &k.mult, launch_domain, &[&avg], &work, Some(0.2))?;
    launch(ctx, &k.copy, launch_domain, &[&work], center, None)?;
    Ok(())
}

/// Runs the stencil: one warm-up iteration, `iters` timed ones, then the check.
pub fn run(args: &AppArgs) -> anyhow::Result<RunRecord> {
    let side = grid_side(args)?;
    let rt = Runtime::start(args)?;
    let ctx = &rt.ctx;
    let k = kinds()?;
    let n = extent(args.n)?;
    let init = initial_grid(side);
    let grid: Store = ctx
        .store_from_vec(&[n + 2, n + 2], init.clone())
        .context("creating the grid")?;
    let view = |r: i64, c: i64| -> anyhow::Result<View> {
        Ok(View::new(
            &grid,
            Tuple::new(&[r, c])?,
            Tuple::shape(&[n, n])?,
        )?)
    };
    let views = [
        view(1, 1)?,
        view(0, 1)?,
        view(1, 2)?,
        view(1, 0)?,
        view(2, 1)?,
    ];
    let launch_domain = Partitioner::new(rt.ctx.processors())
        .with_min_block(rt.ctx.min_block())
        .launch_for(Tuple::shape(&[n, n])?);
    let m = rt.measure(args.iters, || {
        iteration(ctx, k, launch_domain, &views)?;
        Ok(())
    })?;

    let result = ctx.read::<f64>(&grid.view())?;
    Ok(checked_record(&rt, "stencil-ir", args, m, &result, init))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ir_stencil_matches_the_sequential_loop() {
        for record in crate::common::check_app(run, (37, 3), &[3], 6.0, (6.0, 2.0)) {
            assert!(record.peak_store_bytes >= 39 * 39 * 8);
        }
    }
}
