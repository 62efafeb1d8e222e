//! Host work that is not a parallel loop, written as explicit `gpu.launch` ops so that it runs
//! on the device: full reductions and scalar bodies.
//!
//! After `convert-linalg-to-parallel-loops` a reduction into a 0-d store is a sequential
//! `scf.for` on the host that loads the accumulator, combines it with the iteration's value
//! and stores it back; a kernel over 0-d stores only (`alpha = rr / pq`) has no loop at all.
//! The loop mapper maps neither, and [`check_host`](super::pipeline::check_host) would refuse
//! them. This pass rewrites them in the printed loops module, before the mapping:
//!
//! - **A full reduction** becomes two launches whose shape depends on the number of
//!   elements only, so that the result depends only on the data, never on the GPU model:
//!   1. B = min([`BLOCKS`], ceil(iterations / [`THREADS`])) blocks of [`THREADS`] threads
//!      (at least one): global thread `g` folds, in index order, the iterations `g, g + T,
//!      g + 2T, ...` (T = `B * THREADS`, so consecutive threads read consecutive elements)
//!      starting from the operation's identity; each block folds its threads' partials with
//!      a fixed binary tree in shared memory (strides 128, 64, ..., 1, with barriers) and
//!      writes one partial to a *workspace* buffer of `BLOCKS` elements;
//!   2. one block: thread `t` folds partials `t, t + 256, ...` (of B), the same tree, and thread 0
//!      folds the total into the store: `acc = acc (op) total`, as the CPU path folds a
//!      point's private accumulator into its store.
//!
//!   The result differs from the CPU's sequential order by rounding only (a sum's error
//!   bound is the same order as the sequential one's, usually smaller). The workspace is a
//!   trailing parameter of the entry function (`memref<BLOCKS x T>`), one per reduction,
//!   which the caller allocates ([`GpuKernel::workspace_bytes`](super::GpuKernel::workspace_bytes)).
//!   Recognized: a loop whose body loads a 0-d accumulator once, combines the loaded value
//!   once by an associative, commutative `arith` op (sums, products, min/max, bitwise and/or/
//!   xor) and stores the result back as its last op, with no other store. The accumulator is
//!   a parameter, or a 0-d buffer bufferization copied a parameter into and back out of
//!   (which then goes: the launches update the parameter).
//! - **A scalar body**, a function with loads and stores but no loop, runs in one thread of
//!   one launch.
//!
//! Anything else is left as it was, for `check_host` to refuse.

use super::host_loops::{region_end, RowLoop as ForLoop};
use super::pipeline::BLOCK as THREADS;

/// Blocks of the first stage of a reduction (and elements of its workspace).
pub(crate) const BLOCKS: usize = 1024;

/// The loops module `text` (printed) with its full reductions and scalar body as launches,
/// and the workspace bytes of each reduction, in parameter order.
pub(crate) fn explicit_launches(text: &str) -> (String, Vec<usize>) {
    let lines: Vec<&str> = text.lines().collect();
    let Some(header) = lines
        .iter()
        .position(|l| l.trim_start().starts_with("func.func @kernel("))
    else {
        return (text.to_string(), Vec::new());
    };
    let end = region_end(&lines, header);
    let body: Vec<String> = lines[header + 1..end]
        .iter()
        .map(|l| l.to_string())
        .collect();
    let parameters = parameters(lines[header]);
    let mut rewriter = Rewriter {
        parameters: &parameters,
        workspaces: Vec::new(),
    };
    let body = rewriter.reductions(body);
    let body = scalar_body(body);
    let mut out = String::with_capacity(text.len() + 4096);
    for line in &lines[..header] {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&with_workspaces(lines[header], &rewriter.workspaces));
    out.push('\n');
    for line in &body {
        out.push_str(line);
        out.push('\n');
    }
    for line in &lines[end..] {
        out.push_str(line);
        out.push('\n');
    }
    let bytes = rewriter
        .workspaces
        .iter()
        .map(|w| BLOCKS * element_bytes(&w.element))
        .collect();
    (out, bytes)
}

/// A workspace parameter added to the entry function.
struct Workspace {
    name: String,
    element: String,
}

struct Rewriter<'a> {
    /// (name, type) of each parameter of the entry function.
    parameters: &'a [(String, String)],
    workspaces: Vec<Workspace>,
}

