//! The element-function route of composition: one loop nest over the fused task's iteration
//! space whose body calls the constituents' element functions in program order, so every
//! intermediate value, even one used several times, stays in a register.
//!
//! Without reductions the nest is one parallel `linalg.generic`. With sums or products (a
//! dot product after the vector updates that feed it, say) it is a nest of `scf.for` loops
//! that also carries the reductions' partial results, folded in the native kernels' order
//! ([`REDUCTION_LANES`]): the reduced vectors are not read back from memory, and the results
//! are the same bits as the reductions' own kernels give. A constituent may read some
//! arguments whole at indices of its own (a sparse matrix row: its entries and the vector it
//! multiplies); the nest is then also `scf.for` loops, which hand it the element's indices.

use std::fmt::Write as _;

use diffuse_ir::{
    element_type, DType, IterationSpace, KernelSignature, KernelTarget, MlirArg, MlirSignature,
    Privilege, ReductionOp, REDUCTION_LANES,
};

use crate::compose::{element_call, empty_tensor, entry_header, memref_type, tensor_of, Fresh};
use crate::compose::{ENTRY, ENTRY_ATTRIBUTES};

/// A reduction folded in the loop nest: its 0-d partial parameter, and how partials of its
/// operator combine.
struct Partial {
    param: usize,
    /// The operator's identity, as an MLIR literal of the partial's element type.
    identity: &'static str,
    /// The `arith` operation folding one partial into another.
    combine: &'static str,
}

impl Partial {
    /// The partial of a `Reduce(op)` parameter `param` of `dtype`, for the operators whose
    /// lanes the nest folds (sums and products of numbers); `None` for the others.
    fn of(param: usize, op: ReductionOp, dtype: DType) -> Option<Partial> {
        let float = matches!(dtype, DType::F64 | DType::F32);
        let (identity, combine) = match (op, dtype) {
            (_, DType::Bool | DType::C64 | DType::C128)
            | (ReductionOp::Max | ReductionOp::Min, _) => return None,
            // -0.0: adding it leaves every value, +0.0 included, unchanged.
            (ReductionOp::Sum, DType::F64) => ("0x8000000000000000", "addf"),
            (ReductionOp::Sum, DType::F32) => ("0x80000000", "addf"),
            (ReductionOp::Sum, _) => ("0", "addi"),
            (ReductionOp::Prod, _) if float => ("1.0", "mulf"),
            (ReductionOp::Prod, _) => ("1", "muli"),
        };
        Some(Partial {
            param,
            identity,
            combine,
        })
    }
}

