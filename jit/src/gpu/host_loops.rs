//! Moving the loops that bufferization leaves on the host onto the device.
//!
//! The mapping to the GPU only maps `scf.parallel` loops (which `linalg` ops become); anything
//! else stays in the host function, where it would read device memory, and
//! [`check_host`](super::pipeline::check_host) refuses the kernel. Two kinds of host work are
//! parallel and are rewritten here, in the printed bufferized module (canonicalized), before
//! the mapping:
//!
//! - `memref.copy %a, %b` (bufferization's copy of a value into its destination parameter,
//!   e.g. a kernel whose result is its input once the identity loop is folded away: a
//!   sub-store copy) becomes `linalg.copy`, a parallel loop nest over the elements.
//! - An `scf.for` over the rows of a function parameter whose iterations are independent
//!   becomes an `scf.parallel`: one row per thread. Independence is checked syntactically:
//!   the loop carries no values, its body holds only arithmetic, loads, nested `scf.for`/
//!   `scf.if` and stores, and every store writes element `[i]` (the loop's index) of a
//!   parameter that the body reads only at `[i]`. Parameters a kernel mutates are reached
//!   through that parameter alone (`noalias`), so no other iteration reads or writes the
//!   element. CSR SpMV (`y[i] = sum over the row's entries`) has this form; a reduction
//!   (a loop carrying its running value) does not, and stays refused.

/// The bufferized module `text` (printed) with its copies as `linalg.copy` and its
/// independent row loops as `scf.parallel` (module docs).
pub(crate) fn to_device_loops(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut parameters: Vec<String> = Vec::new();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < lines.len() {
        let line = lines[at];
        if line.trim_start().starts_with("func.func") {
            parameters = function_parameters(line);
        }
        if let Some(copy) = Copy::parse(line) {
            out.push_str(&copy.as_linalg());
            out.push('\n');
            at += 1;
            continue;
        }
        if let Some(header) = RowLoop::parse(line) {
            let end = region_end(&lines, at);
            let body = &lines[at + 1..end];
            if header.is_independent(body, &parameters) {
                out.push_str(&header.as_parallel());
                out.push('\n');
            } else {
                out.push_str(line);
                out.push('\n');
            }
            // A loop nested in one that stays sequential stays sequential too; one nested in
            // a parallel loop runs in its thread.
            for inner in body {
                out.push_str(inner);
                out.push('\n');
            }
            at = end;
            continue;
        }
        out.push_str(line);
        out.push('\n');
        at += 1;
    }
    out
}

/// The names (`%arg0`, ...) of the parameters of the function whose header is `line`.
fn function_parameters(line: &str) -> Vec<String> {
    line.split('%')
        .skip(1)
        .filter_map(|piece| {
            let (name, rest) = piece.split_once(':')?;
            (!name.contains(' ') && rest.trim_start().starts_with("memref<"))
                .then(|| format!("%{name}"))
        })
        .collect()
}

/// The index of the line that closes the region opened on line `open` (the last line if
/// braces never balance).
pub(super) fn region_end(lines: &[&str], open: usize) -> usize {
    let mut depth = 0i64;
    for (i, line) in lines.iter().enumerate().skip(open) {
        depth += line.matches('{').count() as i64 - line.matches('}').count() as i64;
        if depth <= 0 {
            return i;
        }
    }
    lines.len() - 1
}

/// A printed `memref.copy %source, %target : SourceType to TargetType` line.
struct Copy<'a> {
    indent: &'a str,
    source: &'a str,
    target: &'a str,
    source_type: &'a str,
    target_type: &'a str,
}

impl<'a> Copy<'a> {
    /// The copy on `line`; `None` for any other line.
    fn parse(line: &'a str) -> Option<Self> {
        let (indent, body) = indented(line);
        let rest = body.strip_prefix("memref.copy ")?;
        let (operands, types) = rest.split_once(" : ")?;
        let (source, target) = operands.split_once(", ")?;
        let (source_type, target_type) = types.split_once(" to ")?;
        Some(Copy {
            indent,
            source,
            target,
            source_type,
            target_type,
        })
    }