impl Rewriter<'_> {
    /// `body` (the entry function's lines) with every recognized reduction loop rewritten.
    /// Only loops directly in the function body are candidates.
    fn reductions(&mut self, mut body: Vec<String>) -> Vec<String> {
        let top = indent_of(body.first().map_or("", String::as_str)).to_string();
        let mut at = 0;
        while at < body.len() {
            let Some(header) = ForLoop::parse(&body[at]).filter(|h| h.indent == top) else {
                at += 1;
                continue;
            };
            let end = region_end_owned(&body, at);
            match self.reduction(&body, at, end, &header) {
                Some(rewrite) => at = rewrite.apply(&mut body, at, end),
                None => at = end + 1,
            }
        }
        body
    }

    /// The rewrite of the loop on lines `at..=end` of `body` if it is a full reduction.
    fn reduction(
        &mut self,
        body: &[String],
        at: usize,
        end: usize,
        header: &ForLoop,
    ) -> Option<Rewrite> {
        let inner = &body[at + 1..end];
        let direct_indent = format!("{}  ", header.indent);
        let is_direct =
            |l: &str| l.starts_with(&direct_indent) && !l[direct_indent.len()..].starts_with(' ');
        // The last line of the body stores the combined value into a 0-d memref.
        let last = inner.last()?;
        let (stored, accumulator) = zero_d_store(last)?;
        if !is_direct(last) {
            return None;
        }
        let accesses = |needle: &str| inner.iter().filter(|l| mentions(l, needle)).count();
        // Exactly one load of it, directly in the body, and no other store at all.
        let loads: Vec<usize> = (0..inner.len())
            .filter(|&i| zero_d_load(&inner[i]).is_some_and(|(_, m)| m == accumulator))
            .collect();
        let [load] = loads[..] else { return None };
        if !is_direct(&inner[load]) || accesses(&accumulator) != 2 {
            return None;
        }
        if inner
            .iter()
            .filter(|l| op_name(l) == "memref.store")
            .count()
            != 1
        {
            return None;
        }
        let (loaded, _) = zero_d_load(&inner[load])?;
        // The loaded value is used once: by the combine op, whose result is stored.
        let uses: Vec<usize> = (0..inner.len())
            .filter(|&i| i != load && mentions(&inner[i], &loaded))
            .collect();
        let [combine] = uses[..] else { return None };
        let combine_line = Combine::parse(&inner[combine])?;
        if combine_line.result != stored || !is_direct(&inner[combine]) {
            return None;
        }
        if ![&combine_line.lhs, &combine_line.rhs].contains(&&loaded) {
            return None;
        }
        let element = combine_line.element.clone();
        let identity = identity(&combine_line.op, &element)?;
        let (target, target_type, copies) = self.target(body, at, &accumulator)?;
        let n = self.workspaces.len();
        let workspace = format!("%red{n}_workspace");
        self.workspaces.push(Workspace {
            name: workspace.clone(),
            element: element.clone(),
        });
        Some(Rewrite {
            lines: launches(&Launch {
                n,
                header,
                body: inner,
                load,
                combine,
                loaded: &loaded,
                op: &combine_line.op,
                element: &element,
                identity: &identity,
                target: &target,
                target_type: &target_type,
                workspace: &workspace,
            }),
            copies,
        })
    }

    /// The parameter a loop's 0-d accumulator stands for: the accumulator itself if it is a
    /// parameter, else the parameter bufferization copied into it before the loop (line
    /// `before` and earlier) and back after it, with the lines of those copies and of its
    /// allocation (which the rewrite removes).
    fn target(
        &self,
        body: &[String],
        before: usize,
        accumulator: &str,
    ) -> Option<(String, String, Vec<usize>)> {
        if let Some((name, ty)) = self.parameters.iter().find(|(n, _)| n == accumulator) {
            return Some((name.clone(), ty.clone(), Vec::new()));
        }
        let mut copies = Vec::new();
        let alloc = (0..before).find(|&i| {
            body[i]
                .trim_start()
                .starts_with(&format!("{accumulator} = memref.alloc()"))
        })?;
        copies.push(alloc);
        // Copy in: `%a = memref.load %P[]`, `memref.store %a, %acc[]`.
        let store_in = (alloc..before)
            .find(|&i| zero_d_store(&body[i]).is_some_and(|(_, m)| m == accumulator))?;
        let (copied, _) = zero_d_store(&body[store_in])?;
        let load_in = (0..store_in)
            .rev()
            .find(|&i| zero_d_load(&body[i]).is_some_and(|(v, _)| v == copied))?;
        let (_, parameter) = zero_d_load(&body[load_in])?;
        let uses_of_copied = body.iter().filter(|l| mentions(l, &copied)).count();
        if uses_of_copied != 2 {
            return None;
        }
        // Copy out: `%b = memref.load %acc[]`, `memref.store %b, %P[]` after the loop.
        let after = region_end_owned(body, before) + 1;
        let load_out = (after..body.len())
            .find(|&i| zero_d_load(&body[i]).is_some_and(|(_, m)| m == accumulator))?;
        let (result, _) = zero_d_load(&body[load_out])?;
        let store_out = (load_out..body.len()).find(|&i| {
            zero_d_store(&body[i]).is_some_and(|(v, m)| v == result && m == parameter)
        })?;
        let uses_of_result = body.iter().filter(|l| mentions(l, &result)).count();
        // Its deallocation, if placed.
        let dealloc = (after..body.len()).find(|&i| {
            body[i].trim()
                == format!(
                    "memref.dealloc {accumulator} : {}",
                    alloc_type(&body[alloc])
                )
        });
        // Everything that touches the buffer: allocation, copy in, the loop's load and
        // store, copy out, deallocation.
        let touches = body.iter().filter(|l| mentions(l, accumulator)).count();
        if uses_of_result != 2 || touches != 5 + usize::from(dealloc.is_some()) {
            return None;
        }
        copies.extend(dealloc);
        let (name, ty) = self.parameters.iter().find(|(n, _)| *n == parameter)?;
        copies.extend([load_in, store_in, load_out, store_out]);
        Some((name.clone(), ty.clone(), copies))
    }
}