/// The element-function route: every constituent element-wise with an element function, a
/// sum or product into a 0-d partial with one, or one reading some arguments whole (see
/// `MlirGenerator::generate_element`); every mutated parameter (temporaries included) of the
/// first output's rank and broadcast pattern, every parameter read element by element of at
/// most that rank, a reduction's inputs of exactly that shape (so that its rows are the ones
/// its own kernel folds), parameters read whole not written. Returns the module and the
/// nest's iteration space, or `None` when the route does not apply.
pub(crate) fn compose_elements(
    sig: &KernelSignature,
    prelude: &str,
    target: KernelTarget,
) -> Option<(String, IterationSpace)> {
    // A 0-d temporary (scalar work fused into the launch) is one value, computed in every
    // iteration from loop-invariant operands; the loop nest runs over the first other
    // parameter written element by element.
    let scalar_temporary = |p: usize| sig.params[p].temporary && sig.params[p].rank == 0;
    let written = |step: &diffuse_ir::KernelStep| {
        step.bindings
            .iter()
            .filter(|(_, pr)| matches!(pr, Privilege::Write | Privilege::ReadWrite))
            .map(|&(p, _)| p)
            .collect::<Vec<_>>()
    };
    let space = sig
        .steps
        .iter()
        .flat_map(written)
        .find(|&p| !scalar_temporary(p))
        .or_else(|| written(sig.steps.first()?).first().copied())?;
    let rank = sig.params[space].rank;
    let unit = sig.params[space].unit_dims;
    let step_args: Vec<Vec<MlirArg>> = sig
        .steps
        .iter()
        .map(|step| {
            step.bindings
                .iter()
                .map(|&(p, privilege)| MlirArg {
                    dtype: sig.params[p].dtype,
                    rank: sig.params[p].rank,
                    privilege,
                    unit_dims: sig.params[p].unit_dims,
                })
                .collect()
        })
        .collect();
    let signature = |c: usize| MlirSignature {
        args: &step_args[c],
        scalars: sig.steps[c].kind.scalars(),
        target,
    };
    let mut wholes = Vec::with_capacity(sig.steps.len());
    for (c, step) in sig.steps.iter().enumerate() {
        wholes.push(
            step.kind
                .mlir_generator()?
                .element_reads_whole(&signature(c)),
        );
    }
    // The indexed nest is sequential loops: a GPU maps `linalg` ops onto its threads.
    if target != KernelTarget::Host && wholes.iter().any(|w| !w.is_empty()) {
        return None;
    }
    let mut partials = Vec::new();
    let mut read_whole = vec![false; sig.params.len()];
    let mut bound_per_element = vec![false; sig.params.len()];
    for (step, whole) in sig.steps.iter().zip(&wholes) {
        let reducing = step.bindings.iter().any(|(_, pr)| pr.is_reduction());
        if !step.kind.is_elementwise() && !reducing && whole.is_empty() {
            return None;
        }
        for (i, &(p, privilege)) in step.bindings.iter().enumerate() {
            let param = &sig.params[p];
            if whole.contains(&i) {
                // Read through its memory, never written in the kernel.
                if privilege != Privilege::Read || param.temporary || param.privilege.mutates() {
                    return None;
                }
                read_whole[p] = true;
                continue;
            }
            bound_per_element[p] = true;
            let fits = match privilege {
                Privilege::Read if reducing => param.rank == rank && param.unit_dims == unit,
                Privilege::Read => param.rank <= rank,
                Privilege::Write | Privilege::ReadWrite => {
                    (param.rank == rank && param.unit_dims == unit) || scalar_temporary(p)
                }
                Privilege::Reduce(op) => {
                    let partial = Partial::of(p, op, param.dtype)
                        .filter(|_| target == KernelTarget::Host)
                        .filter(|_| param.rank == 0 && !param.temporary);
                    partial.map(|partial| partials.push(partial)).is_some()
                }
            };
            if !fits {
                return None;
            }
        }
    }
    // A partial is bound once, by the step reducing into it.
    let bindings_of = |p: usize| {
        sig.steps
            .iter()
            .flat_map(|s| &s.bindings)
            .filter(|&&(q, _)| q == p)
            .count()
    };
    if partials.iter().any(|r| bindings_of(r.param) != 1) {
        return None;
    }
    let mut module = String::from("module {\n");
    module.push_str(prelude);
    module.push('\n');
    for (c, step) in sig.steps.iter().enumerate() {
        let text = step
            .kind
            .mlir_generator()?
            .generate_element(&format!("e{c}"), &signature(c))?
            .ok()?;
        module.push_str(&text);
        module.push('\n');
    }

    let (header, scalar_names) = entry_header(sig);
    let mut body = String::new();
    let (is_prelude, scalar_values) = scalar_work(sig, &scalar_names, &mut body);
    // The loop nest's operands: read parameters in, mutated ones out (temporaries and
    // partials neither); those only read whole are tensors the steps index themselves.
    let whole: Vec<usize> = (0..sig.params.len())
        .filter(|&p| read_whole[p] && !bound_per_element[p])
        .collect();
    let (mut ins, mut outs) = (Vec::new(), Vec::new());
    for (p, param) in sig.params.iter().enumerate() {
        if param.temporary || param.privilege.is_reduction() {
            continue;
        }
        let writable = param.privilege.mutates();
        // One loop nest reads and writes each element in one iteration, so every mutated
        // parameter is written in place: from an empty tensor when nothing reads it first.
        if param.privilege == Privilege::Write {
            empty_tensor(&mut body, &format!("%t{p}"), p, param);
        } else {
            let _ = writeln!(
                body,
                "    %t{p} = bufferization.to_tensor %m{p} restrict{} : {} to {}",
                if writable { " writable" } else { "" },
                memref_type(param),
                tensor_of(param)
            );
        }
        if writable {
            outs.push(p);
        } else if !whole.contains(&p) {
            ins.push(p);
        }
    }
    if outs.is_empty() && partials.is_empty() {
        return None;
    }
    // Steps reading whole get the element's indices, which only the chunked nest has; it
    // runs over rows, which a 0-d space has none of.
    let parallel = partials.is_empty() && wholes.iter().all(Vec::is_empty);
    if rank == 0 && !parallel {
        return None;
    }
    let nest = Nest {
        sig,
        space,
        is_prelude: &is_prelude,
        scalar_names: &scalar_names,
        scalar_values: &scalar_values,
        wholes: &wholes,
        ins: &ins,
        outs: &outs,
    };
    let finals = if parallel {
        nest.parallel(&mut body)
    } else {
        let (tensors, values) = nest.chunked(&mut body, &partials);
        for (partial, value) in partials.iter().zip(values) {
            let q = partial.param;
            let _ = writeln!(
                body,
                "    memref.store {value}, %m{q}[] : {}",
                memref_type(&sig.params[q])
            );
        }
        tensors
    };
    for (&p, value) in outs.iter().zip(finals) {
        let _ = writeln!(
            body,
            "    bufferization.materialize_in_destination {value} in restrict writable %m{p} : ({}, {}) -> ()",
            tensor_of(&sig.params[p]),
            memref_type(&sig.params[p])
        );
    }
    let _ = write!(
        module,
        "func.func @{ENTRY}({}) attributes {ENTRY_ATTRIBUTES} {{\n{body}    return\n}}\n}}\n",
        header.join(", ")
    );
    Some((
        module,
        IterationSpace {
            param: space,
            whole,
        },
    ))
}