    fn as_linalg(&self) -> String {
        format!(
            "{}linalg.copy ins({} : {}) outs({} : {})",
            self.indent, self.source, self.source_type, self.target, self.target_type
        )
    }
}

/// A printed line's indentation and the rest of it.
fn indented(line: &str) -> (&str, &str) {
    let body = line.trim_start();
    (&line[..line.len() - body.len()], body)
}

/// A printed `scf.for %i = %lb to %ub step %step {` line: a loop over `index` that carries
/// no values.
pub(super) struct RowLoop<'a> {
    pub(super) indent: &'a str,
    pub(super) index: &'a str,
    pub(super) lower: &'a str,
    pub(super) upper: &'a str,
    pub(super) step: &'a str,
}

impl<'a> RowLoop<'a> {
    /// The loop on `line`; `None` for any other line.
    pub(super) fn parse(line: &'a str) -> Option<Self> {
        let (indent, body) = indented(line);
        let rest = body.strip_prefix("scf.for ")?.strip_suffix(" {")?;
        let (index, rest) = rest.split_once(" = ")?;
        let (lower, rest) = rest.split_once(" to ")?;
        let (upper, step) = rest.split_once(" step ")?;
        let simple = |s: &str| s.starts_with('%') && !s.contains([' ', ':', '(']);
        [index, lower, upper, step]
            .iter()
            .all(|s| simple(s))
            .then_some(RowLoop {
                indent,
                index,
                lower,
                upper,
                step,
            })
    }

    fn as_parallel(&self) -> String {
        let RowLoop {
            indent,
            index,
            lower,
            upper,
            step,
        } = self;
        format!("{indent}scf.parallel ({index}) = ({lower}) to ({upper}) step ({step}) {{")
    }

    /// True when the iterations of a loop with this `body` are independent (module docs);
    /// `parameters` are the function's memref parameters.
    fn is_independent(&self, body: &[&str], parameters: &[String]) -> bool {
        let own_element = format!("[{}]", self.index);
        let mut written: Vec<&str> = Vec::new();
        let mut accesses: Vec<(&str, &str)> = Vec::new();
        for line in body {
            let op = Op::parse(line);
            match op.name {
                "" | "}" => {}
                "memref.store" => {
                    let Some((memref, indices)) = op.access(1) else {
                        return false;
                    };
                    if indices != own_element || !parameters.iter().any(|p| p == memref) {
                        return false;
                    }
                    written.push(memref);
                }
                "memref.load" => match op.access(0) {
                    Some(access) => accesses.push(access),
                    None => return false,
                },
                name if name.starts_with("arith.")
                    || name.starts_with("math.")
                    || name.starts_with("index.") => {}
                "memref.dim" | "scf.for" | "scf.yield" | "scf.if" | "affine.apply"
                | "affine.min" | "affine.max" => {}
                _ => return false,
            }
        }
        !written.is_empty()
            && accesses
                .iter()
                .all(|(memref, indices)| !written.contains(memref) || *indices == own_element)
    }
}

/// One printed op line: its name and operands (what follows the name, up to the type).
struct Op<'a> {
    name: &'a str,
    operands: &'a str,
}

impl<'a> Op<'a> {
    fn parse(line: &'a str) -> Self {
        let body = line.trim();
        // `%r = op ...`, `%r:2 = op ...` or `op ...`.
        let body = match body.split_once(" = ") {
            Some((results, rest)) if results.starts_with('%') && !results.contains(' ') => rest,
            _ => body,
        };
        let (name, rest) = body.split_once(' ').unwrap_or((body, ""));
        let name = if name.starts_with('}') { "}" } else { name };
        let operands = rest.split_once(" : ").map_or(rest, |(o, _)| o);
        Op { name, operands }
    }