/// A loop's replacement and the lines elsewhere in the function it makes dead.
struct Rewrite {
    lines: Vec<String>,
    copies: Vec<usize>,
}

impl Rewrite {
    /// Replaces lines `at..=end` of `body` with the launches and removes the dead copies;
    /// returns the index of the line after the launches (where scanning goes on).
    fn apply(self, body: &mut Vec<String>, at: usize, end: usize) -> usize {
        let count = self.lines.len();
        body.splice(at..=end, self.lines);
        let shift = count as isize - (end + 1 - at) as isize;
        let mut dead: Vec<usize> = self
            .copies
            .iter()
            .map(|&i| {
                if i > end {
                    (i as isize + shift) as usize
                } else {
                    i
                }
            })
            .collect();
        dead.sort_unstable();
        let removed_before = dead.iter().filter(|&&i| i < at).count();
        for i in dead.into_iter().rev() {
            body.remove(i);
        }
        at - removed_before + count
    }
}

/// What the launches of one reduction are made from.
struct Launch<'a> {
    /// The reduction's number (names its values `%red<n>_...`).
    n: usize,
    header: &'a ForLoop<'a>,
    /// The loop's body lines.
    body: &'a [String],
    /// Body line loading the accumulator.
    load: usize,
    /// Body line combining the loaded value.
    combine: usize,
    loaded: &'a str,
    op: &'a str,
    element: &'a str,
    identity: &'a str,
    target: &'a str,
    target_type: &'a str,
    workspace: &'a str,
}