/// Emits the scalar work: steps over 0-d values only, writing only temporaries, run once
/// before the loop nest, which reads their values as loop invariants; unless a step before
/// it stays in the loop and writes a value it reads or writes (it must see that write), or
/// reads a value it writes (that step must not see this write). Returns which steps ran
/// there and the values they left per parameter.
fn scalar_work(
    sig: &KernelSignature,
    scalar_names: &[Vec<String>],
    body: &mut String,
) -> (Vec<bool>, Vec<Option<String>>) {
    let mut scalar_values: Vec<Option<String>> = vec![None; sig.params.len()];
    let mut is_prelude = vec![false; sig.steps.len()];
    let mut written_in_loop = vec![false; sig.params.len()];
    let mut read_in_loop = vec![false; sig.params.len()];
    let mut fresh = Fresh::new("%w");
    for (c, step) in sig.steps.iter().enumerate() {
        let scalar = step.bindings.iter().all(|&(p, privilege)| {
            let param = &sig.params[p];
            param.rank == 0
                && !written_in_loop[p]
                && match privilege {
                    Privilege::Read => !param.temporary || scalar_values[p].is_some(),
                    _ => param.temporary && !read_in_loop[p],
                }
        });
        if !scalar {
            for &(p, privilege) in &step.bindings {
                written_in_loop[p] |= privilege != Privilege::Read;
                read_in_loop[p] |= privilege.reads();
            }
            continue;
        }
        is_prelude[c] = true;
        let mut operands = Vec::new();
        let mut types = Vec::new();
        let mut results = Vec::new();
        for &(p, privilege) in &step.bindings {
            let param = &sig.params[p];
            let ty = element_type(param.dtype);
            if privilege == Privilege::Read {
                let value = match &scalar_values[p] {
                    Some(v) => v.clone(),
                    None => {
                        let v = fresh.name();
                        let _ = writeln!(
                            body,
                            "    {v} = memref.load %m{p}[] : {}",
                            memref_type(param)
                        );
                        scalar_values[p] = Some(v.clone());
                        v
                    }
                };
                operands.push(value);
            } else {
                // A temporary before its first write: any value of its type.
                operands.push(any_value(body, "    ", &mut fresh, ty));
                results.push(p);
            }
            types.push(ty.to_string());
        }
        element_call(sig, c, &scalar_names[c], operands, types, results).emit(
            body,
            "    ",
            &mut fresh,
            &mut scalar_values,
        );
    }
    (is_prelude, scalar_values)
}

/// Emits a constant of element type `ty` (any value serves) and returns its name.
fn any_value(body: &mut String, indent: &str, fresh: &mut Fresh, ty: &str) -> String {
    let v = fresh.name();
    let zero = if ty.starts_with('f') { "0.0" } else { "0" };
    let _ = writeln!(body, "{indent}{v} = arith.constant {zero} : {ty}");
    v
}

