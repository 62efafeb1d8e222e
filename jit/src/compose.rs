//! Composing a fused kernel: the constituents' generated bodies in program order inside one
//! function over memrefs, with every value flowing between constituents as an SSA tensor, so
//! that temporaries never touch memory once the pipeline fuses the loops.

use std::fmt::Write as _;

use diffuse_ir::{element_type, MlirArg, MlirSignature, Privilege};

use crate::error::JitError;
use crate::signature::{KernelParam, KernelSignature};

/// The name of the composed entry function (called through `_mlir_ciface_kernel`).
pub(crate) const ENTRY: &str = "kernel";

/// The memref type of a parameter: dynamic sizes and offset, the innermost stride 1.
pub(crate) fn memref_type(p: &KernelParam) -> String {
    let el = element_type(p.dtype);
    if p.rank == 0 {
        return format!("memref<{el}, strided<[], offset: ?>>");
    }
    let strides = std::iter::repeat_n("?", p.rank - 1)
        .chain(std::iter::once("1"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "memref<{}{el}, strided<[{strides}], offset: ?>>",
        "?x".repeat(p.rank)
    )
}

fn tensor_of(p: &KernelParam) -> String {
    format!("tensor<{}{}>", "?x".repeat(p.rank), element_type(p.dtype))
}

/// Builds the module text: each constituent's generated function (`@k<i>`), the entry
/// function `@kernel` calling them in order, and `prelude` (math definitions).
pub(crate) fn compose(sig: &KernelSignature, prelude: &str) -> Result<String, JitError> {
    let unsupported = |reason: String| JitError::Unsupported {
        kernel: sig.name.clone(),
        reason,
    };
    check_aliasing(sig).map_err(unsupported)?;

    let mut module = String::from("module {\n");
    module.push_str(prelude);
    module.push('\n');

    // The entry's parameters: memrefs, then scalars in constituent order.
    let mut header: Vec<String> = sig
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            // Distinct stores never overlap, a mutated store is reached through one
            // parameter (checked above), and read-only parameters may overlap each other,
            // which `noalias` allows: it only forbids overlap with memory written through
            // another pointer. Temporaries are never dereferenced.
            format!("%m{i}: {} {{llvm.noalias}}", memref_type(p))
        })
        .collect();
    let scalar_names: Vec<Vec<String>> = {
        let mut next = 0;
        sig.steps
            .iter()
            .map(|s| {
                s.kind
                    .scalars()
                    .iter()
                    .map(|&d| {
                        header.push(format!("%s{next}: {}", element_type(d)));
                        next += 1;
                        format!("%s{}", next - 1)
                    })
                    .collect()
            })
            .collect()
    };

    let mut body = String::new();
    // The current SSA tensor of every parameter, created lazily.
    let mut current: Vec<Option<String>> = vec![None; sig.params.len()];
    let mut fresh = 0usize;
    for (c, step) in sig.steps.iter().enumerate() {
        let kind = &step.kind;
        if step.bindings.len() != kind.args().len() {
            return Err(unsupported(format!(
                "{} binds {} arguments but declares {}",
                kind.name(),
                step.bindings.len(),
                kind.args().len()
            )));
        }
        let generator = kind
            .mlir_generator()
            .ok_or_else(|| unsupported(format!("{} has no MLIR generator", kind.name())))?;
        let args: Vec<MlirArg> = step
            .bindings
            .iter()
            .map(|&(p, privilege)| {
                let param = &sig.params[p];
                MlirArg {
                    dtype: param.dtype,
                    rank: param.rank,
                    privilege,
                    unit_dims: param.unit_dims,
                }
            })
            .collect();
        if let Some((decl, arg)) = kind
            .args()
            .iter()
            .zip(&args)
            .find(|(d, a)| d.dtype != a.dtype)
        {
            return Err(unsupported(format!(
                "{} declares argument {} as {} but it is bound to a {} store",
                kind.name(),
                decl.name,
                decl.dtype,
                arg.dtype
            )));
        }
        let symbol = format!("k{c}");
        let text = generator
            .generate(
                &symbol,
                &MlirSignature {
                    args: &args,
                    scalars: kind.scalars(),
                },
            )
            .map_err(|source| JitError::Generator {
                kind: kind.name().to_string(),
                source,
            })?;
        module.push_str(&text);
        module.push('\n');

        // Operands: the current tensor of each argument, then the scalars.
        let mut operands = Vec::new();
        let mut operand_types = Vec::new();
        let mut result_params = Vec::new();
        for &(p, privilege) in &step.bindings {
            let param = &sig.params[p];
            let value = match &current[p] {
                Some(v) => v.clone(),
                None => {
                    let v = format!("%v{fresh}");
                    fresh += 1;
                    materialize(&mut body, &v, p, param, privilege)
                        .map_err(|r| unsupported(format!("{}: {r}", kind.name())))?;
                    current[p] = Some(v.clone());
                    v
                }
            };
            operands.push(value);
            operand_types.push(tensor_of(param));
            if privilege != Privilege::Read {
                result_params.push(p);
            }
        }
        for (name, &d) in scalar_names[c].iter().zip(kind.scalars()) {
            operands.push(name.clone());
            operand_types.push(element_type(d).to_string());
        }
        let results: Vec<String> = result_params
            .iter()
            .map(|_| {
                fresh += 1;
                format!("%v{}", fresh - 1)
            })
            .collect();
        let result_types: Vec<String> = result_params
            .iter()
            .map(|&p| tensor_of(&sig.params[p]))
            .collect();
        let _ = writeln!(
            body,
            "    {}{}func.call @{symbol}({}) : ({}) -> ({})",
            results.join(", "),
            if results.is_empty() { "" } else { " = " },
            operands.join(", "),
            operand_types.join(", "),
            result_types.join(", ")
        );
        for (p, v) in result_params.into_iter().zip(results) {
            current[p] = Some(v);
        }
    }
    // Every mutated parameter in memory receives its final value.
    for (p, param) in sig.params.iter().enumerate() {
        if param.temporary || !param.privilege.mutates() {
            continue;
        }
        if let Some(v) = &current[p] {
            let _ = writeln!(
                body,
                "    bufferization.materialize_in_destination {v} in restrict writable %m{p} : ({}, {}) -> ()",
                tensor_of(param),
                memref_type(param)
            );
        }
    }
    let _ = write!(
        module,
        "func.func @{ENTRY}({}) attributes {{llvm.emit_c_interface}} {{\n{body}    return\n}}\n}}\n",
        header.join(", ")
    );
    Ok(module)
}