/// The two launches of a reduction (module docs).
fn launches(l: &Launch<'_>) -> Vec<String> {
    let Launch {
        n,
        header,
        element: t,
        op,
        identity,
        workspace,
        ..
    } = *l;
    let i = header.indent;
    let p = format!("%red{n}_");
    let ws_type = format!("memref<{BLOCKS}x{t}>");
    let shared_type = format!("memref<{THREADS}x{t}, #gpu.address_space<workgroup>>");
    let (lo, hi, step) = (header.lower, header.upper, header.step);
    let mut out = vec![
        format!("{i}{p}most = arith.constant {BLOCKS} : index"),
        format!("{i}{p}threads = arith.constant {THREADS} : index"),
        format!("{i}{p}one = arith.constant 1 : index"),
        format!("{i}{p}zero = arith.constant 0 : index"),
        format!("{i}{p}identity = arith.constant {identity} : {t}"),
        // Blocks: enough for one iteration per thread, at most `BLOCKS`, at least one.
        format!("{i}{p}span = arith.subi {hi}, {lo} : index"),
        format!("{i}{p}positive = arith.maxsi {p}span, {p}zero : index"),
        format!("{i}{p}iterations = arith.ceildivui {p}positive, {step} : index"),
        format!("{i}{p}needed = arith.ceildivui {p}iterations, {p}threads : index"),
        format!("{i}{p}capped = arith.minui {p}needed, {p}most : index"),
        format!("{i}{p}blocks = arith.maxui {p}capped, {p}one : index"),
        format!("{i}{p}total = arith.muli {p}blocks, {p}threads : index"),
        format!(
            "{i}gpu.launch blocks({p}bx, {p}by, {p}bz) in ({p}gx = {p}blocks, {p}gy = {p}one, \
{p}gz = {p}one) threads({p}tx, {p}ty, {p}tz) in ({p}sx = {p}threads, {p}sy = {p}one, \
{p}sz = {p}one) workgroup({p}shared : {shared_type}) {{"
        ),
    ];
    let j = format!("{i}  ");
    let index = header.index;
    out.extend([
        format!("{j}{p}base = arith.muli {p}bx, {p}threads : index"),
        format!("{j}{p}g = arith.addi {p}base, {p}tx : index"),
        format!("{j}{p}offset = arith.muli {p}g, {step} : index"),
        format!("{j}{p}start = arith.addi {lo}, {p}offset : index"),
        format!("{j}{p}stride = arith.muli {p}total, {step} : index"),
        format!(
            "{j}{p}partial = scf.for {index} = {p}start to {hi} step {p}stride \
iter_args({p}running = {p}identity) -> ({t}) {{"
        ),
    ]);
    for (k, line) in l.body.iter().enumerate() {
        if k == l.load {
            continue;
        }
        let line = if k == l.combine {
            replace_value(line, l.loaded, &format!("{p}running"))
        } else {
            line.clone()
        };
        if k + 1 == l.body.len() {
            let (stored, _) = zero_d_store(&line).unwrap_or_default();
            out.push(format!("{j}  scf.yield {stored} : {t}"));
        } else {
            out.push(format!("  {line}"));
        }
    }
    out.push(format!("{j}}}"));
    // Stage s folds `value` of every thread `tx` through `shared` (tree values `<p>s<s>_`).
    let tree = |stage: &str, shared: &str, tx: &str, value: &str| {
        let names = |suffix: &str| format!("{p}{suffix}");
        block_tree(
            &BlockTree {
                j: &j,
                q: &names(&format!("{stage}_")),
                shared: &names(shared),
                tx: &names(tx),
                value: &names(value),
            },
            op,
            t,
        )
    };
    out.extend(tree("s1", "shared", "tx", "partial"));
    out.extend([
        format!("{j}{p}s1_first = arith.cmpi eq, {p}tx, {p}zero : index"),
        format!("{j}scf.if {p}s1_first {{"),
        format!("{j}  {p}s1_block = memref.load {p}shared[{p}zero] : {shared_type}"),
        format!("{j}  memref.store {p}s1_block, {workspace}[{p}bx] : {ws_type}"),
        format!("{j}}}"),
        format!("{j}gpu.terminator"),
        format!("{i}}}"),
    ]);
    // Stage 2: one block folds the partials and the total into the target.
    out.push(format!(
        "{i}gpu.launch blocks({p}cx, {p}cy, {p}cz) in ({p}hx = {p}one, {p}hy = {p}one, \
{p}hz = {p}one) threads({p}ux, {p}uy, {p}uz) in ({p}vx = {p}threads, {p}vy = {p}one, \
{p}vz = {p}one) workgroup({p}shared2 : {shared_type}) {{"
    ));
    out.extend([
        format!(
            "{j}{p}partial2 = scf.for {p}k = {p}ux to {p}blocks step {p}threads \
iter_args({p}running2 = {p}identity) -> ({t}) {{"
        ),
        format!("{j}  {p}part = memref.load {workspace}[{p}k] : {ws_type}"),
        format!("{j}  {p}folded = arith.{op} {p}running2, {p}part : {t}"),
        format!("{j}  scf.yield {p}folded : {t}"),
        format!("{j}}}"),
    ]);
    out.extend(tree("s2", "shared2", "ux", "partial2"));
    let (target, target_type) = (l.target, l.target_type);
    out.extend([
        format!("{j}{p}s2_first = arith.cmpi eq, {p}ux, {p}zero : index"),
        format!("{j}scf.if {p}s2_first {{"),
        format!("{j}  {p}sum = memref.load {p}shared2[{p}zero] : {shared_type}"),
        format!("{j}  {p}old = memref.load {target}[] : {target_type}"),
        format!("{j}  {p}new = arith.{op} {p}old, {p}sum : {t}"),
        format!("{j}  memref.store {p}new, {target}[] : {target_type}"),
        format!("{j}}}"),
        format!("{j}gpu.terminator"),
        format!("{i}}}"),
    ]);
    out
}