/// The loop nest of an element-route kernel: what it iterates over and what its body calls.
struct Nest<'a> {
    sig: &'a KernelSignature,
    /// The parameter whose extent is the iteration space.
    space: usize,
    /// The steps run once before the nest ([`scalar_work`]) rather than per element.
    is_prelude: &'a [bool],
    /// Each step's scalar arguments.
    scalar_names: &'a [Vec<String>],
    /// What the scalar work wrote, per parameter.
    scalar_values: &'a [Option<String>],
    /// Each step's arguments read whole (positions; see `element_reads_whole`).
    wholes: &'a [Vec<usize>],
    /// The read parameters (tensors `%t<p>`).
    ins: &'a [usize],
    /// The mutated parameters in memory (tensors `%t<p>`), written in place.
    outs: &'a [usize],
}

impl Nest<'_> {
    /// The element values every parameter starts an element with: the scalar work's values;
    /// `None` elsewhere (a temporary before its first write).
    fn start_values(&self) -> Vec<Option<String>> {
        self.sig
            .params
            .iter()
            .zip(self.scalar_values)
            .map(|(param, value)| value.clone().filter(|_| param.temporary))
            .collect()
    }

    /// Emits the calls of the steps that run per element at `indent`, on the element values
    /// `current` (`None`: a temporary before its first write), which they update; `at` are
    /// the element's indices, for the steps that read arguments whole (those get their
    /// tensors `%t<p>`).
    fn calls(
        &self,
        body: &mut String,
        indent: &str,
        fresh: &mut Fresh,
        current: &mut [Option<String>],
        at: &[String],
    ) {
        let sig = self.sig;
        for (c, step) in sig.steps.iter().enumerate() {
            if self.is_prelude[c] {
                continue;
            }
            let whole = &self.wholes[c];
            let (mut operands, mut types) = if whole.is_empty() {
                (Vec::new(), Vec::new())
            } else {
                (at.to_vec(), vec!["index".to_string(); at.len()])
            };
            let mut results = Vec::new();
            for (i, &(p, privilege)) in step.bindings.iter().enumerate() {
                let param = &sig.params[p];
                if whole.contains(&i) {
                    operands.push(format!("%t{p}"));
                    types.push(tensor_of(param));
                    continue;
                }
                let ty = element_type(param.dtype);
                let value = match &current[p] {
                    Some(v) => v.clone(),
                    None => any_value(body, indent, fresh, ty),
                };
                operands.push(value);
                types.push(ty.to_string());
                if privilege != Privilege::Read {
                    results.push(p);
                }
            }
            element_call(sig, c, &self.scalar_names[c], operands, types, results)
                .emit(body, indent, fresh, current);
        }
    }

    /// For read parameter `p`, the index of each of its dimensions at the element whose
    /// iteration-space indices are `at`: aligned with the trailing dimensions, and 0 where
    /// it broadcasts (extent 1 where the space's is not). `zero` names the index 0.
    fn indices_of(&self, p: usize, at: &[String], zero: &str) -> Vec<String> {
        let (param, space) = (&self.sig.params[p], &self.sig.params[self.space]);
        let offset = space.rank - param.rank;
        (0..param.rank)
            .map(|k| {
                let d = k + offset;
                let broadcast = param.unit_dims & (1 << k.min(7)) != 0
                    && space.unit_dims & (1 << d.min(7)) == 0;
                if broadcast {
                    zero.to_string()
                } else {
                    at[d].clone()
                }
            })
            .collect()
    }

    /// Emits the nest as one parallel `linalg.generic` and returns the final tensors of
    /// [`Nest::outs`].
    fn parallel(&self, body: &mut String) -> Vec<String> {
        let (sig, ins, outs) = (self.sig, self.ins, self.outs);
        let rank = sig.params[self.space].rank;
        let dims: Vec<String> = (0..rank).map(|d| format!("d{d}")).collect();
        let domain = format!("({})", dims.join(", "));
        let map_of = |p: usize| {
            format!(
                "affine_map<{domain} -> ({})>",
                self.indices_of(p, &dims, "0").join(", ")
            )
        };
        let maps: Vec<String> = ins.iter().chain(outs).map(|&p| map_of(p)).collect();
        let iterators = vec!["\"parallel\""; rank].join(", ");
        let ins_clause = if ins.is_empty() {
            String::new()
        } else {
            format!(" ins({} : {})", operands(ins), types(sig, ins))
        };
        let _ = writeln!(
            body,
            "    %r:{} = linalg.generic {{indexing_maps = [{}], iterator_types = [{iterators}]}}{ins_clause} outs({} : {}) {{",
            outs.len(),
            maps.join(", "),
            operands(outs),
            types(sig, outs)
        );
        // The element value of every parameter, as the constituents update it.
        let mut current = self.start_values();
        let block: Vec<String> = ins
            .iter()
            .chain(outs)
            .map(|&p| {
                current[p] = Some(format!("%x{p}"));
                format!("%x{p}: {}", element_type(sig.params[p].dtype))
            })
            .collect();
        let _ = writeln!(body, "    ^bb0({}):", block.join(", "));
        self.calls(body, "      ", &mut Fresh::new("%u"), &mut current, &[]);
        let yielded: Vec<String> = outs
            .iter()
            .map(|&p| current[p].clone().unwrap_or_default())
            .collect();
        let yielded_types: Vec<&str> = outs
            .iter()
            .map(|&p| element_type(sig.params[p].dtype))
            .collect();
        let _ = writeln!(
            body,
            "      linalg.yield {} : {}\n    }} -> ({})",
            yielded.join(", "),
            yielded_types.join(", "),
            types(sig, outs)
        );
        (0..outs.len()).map(|i| format!("%r#{i}")).collect()
    }

    /// Emits the nest as `scf.for` loops, with `partials` folded in: one loop per leading
    /// dimension, and per row of the innermost one the loops of [`Nest::row`]. The tensors
    /// of [`Nest::outs`] and the running partials (from the values in memory) are carried
    /// through the loops; returns their final values.
    fn chunked(&self, body: &mut String, partials: &[Partial]) -> (Vec<String>, Vec<String>) {
        let sig = self.sig;
        let rank = sig.params[self.space].rank;
        for k in 0..=REDUCTION_LANES.max(rank) {
            let _ = writeln!(body, "    %n_c{k} = arith.constant {k} : index");
        }
        let space_type = memref_type(&sig.params[self.space]);
        for d in 0..rank {
            let _ = writeln!(
                body,
                "    %n_d{d} = memref.dim %m{}, %n_c{d} : {space_type}",
                self.space
            );
        }
        let mut running = Vec::new();
        for r in partials {
            let q = r.param;
            let _ = writeln!(
                body,
                "    %n_id{q} = arith.constant {} : {}\n    %n_s{q} = memref.load %m{q}[] : {}",
                r.identity,
                self.partial_type(r),
                memref_type(&sig.params[q])
            );
            running.push(format!("%n_s{q}"));
        }
        for &p in self.ins.iter().filter(|&&p| sig.params[p].rank == 0) {
            let _ = writeln!(
                body,
                "    %n_in{p} = tensor.extract %t{p}[] : {}",
                tensor_of(&sig.params[p])
            );
        }
        let carried_types = self.carried_types(partials);
        let mut tensors: Vec<String> = self.outs.iter().map(|p| format!("%t{p}")).collect();
        let mut fresh = Fresh::new("%u");
        let mut indent = String::from("    ");
        let mut at = Vec::new();
        let mut leading = Vec::new();
        for d in 0..rank - 1 {
            let result = format!("%n_v{d}");
            let carried = open_loop(
                body,
                &indent,
                &result,
                &format!("%n_i{d}"),
                ["%n_c0", &format!("%n_d{d}"), "%n_c1"],
                &[tensors.as_slice(), running.as_slice()].concat(),
                &carried_types,
            );
            (tensors, running) = split(carried, self.outs.len());
            at.push(format!("%n_i{d}"));
            leading.push(result);
            indent.push_str("  ");
        }
        (tensors, running) = self.row(body, &indent, &mut fresh, &at, (tensors, running), partials);
        for result in leading.iter().rev() {
            close_loop(body, &indent, &[tensors, running].concat(), &carried_types);
            indent.truncate(indent.len() - 2);
            let all = 0..carried_types.len();
            (tensors, running) = split(results(result, all), self.outs.len());
        }
        (tensors, running)
    }

    /// Emits, at `indent`, the loops over the innermost row at leading indices `at`: chunks
    /// of [`REDUCTION_LANES`] elements with one partial per lane and reduction (each from the
    /// identity), the lanes folded into the running partials in order, then the row's
    /// remaining elements one by one, as the native kernels fold. Takes and returns the
    /// carried tensors and running partials.
    fn row(
        &self,
        body: &mut String,
        indent: &str,
        fresh: &mut Fresh,
        at: &[String],
        (tensors, mut running): (Vec<String>, Vec<String>),
        partials: &[Partial],
    ) -> (Vec<String>, Vec<String>) {
        let rank = self.sig.params[self.space].rank;
        let len = format!("%n_d{}", rank - 1);
        let _ = writeln!(
            body,
            "{indent}%n_rest = arith.remui {len}, %n_c{REDUCTION_LANES} : index\n{indent}%n_chunked = arith.subi {len}, %n_rest : index"
        );
        let outs = self.outs.len();
        let mut chunk_types = self.carried_types(&[]);
        let mut chunk_inits = tensors;
        for r in partials {
            for _ in 0..REDUCTION_LANES {
                chunk_types.push(self.partial_type(r).to_string());
                chunk_inits.push(format!("%n_id{}", r.param));
            }
        }
        let carried = open_loop(
            body,
            indent,
            "%n_chunks",
            "%n_j",
            ["%n_c0", "%n_chunked", &format!("%n_c{REDUCTION_LANES}")],
            &chunk_inits,
            &chunk_types,
        );
        let inner = format!("{indent}  ");
        let (mut chunk_tensors, lane_values) = split(carried, outs);
        let mut lanes: Vec<Vec<String>> = lane_values
            .chunks(REDUCTION_LANES)
            .map(<[String]>::to_vec)
            .collect();
        for k in 0..REDUCTION_LANES {
            let position = if k == 0 {
                "%n_j".to_string()
            } else {
                let v = fresh.name();
                let _ = writeln!(body, "{inner}{v} = arith.addi %n_j, %n_c{k} : index");
                v
            };
            let element_at = [at, &[position]].concat();
            let values: Vec<String> = lanes.iter().map(|l| l[k].clone()).collect();
            let (t, v) = self.element(
                body,
                &inner,
                fresh,
                &element_at,
                &chunk_tensors,
                partials,
                &values,
            );
            chunk_tensors = t;
            for (lane, value) in lanes.iter_mut().zip(v) {
                lane[k] = value;
            }
        }
        close_loop(
            body,
            &inner,
            &[chunk_tensors, lanes.concat()].concat(),
            &chunk_types,
        );
        let tensors = results("%n_chunks", 0..outs);
        for (i, (r, value)) in partials.iter().zip(running.iter_mut()).enumerate() {
            let first = outs + i * REDUCTION_LANES;
            for lane in results("%n_chunks", first..first + REDUCTION_LANES) {
                let folded = fresh.name();
                let _ = writeln!(
                    body,
                    "{indent}{folded} = arith.{} {value}, {lane} : {}",
                    r.combine,
                    self.partial_type(r)
                );
                *value = folded;
            }
        }

        // The rest of the row, element by element into the running partials.
        let carried_types = self.carried_types(partials);
        let carried = open_loop(
            body,
            indent,
            "%n_tail",
            "%n_k",
            ["%n_chunked", &len, "%n_c1"],
            &[tensors, running].concat(),
            &carried_types,
        );
        let (rest_tensors, rest_running) = split(carried, outs);
        let element_at = [at, &["%n_k".to_string()]].concat();
        let (t, v) = self.element(
            body,
            &inner,
            fresh,
            &element_at,
            &rest_tensors,
            partials,
            &rest_running,
        );
        close_loop(body, &inner, &[t, v].concat(), &carried_types);
        split(results("%n_tail", 0..carried_types.len()), outs)
    }

    /// The element type of a partial.
    fn partial_type(&self, r: &Partial) -> &'static str {
        element_type(self.sig.params[r.param].dtype)
    }

    /// The types the loops carry: the tensors of [`Nest::outs`], then one value per partial.
    fn carried_types(&self, partials: &[Partial]) -> Vec<String> {
        self.outs
            .iter()
            .map(|&p| tensor_of(&self.sig.params[p]))
            .chain(partials.iter().map(|r| self.partial_type(r).to_string()))
            .collect()
    }

    /// Emits the per-element steps at the element with iteration-space indices `at`: reads
    /// its inputs (and the read-write outputs from their carried `tensors`), calls the steps
    /// with `partials` at `values`, and inserts the outputs. Returns the new tensors and
    /// partial values.
    #[allow(clippy::too_many_arguments)]
    fn element(
        &self,
        body: &mut String,
        indent: &str,
        fresh: &mut Fresh,
        at: &[String],
        tensors: &[String],
        partials: &[Partial],
        values: &[String],
    ) -> (Vec<String>, Vec<String>) {
        let sig = self.sig;
        let mut current = self.start_values();
        for &p in self.ins {
            let param = &sig.params[p];
            current[p] = Some(if param.rank == 0 {
                format!("%n_in{p}")
            } else {
                let v = fresh.name();
                let _ = writeln!(
                    body,
                    "{indent}{v} = tensor.extract %t{p}[{}] : {}",
                    self.indices_of(p, at, "%n_c0").join(", "),
                    tensor_of(param)
                );
                v
            });
        }
        let index = at.join(", ");
        for (&p, tensor) in self.outs.iter().zip(tensors) {
            if sig.params[p].privilege == Privilege::ReadWrite {
                let v = fresh.name();
                let _ = writeln!(
                    body,
                    "{indent}{v} = tensor.extract {tensor}[{index}] : {}",
                    tensor_of(&sig.params[p])
                );
                current[p] = Some(v);
            }
        }
        for (r, value) in partials.iter().zip(values) {
            current[r.param] = Some(value.clone());
        }
        self.calls(body, indent, fresh, &mut current, at);
        let tensors = self
            .outs
            .iter()
            .zip(tensors)
            .map(|(&p, tensor)| match &current[p] {
                Some(v) => {
                    let inserted = fresh.name();
                    let _ = writeln!(
                        body,
                        "{indent}{inserted} = tensor.insert {v} into {tensor}[{index}] : {}",
                        tensor_of(&sig.params[p])
                    );
                    inserted
                }
                None => tensor.clone(),
            })
            .collect();
        let values = partials
            .iter()
            .zip(values)
            .map(|(r, v)| current[r.param].clone().unwrap_or_else(|| v.clone()))
            .collect();
        (tensors, values)
    }
}