/// Emits the tensor `v` standing for parameter `p` before its first use by a constituent
/// with `privilege`: the memref's contents (marked `restrict`: the fusion analysis
/// guarantees that a mutated store is reached through exactly one parameter), or for a
/// temporary a fresh tensor of its shape.
fn materialize(
    body: &mut String,
    v: &str,
    p: usize,
    param: &KernelParam,
    privilege: Privilege,
) -> Result<(), String> {
    if param.temporary {
        if privilege != Privilege::Write {
            return Err(format!(
                "temporary parameter {p} is first used with {privilege:?}, not written"
            ));
        }
        let dims: Vec<String> = (0..param.rank).map(|d| format!("{v}_d{d}")).collect();
        for (d, name) in dims.iter().enumerate() {
            let _ = writeln!(
                body,
                "    {name}_i = arith.constant {d} : index\n    {name} = memref.dim %m{p}, {name}_i : {}",
                memref_type(param)
            );
        }
        let _ = writeln!(
            body,
            "    {v} = tensor.empty({}) : {}",
            dims.join(", "),
            tensor_of(param)
        );
        return Ok(());
    }
    let writable = if param.privilege.mutates() {
        " writable"
    } else {
        ""
    };
    let _ = writeln!(
        body,
        "    {v} = bufferization.to_tensor %m{p} restrict{writable} : {} to {}",
        memref_type(param),
        tensor_of(param)
    );
    Ok(())
}

/// A store the kernel mutates must be reached through one parameter only; otherwise the
/// `restrict` promise (and the SSA threading of its values) would be wrong.
fn check_aliasing(sig: &KernelSignature) -> Result<(), String> {
    for (i, p) in sig.params.iter().enumerate() {
        if p.temporary || !p.privilege.mutates() {
            continue;
        }
        if let Some(j) = sig
            .params
            .iter()
            .enumerate()
            .position(|(j, q)| j != i && !q.temporary && q.store == p.store)
        {
            return Err(format!(
                "parameters {i} and {j} are two partitions of one store and {i} is written"
            ));
        }
    }
    Ok(())
}