/// The threads of a block (thread index `tx`) storing `value` into the workgroup buffer
/// `shared` and folding it with a fixed binary tree: after it, element 0 holds the block's
/// total. `q` prefixes the tree's own values; `j` is the indentation.
struct BlockTree<'a> {
    j: &'a str,
    q: &'a str,
    shared: &'a str,
    tx: &'a str,
    value: &'a str,
}

fn block_tree(tree: &BlockTree<'_>, op: &str, t: &str) -> Vec<String> {
    let BlockTree {
        j,
        q,
        shared,
        tx,
        value,
    } = *tree;
    let shared_type = format!("memref<{THREADS}x{t}, #gpu.address_space<workgroup>>");
    let mut out = vec![
        format!("{j}memref.store {value}, {shared}[{tx}] : {shared_type}"),
        format!("{j}gpu.barrier"),
    ];
    let mut width = THREADS / 2;
    while width >= 1 {
        out.extend([
            format!("{j}{q}w{width} = arith.constant {width} : index"),
            format!("{j}{q}in{width} = arith.cmpi ult, {tx}, {q}w{width} : index"),
            format!("{j}scf.if {q}in{width} {{"),
            format!("{j}  {q}o{width} = arith.addi {tx}, {q}w{width} : index"),
            format!("{j}  {q}a{width} = memref.load {shared}[{tx}] : {shared_type}"),
            format!("{j}  {q}b{width} = memref.load {shared}[{q}o{width}] : {shared_type}"),
            format!("{j}  {q}c{width} = arith.{op} {q}a{width}, {q}b{width} : {t}"),
            format!("{j}  memref.store {q}c{width}, {shared}[{tx}] : {shared_type}"),
            format!("{j}}}"),
            format!("{j}gpu.barrier"),
        ]);
        width /= 2;
    }
    out
}

/// A function with memory accesses but no loop, run in one thread of one launch: its lines
/// (constants and the return stay on the host).
fn scalar_body(body: Vec<String>) -> Vec<String> {
    let ops: Vec<&str> = body.iter().map(|l| op_name(l)).collect();
    let loops = ops
        .iter()
        .any(|o| matches!(*o, "scf.for" | "scf.parallel" | "gpu.launch" | "scf.while"));
    let accesses = ops
        .iter()
        .any(|o| matches!(*o, "memref.load" | "memref.store"));
    let allocates = ops.iter().any(|o| o.starts_with("memref.alloc"));
    if loops || !accesses || allocates {
        return body;
    }
    let indent = indent_of(body.first().map_or("", String::as_str)).to_string();
    let one = "%scalar_one";
    let mut out = vec![format!("{indent}{one} = arith.constant 1 : index")];
    let mut inside = Vec::new();
    for (line, op) in body.iter().zip(&ops) {
        match *op {
            "arith.constant" => out.push(line.clone()),
            "func.return" | "return" => {}
            _ => inside.push(format!("  {line}")),
        }
    }
    out.push(format!(
        "{indent}gpu.launch blocks(%scalar_bx, %scalar_by, %scalar_bz) in (%scalar_gx = {one}, \
%scalar_gy = {one}, %scalar_gz = {one}) threads(%scalar_tx, %scalar_ty, %scalar_tz) in \
(%scalar_sx = {one}, %scalar_sy = {one}, %scalar_sz = {one}) {{"
    ));
    out.extend(inside);
    out.push(format!("{indent}  gpu.terminator"));
    out.push(format!("{indent}}}"));
    out.push(format!("{indent}return"));
    out
}

/// The entry function's header `line` with a `memref<BLOCKS x T>` parameter per workspace
/// appended to its parameters.
fn with_workspaces(line: &str, workspaces: &[Workspace]) -> String {
    if workspaces.is_empty() {
        return line.to_string();
    }
    let Some(close) = parameter_list_end(line) else {
        return line.to_string();
    };
    let added: Vec<String> = workspaces
        .iter()
        .map(|w| {
            format!(
                "{}: memref<{BLOCKS}x{}> {{llvm.noalias}}",
                w.name, w.element
            )
        })
        .collect();
    let separator = if line[..close].ends_with('(') {
        ""
    } else {
        ", "
    };
    format!(
        "{}{separator}{}{}",
        &line[..close],
        added.join(", "),
        &line[close..]
    )
}