/// The tensors `%t<p>` of parameters `ps`, comma-separated.
fn operands(ps: &[usize]) -> String {
    ps.iter()
        .map(|p| format!("%t{p}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The tensor types of parameters `ps`, comma-separated.
fn types(sig: &KernelSignature, ps: &[usize]) -> String {
    ps.iter()
        .map(|&p| tensor_of(&sig.params[p]))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Emits the header of `result:N = scf.for iv = lo to hi step step` carrying `inits` (of
/// `types`) at `indent`; returns the names of the carried values inside the loop.
fn open_loop(
    body: &mut String,
    indent: &str,
    result: &str,
    iv: &str,
    [lo, hi, step]: [&str; 3],
    inits: &[String],
    types: &[String],
) -> Vec<String> {
    let carried: Vec<String> = (0..inits.len()).map(|i| format!("{}_a{i}", iv)).collect();
    let args: Vec<String> = carried
        .iter()
        .zip(inits)
        .map(|(c, init)| format!("{c} = {init}"))
        .collect();
    let _ = writeln!(
        body,
        "{indent}{result}:{} = scf.for {iv} = {lo} to {hi} step {step} iter_args({}) -> ({}) {{",
        inits.len(),
        args.join(", "),
        types.join(", ")
    );
    carried
}

/// Emits the `scf.yield` of `values` (of `types`) at `indent` and closes the loop.
fn close_loop(body: &mut String, indent: &str, values: &[String], types: &[String]) {
    let outer = &indent[..indent.len().saturating_sub(2)];
    let _ = writeln!(
        body,
        "{indent}scf.yield {} : {}\n{outer}}}",
        values.join(", "),
        types.join(", ")
    );
}

/// The results `result#i` for `i` in `range`.
fn results(result: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("{result}#{i}")).collect()
}

/// Splits carried values into the first `n` (the tensors) and the rest (the partials).
fn split(mut values: Vec<String>, n: usize) -> (Vec<String>, Vec<String>) {
    let rest = values.split_off(n);
    (values, rest)
}