    /// For `memref.load %m[%i]` (`position` 0) or `memref.store %v, %m[%i]` (position 1):
    /// the memref and its bracketed indices.
    fn access(&self, position: usize) -> Option<(&'a str, &'a str)> {
        let access = if position == 0 {
            self.operands
        } else {
            self.operands.split_once(", ")?.1
        };
        let open = access.find('[')?;
        Some((&access[..open], &access[open..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "  func.func @kernel(%arg0: memref<?xf64, strided<[1], offset: ?>> {llvm.noalias}, %arg1: memref<?xi64, strided<[1], offset: ?>> {llvm.noalias}, %arg2: memref<?xf64, strided<[1], offset: ?>> {llvm.noalias}, %arg3: f64) {";

    /// A function whose only loop has `body` (its index is `%arg4`).
    fn function(body: &str) -> String {
        format!(
            "module {{\n{HEADER}\n    %c0 = arith.constant 0 : index\n    scf.for %arg4 = %c0 to %dim step %c1 {{\n{body}\n    }}\n    return\n  }}\n}}\n"
        )
    }

    fn parallel(text: &str) -> bool {
        let out = to_device_loops(text);
        assert_eq!(out.lines().count(), text.lines().count(), "{out}");
        out.contains("scf.parallel (%arg4) = (%c0) to (%dim) step (%c1) {")
    }

    #[test]
    fn parameters_are_the_memrefs_of_the_header() {
        assert_eq!(function_parameters(HEADER), ["%arg0", "%arg1", "%arg2"]);
    }

    #[test]
    fn copies_become_linalg_copies_and_other_lines_stay() {
        let text = "func.func @k() {\n    memref.copy %arg0, %subview : memref<?x?xf64, strided<[?, 1], offset: ?>> to memref<?x?xf64, strided<[?, 1], offset: ?>>\n    return\n}";
        assert_eq!(
            to_device_loops(text),
            "func.func @k() {\n    linalg.copy ins(%arg0 : memref<?x?xf64, strided<[?, 1], offset: ?>>) outs(%subview : memref<?x?xf64, strided<[?, 1], offset: ?>>)\n    return\n}\n"
        );
    }

    #[test]
    fn a_loop_writing_its_own_row_of_a_parameter_becomes_parallel() {
        // SpMV's shape: reads through an index array, a sequential inner sum, one store.
        let spmv = "      %1 = memref.load %arg1[%arg4] : memref<?xi64, strided<[1], offset: ?>>
      %2 = arith.index_cast %1 : i64 to index
      %5 = scf.for %arg8 = %c0 to %2 step %c1 iter_args(%arg9 = %arg3) -> (f64) {
        %9 = memref.load %arg2[%arg8] : memref<?xf64, strided<[1], offset: ?>>
        %11 = arith.addf %arg9, %9 : f64
        scf.yield %11 : f64
      }
      %6 = memref.load %arg0[%arg4] : memref<?xf64, strided<[1], offset: ?>>
      %7 = arith.addf %5, %6 : f64
      memref.store %7, %arg0[%arg4] : memref<?xf64, strided<[1], offset: ?>>";
        assert!(parallel(&function(spmv)));
    }

    #[test]
    fn loops_whose_iterations_interact_stay_sequential() {
        let store =
            "      memref.store %arg3, %arg0[%arg4] : memref<?xf64, strided<[1], offset: ?>>";
        // Another row of what is written is read.
        let neighbour = format!(
            "      %1 = memref.load %arg0[%c0] : memref<?xf64, strided<[1], offset: ?>>\n{store}"
        );
        // A store elsewhere than the loop's own element.
        let elsewhere =
            "      memref.store %arg3, %arg0[%c0] : memref<?xf64, strided<[1], offset: ?>>";
        // A store into a buffer that is not a parameter (it may alias another).
        let local = "      memref.store %arg3, %alloc[%arg4] : memref<?xf64>";
        // Anything but arithmetic, loads, stores and structured control flow.
        let call = format!("      func.call @f() : () -> ()\n{store}");
        for body in [neighbour.as_str(), elsewhere, local, call.as_str()] {
            assert!(!parallel(&function(body)), "{body}");
        }
        // A loop that carries a value (a reduction) is not a candidate.
        let reduction = function(store).replace(
            "scf.for %arg4 = %c0 to %dim step %c1 {",
            "%r = scf.for %arg4 = %c0 to %dim step %c1 iter_args(%s = %arg3) -> (f64) {",
        );
        assert!(!parallel(&reduction));
        assert!(parallel(&function(store)));
    }
}