/// The byte index of the `)` closing the parameter list of a `func.func` header.
fn parameter_list_end(line: &str) -> Option<usize> {
    let open = line.find('(')?;
    let mut depth = 0i32;
    for (k, c) in line[open..].char_indices() {
        match c {
            '(' | '<' | '[' | '{' => depth += 1,
            ')' | '>' | ']' | '}' => {
                depth -= 1;
                if depth == 0 && c == ')' {
                    return Some(open + k);
                }
            }
            _ => {}
        }
    }
    None
}

/// (name, type) of every parameter of a `func.func` header.
fn parameters(line: &str) -> Vec<(String, String)> {
    let (Some(open), Some(close)) = (line.find('('), parameter_list_end(line)) else {
        return Vec::new();
    };
    let list = &line[open + 1..close];
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let mut push = |piece: &str| {
        if let Some((name, rest)) = piece.trim().split_once(": ") {
            // Drop the argument attributes (`{llvm.noalias}`).
            let ty = rest.split(" {").next().unwrap_or(rest).trim();
            out.push((name.to_string(), ty.to_string()));
        }
    };
    for (k, c) in list.char_indices() {
        match c {
            '(' | '<' | '[' | '{' => depth += 1,
            ')' | '>' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                push(&list[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    push(&list[start..]);
    out
}

/// `%r = arith.<op> %a, %b [attributes] : T` for an associative, commutative `op`.
struct Combine {
    result: String,
    op: String,
    lhs: String,
    rhs: String,
    element: String,
}

impl Combine {
    fn parse(line: &str) -> Option<Self> {
        let (result, rest) = line.trim().split_once(" = ")?;
        let rest = rest.strip_prefix("arith.")?;
        let (op, rest) = rest.split_once(' ')?;
        identity(op, "f64").or_else(|| identity(op, "i64"))?;
        let (operands, element) = rest.rsplit_once(" : ")?;
        let (lhs, rhs) = operands.split_once(", ")?;
        let rhs = rhs.split_whitespace().next()?;
        Some(Combine {
            result: result.to_string(),
            op: op.to_string(),
            lhs: lhs.to_string(),
            rhs: rhs.to_string(),
            element: element.trim().to_string(),
        })
    }
}

/// The identity of the combining `op` on `element` values as an `arith.constant` literal
/// (`None` for an op that is not an associative, commutative reduction on that type).
fn identity(op: &str, element: &str) -> Option<String> {
    let literal = match (element, op) {
        ("f64" | "f32", "addf") => "-0.0".to_string(),
        ("f64" | "f32", "mulf") => "1.0".to_string(),
        ("f64", "maximumf" | "maxnumf") => "0xFFF0000000000000".to_string(),
        ("f64", "minimumf" | "minnumf") => "0x7FF0000000000000".to_string(),
        ("f32", "maximumf" | "maxnumf") => "0xFF800000".to_string(),
        ("f32", "minimumf" | "minnumf") => "0x7F800000".to_string(),
        _ => {
            let bits: u32 = element.strip_prefix('i')?.parse().ok()?;
            match op {
                "addi" | "ori" | "xori" | "maxui" => "0".to_string(),
                "muli" => "1".to_string(),
                "andi" | "minui" => "-1".to_string(),
                "maxsi" if (2..=64).contains(&bits) => format!("-{}", 1u128 << (bits - 1)),
                "minsi" if (2..=64).contains(&bits) => format!("{}", (1u128 << (bits - 1)) - 1),
                _ => return None,
            }
        }
    };
    Some(literal)
}

/// Bytes of one element of the MLIR scalar type `element` (`i1` takes a byte).
fn element_bytes(element: &str) -> usize {
    let bits: usize = element.trim_start_matches(['f', 'i']).parse().unwrap_or(64);
    bits.div_ceil(8)
}

/// `%v = memref.load %m[] : T` (a 0-d load): (`%v`, `%m`).
fn zero_d_load(line: &str) -> Option<(String, String)> {
    let (value, rest) = line.trim().split_once(" = memref.load ")?;
    let (memref, rest) = rest.split_once('[')?;
    rest.starts_with("] ")
        .then(|| (value.to_string(), memref.to_string()))
}

/// `memref.store %v, %m[] : T` (a 0-d store): (`%v`, `%m`).
fn zero_d_store(line: &str) -> Option<(String, String)> {
    let rest = line.trim().strip_prefix("memref.store ")?;
    let (value, rest) = rest.split_once(", ")?;
    let (memref, rest) = rest.split_once('[')?;
    rest.starts_with("] ")
        .then(|| (value.to_string(), memref.to_string()))
}

/// The type of the buffer a `%m = memref.alloc() ... : T` line allocates.
fn alloc_type(line: &str) -> &str {
    line.rsplit_once(" : ").map_or("", |(_, t)| t.trim())
}

/// The leading spaces of `line`.
fn indent_of(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches(' ').len()]
}

/// The op name of a printed line (`""` for a closing brace or a blank line).
fn op_name(line: &str) -> &str {
    let body = line.trim();
    let body = match body.split_once(" = ") {
        Some((results, rest)) if results.starts_with('%') && !results.contains(' ') => rest,
        _ => body,
    };
    let name = body.split_once(' ').map_or(body, |(n, _)| n);
    if name.starts_with('}') {
        ""
    } else {
        name
    }
}

/// True when `line` mentions the SSA value `value` as a whole name (`%3` is not in `%30`).
fn mentions(line: &str, value: &str) -> bool {
    line.match_indices(value).any(|(k, _)| {
        !line[k + value.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// `line` with the SSA value `value` (a whole name) replaced by `with`.
fn replace_value(line: &str, value: &str, with: &str) -> String {
    let mut out = String::with_capacity(line.len() + with.len());
    let mut rest = line;
    while let Some(k) = rest.find(value) {
        let after = &rest[k + value.len()..];
        let whole = !after
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        out.push_str(&rest[..k]);
        out.push_str(if whole { with } else { value });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// [`region_end`] over owned lines.
fn region_end_owned(lines: &[String], open: usize) -> usize {
    let borrowed: Vec<&str> = lines.iter().map(String::as_str).collect();
    region_end(&borrowed, open)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "  func.func @kernel(%arg0: memref<?xf64, strided<[1], offset: ?>> {llvm.noalias}, %arg1: memref<f64, strided<[], offset: ?>> {llvm.noalias}, %arg2: f64) attributes {llvm.emit_c_interface} {";

    /// A module whose entry function has `body`.
    fn module(body: &str) -> String {
        format!("module {{\n{HEADER}\n{body}\n    return\n  }}\n}}\n")
    }

    /// A sum of `%arg0`'s elements times `%arg2` into `%acc`, with `extra` in the loop.
    fn sum_into(acc: &str, extra: &str, combine: &str) -> String {
        format!(
            "    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %dim = memref.dim %arg0, %c0 : memref<?xf64, strided<[1], offset: ?>>
    scf.for %arg3 = %c0 to %dim step %c1 {{
      %2 = memref.load %arg0[%arg3] : memref<?xf64, strided<[1], offset: ?>>
      %3 = memref.load {acc}[] : memref<f64, strided<[], offset: ?>>
      %4 = arith.mulf %2, %arg2 : f64{extra}
      %5 = {combine} : f64
      memref.store %5, {acc}[] : memref<f64, strided<[], offset: ?>>
    }}"
        )
    }

    #[test]
    fn a_sum_into_a_parameter_becomes_two_launches_and_a_workspace() {
        let (text, workspaces) =
            explicit_launches(&module(&sum_into("%arg1", "", "arith.addf %3, %4")));
        assert_eq!(workspaces, [BLOCKS * 8]);
        assert_eq!(text.matches("gpu.launch").count(), 2, "{text}");
        assert!(
            !text.contains("scf.for %arg3 = %c0 to %dim step %c1 {"),
            "{text}"
        );
        assert!(text.contains("%red0_workspace: memref<1024xf64> {llvm.noalias}) attributes"));
        // The loaded accumulator is replaced by the running value, the store by a yield.
        assert!(
            text.contains("%5 = arith.addf %red0_running, %4 : f64"),
            "{text}"
        );
        assert!(text.contains("scf.yield %5 : f64"), "{text}");
        assert!(
            text.contains("%red0_identity = arith.constant -0.0 : f64"),
            "{text}"
        );
        // Thread 0 of the second launch folds the total into the parameter.
        assert!(text.contains("%red0_new = arith.addf %red0_old, %red0_sum : f64"));
        assert!(text.contains("memref.store %red0_new, %arg1[]"), "{text}");
        // Eight tree levels per launch, a barrier after each and after the store.
        assert_eq!(text.matches("gpu.barrier").count(), 18, "{text}");
    }

    #[test]
    fn a_buffer_copied_from_and_to_a_parameter_is_replaced_by_it() {
        let copies_in = "    %alloc = memref.alloc() {alignment = 64 : i64} : memref<f64>
    %0 = memref.load %arg1[] : memref<f64, strided<[], offset: ?>>
    memref.store %0, %alloc[] : memref<f64>\n";
        let copies_out = "\n    %1 = memref.load %alloc[] : memref<f64>
    memref.store %1, %arg1[] : memref<f64, strided<[], offset: ?>>
    memref.dealloc %alloc : memref<f64>";
        let body = format!(
            "{copies_in}{}{copies_out}",
            sum_into("%alloc", "", "arith.addf %4, %3")
        );
        let (text, workspaces) = explicit_launches(&module(&body));
        assert_eq!(workspaces.len(), 1, "{text}");
        assert!(!text.contains("%alloc"), "{text}");
        assert!(text.contains("memref.store %red0_new, %arg1[]"), "{text}");
    }

    #[test]
    fn loops_that_are_not_plain_reductions_stay() {
        let acc = "%arg1";
        let cases = [
            // Not associative.
            sum_into(acc, "", "arith.subf %3, %4"),
            // The running value used twice.
            sum_into(
                acc,
                "\n      %9 = arith.mulf %3, %3 : f64",
                "arith.addf %3, %4",
            ),
            // Another store.
            sum_into(
                acc,
                "\n      memref.store %4, %arg0[%arg3] : memref<?xf64, strided<[1], offset: ?>>",
                "arith.addf %3, %4",
            ),
        ];
        for body in cases {
            let text = module(&body);
            let (out, workspaces) = explicit_launches(&text);
            assert!(workspaces.is_empty(), "{out}");
            assert_eq!(out, text);
        }
    }

    #[test]
    fn a_body_without_loops_runs_in_one_thread() {
        let body = "    %cst = arith.constant 2.0 : f64
    %0 = memref.load %arg1[] : memref<f64, strided<[], offset: ?>>
    %1 = arith.mulf %0, %cst : f64
    memref.store %1, %arg1[] : memref<f64, strided<[], offset: ?>>";
        let (text, workspaces) = explicit_launches(&module(body));
        assert!(workspaces.is_empty());
        let launch = text.find("gpu.launch").expect("a launch");
        // Constants stay outside; the accesses move in.
        assert!(
            text.find("%cst = arith.constant").expect("kept") < launch,
            "{text}"
        );
        assert!(
            text.find("%1 = arith.mulf").expect("kept") > launch,
            "{text}"
        );
        assert!(text.contains("gpu.terminator"), "{text}");
    }

    #[test]
    fn identities_per_operation_and_type() {
        assert_eq!(identity("addf", "f64").as_deref(), Some("-0.0"));
        assert_eq!(identity("maximumf", "f32").as_deref(), Some("0xFF800000"));
        assert_eq!(identity("minsi", "i32").as_deref(), Some("2147483647"));
        assert_eq!(
            identity("maxsi", "i64").as_deref(),
            Some("-9223372036854775808")
        );
        assert_eq!(identity("andi", "i1").as_deref(), Some("-1"));
        assert_eq!(identity("subf", "f64"), None);
        assert_eq!(identity("addf", "i64"), None);
    }

    #[test]
    fn names_are_matched_whole() {
        assert!(mentions("%30 = arith.addf %3, %4", "%3"));
        assert!(!mentions("%30 = arith.addf %31, %4", "%3"));
        assert_eq!(
            replace_value("%30 = f %3, %3a", "%3", "%x"),
            "%30 = f %x, %3a"
        );
        assert_eq!(
            parameters(HEADER),
            [
                (
                    "%arg0".to_string(),
                    "memref<?xf64, strided<[1], offset: ?>>".to_string()
                ),
                (
                    "%arg1".to_string(),
                    "memref<f64, strided<[], offset: ?>>".to_string()
                ),
                ("%arg2".to_string(), "f64".to_string())
            ]
        );
    }
}
