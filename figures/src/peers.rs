//! The peer report (`scripts/peers.sh`): diffuse next to NumPy, numexpr, JAX, Dask, SciPy and
//! cuPyNumeric on the same problems, as figures and one Markdown table:
//!
//! - `peers-time.svg`: time per iteration per case and system (log scale);
//! - `peers-speedup.svg`: diffuse fused over unfused and over each peer;
//! - `peers-tasks.svg`: index tasks issued and executed per iteration (the Diffuse paper's
//!   Figure 13);
//! - `peers-warmup.svg`: the warm-up iteration unfused, fused with native kernels, fused
//!   compiling before first use and compiling in the background, with the iterations until
//!   each fused run breaks even with the unfused one (the paper's Figure 15);
//! - `peers-memory.svg`: peak bytes held by stores, fused and unfused;
//! - `peers.md`: the tables, the cases where a peer is faster than diffuse, and peers whose
//!   results disagree with NumPy's.
//!
//! A case is an app at one size; every number is the median over the repetitions.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context as _;
use plotters::style::RGBColor;

use crate::bars::{self, Bar, Panel, Scale, Style};
use crate::records::{median, median_of, Record};

/// diffuse fused, its kernels compiled before first use: the configuration compared.
pub const FUSED: &str = "diffuse-fused";
/// diffuse fused with its native (per-operation) kernels.
pub const NATIVE: &str = "diffuse-native";
/// diffuse without fusion.
pub const UNFUSED: &str = "diffuse-unfused";
/// diffuse fused, compiling in the background while native kernels run.
pub const BACKGROUND: &str = "diffuse-background";

/// Systems in the order the figures list them; others follow alphabetically.
const ORDER: [&str; 14] = [
    FUSED,
    NATIVE,
    UNFUSED,
    BACKGROUND,
    "diffuse-python",
    "diffuse-python-traced",
    "numpy",
    "numexpr",
    "jax",
    "dask",
    "scipy",
    "cupynumeric",
    "petsc-1rank",
    "petsc-2ranks",
];

/// The colour of `system` in every figure.
fn color_of(system: &str) -> RGBColor {
    match system {
        FUSED => RGBColor(31, 90, 200),
        NATIVE => RGBColor(110, 160, 230),
        UNFUSED => RGBColor(200, 50, 50),
        BACKGROUND => RGBColor(60, 140, 210),
        "diffuse-python" => RGBColor(20, 50, 120),
        "diffuse-python-traced" => RGBColor(70, 100, 170),
        "numpy" => RGBColor(240, 150, 40),
        "numexpr" => RGBColor(60, 160, 60),
        "jax" => RGBColor(140, 80, 170),
        "dask" => RGBColor(150, 100, 60),
        "scipy" => RGBColor(120, 120, 120),
        "cupynumeric" => RGBColor(30, 160, 160),
        // PETSc (MPI), the solvers' baseline: one colour, darker for more ranks.
        "petsc-1rank" => RGBColor(230, 110, 170),
        "petsc-2ranks" => RGBColor(170, 40, 110),
        _ => RGBColor(80, 80, 80),
    }
}

fn rank_of(system: &str) -> (usize, String) {
    let rank = ORDER
        .iter()
        .position(|s| *s == system)
        .unwrap_or(ORDER.len());
    (rank, system.to_string())
}

/// An app at one size.
pub type Case = (String, usize);

/// The medians of one system's repetitions of one case.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Seconds per timed iteration.
    pub seconds: f64,
    /// Seconds of the warm-up iteration.
    pub warmup: f64,
    /// Seconds waited for background compiles after the warm-up.
    pub compile_wait: f64,
    /// Seconds of each timed iteration (per-position medians).
    pub iterations: Vec<f64>,
    /// Index tasks issued per iteration.
    pub issued: f64,
    /// Index tasks executed per iteration.
    pub executed: f64,
    /// Peak bytes held by stores.
    pub peak_bytes: f64,
    /// The peer's result checksum, if it reported one.
    pub checksum: Option<f64>,
    /// Repetitions summarized.
    pub runs: usize,
}

/// Every case's summaries, by system in figure order.
pub type Table = BTreeMap<Case, Vec<(String, Summary)>>;

fn summarize(records: &[&Record]) -> Summary {
    let longest = records
        .iter()
        .map(|r| r.iteration_seconds.len())
        .min()
        .unwrap_or(0);
    let checksums: Vec<f64> = records.iter().filter_map(|r| r.checksum).collect();
    Summary {
        seconds: median_of(records, |r| r.seconds_per_iter),
        warmup: median_of(records, |r| r.warmup_seconds),
        compile_wait: median_of(records, |r| r.compile_wait_seconds),
        iterations: (0..longest)
            .map(|i| median_of(records, |r| r.iteration_seconds[i]))
            .collect(),
        issued: median_of(records, |r| r.tasks_issued_per_iter),
        executed: median_of(records, |r| r.tasks_executed_per_iter),
        peak_bytes: median_of(records, |r| r.peak_store_bytes),
        checksum: (!checksums.is_empty()).then(|| median(checksums)),
        runs: records.len(),
    }
}

/// Groups `records` by case and system and takes the medians. Records without timed
/// iterations (`seconds_per_iter` 0: the warm-up took every iteration) are left out, with a
/// warning naming them.
pub fn table(records: &[Record]) -> Table {
    let mut groups: BTreeMap<Case, BTreeMap<(usize, String), Vec<&Record>>> = BTreeMap::new();
    for r in records {
        if r.seconds_per_iter <= 0.0 {
            eprintln!(
                "warning: {} on {} (n = {}) timed no iteration (raise its iterations); left out",
                r.app,
                r.system(),
                r.n
            );
            continue;
        }
        groups
            .entry((r.app.clone(), r.n))
            .or_default()
            .entry(rank_of(&r.system()))
            .or_default()
            .push(r);
    }
    groups
        .into_iter()
        .map(|(case, systems)| {
            let summaries = systems
                .into_iter()
                .map(|((_, system), rs)| (system, summarize(&rs)))
                .collect();
            (case, summaries)
        })
        .collect()
}

fn find<'a>(systems: &'a [(String, Summary)], name: &str) -> Option<&'a Summary> {
    systems.iter().find(|(s, _)| s == name).map(|(_, m)| m)
}

fn is_diffuse(system: &str) -> bool {
    system.starts_with("diffuse")
}

fn title((app, n): &Case) -> String {
    format!("{app}, n = {n}")
}

/// Seconds of `s`'s run from its start to the end of its first `k` timed iterations;
/// iterations past the measured ones take the median of the last half.
fn elapsed(s: &Summary, k: usize) -> f64 {
    let measured = s.iterations.len().min(k);
    let steady = steady(s);
    s.warmup
        + s.compile_wait
        + s.iterations[..measured].iter().sum::<f64>()
        + (k - measured) as f64 * steady
}

/// Seconds per iteration once warm: the median of the last half of the timed iterations.
fn steady(s: &Summary) -> f64 {
    let half = s.iterations.len() / 2;
    if s.iterations.is_empty() {
        s.seconds
    } else {
        median(s.iterations[half..].to_vec())
    }
}

/// The fewest timed iterations after which `fused`'s run has cost no more than
/// `unfused`'s (0: the warm-up already did), or None when it never does.
pub fn breakeven(fused: &Summary, unfused: &Summary) -> Option<usize> {
    let measured = fused.iterations.len().max(unfused.iterations.len());
    if let Some(k) = (0..=measured).find(|&k| elapsed(fused, k) <= elapsed(unfused, k)) {
        return Some(k);
    }
    let gain = steady(unfused) - steady(fused);
    if gain <= 0.0 {
        return None;
    }
    let deficit = elapsed(fused, measured) - elapsed(unfused, measured);
    Some(measured + (deficit / gain).ceil() as usize)
}

fn breakeven_text(b: Option<usize>) -> String {
    b.map_or("never".into(), |k| k.to_string())
}

/// Peers faster than diffuse fused: (case, peer, peer seconds, fused seconds).
pub fn trailing(table: &Table) -> Vec<(Case, String, f64, f64)> {
    let mut out = Vec::new();
    for (case, systems) in table {
        let Some(fused) = find(systems, FUSED) else {
            continue;
        };
        for (system, s) in systems {
            if !is_diffuse(system) && s.seconds < fused.seconds {
                out.push((case.clone(), system.clone(), s.seconds, fused.seconds));
            }
        }
    }
    out
}

/// Peers whose checksum differs from NumPy's by more than `1e-6` relative: (case, peer,
/// its checksum, NumPy's).
pub fn disagreements(table: &Table) -> Vec<(Case, String, f64, f64)> {
    let mut out = Vec::new();
    for (case, systems) in table {
        let Some(want) = find(systems, "numpy").and_then(|s| s.checksum) else {
            continue;
        };
        for (system, s) in systems {
            if let Some(got) = s.checksum {
                if (got - want).abs() > 1e-6 * want.abs().max(1.0) {
                    out.push((case.clone(), system.clone(), got, want));
                }
            }
        }
    }
    out
}

fn bar(label: &str, value: f64, color: RGBColor) -> Bar {
    Bar {
        label: label.into(),
        value,
        color,
    }
}

/// One panel per case of `table`, titled by the case, with the bars `bars` makes of its
/// systems' summaries; a case for which `bars` gives `None` (a system it needs is missing)
/// has no panel.
fn panels(table: &Table, bars: impl Fn(&[(String, Summary)]) -> Option<Vec<Bar>>) -> Vec<Panel> {
    table
        .iter()
        .filter_map(|(case, systems)| {
            Some(Panel {
                title: title(case),
                bars: bars(systems)?,
            })
        })
        .collect()
}

fn time_panels(table: &Table) -> Vec<Panel> {
    panels(table, |systems| {
        let shown = systems.iter().filter(|(s, _)| s != BACKGROUND);
        Some(
            shown
                .map(|(s, m)| bar(s, m.seconds * 1e3, color_of(s)))
                .collect(),
        )
    })
}

fn speedup_panels(table: &Table) -> Vec<Panel> {
    panels(table, |systems| {
        let fused = find(systems, FUSED)?;
        let others = systems
            .iter()
            .filter(|(s, _)| s != FUSED && s != BACKGROUND && s != NATIVE);
        let speedup = |(s, m): &(String, Summary)| {
            bar(&format!("over {s}"), m.seconds / fused.seconds, color_of(s))
        };
        Some(others.map(speedup).collect())
    })
}

fn task_panels(table: &Table) -> Vec<Panel> {
    panels(table, |systems| {
        let fused = find(systems, FUSED).or_else(|| find(systems, NATIVE))?;
        Some(vec![
            bar("issued", fused.issued, color_of(UNFUSED)),
            bar("executed, fused", fused.executed, color_of(FUSED)),
        ])
    })
}

/// The fused configurations of the warm-up figure, with their labels.
const WARMUP: [(&str, &str); 3] = [
    (NATIVE, "fused, native"),
    (FUSED, "fused, JIT first"),
    (BACKGROUND, "fused, JIT background"),
];

fn warmup_panels(table: &Table) -> Vec<Panel> {
    table
        .iter()
        .filter_map(|(case, systems)| {
            let unfused = find(systems, UNFUSED)?;
            let mut bars = vec![bar("unfused", unfused.warmup * 1e3, color_of(UNFUSED))];
            let mut evens = Vec::new();
            for (system, label) in WARMUP {
                if let Some(s) = find(systems, system) {
                    bars.push(bar(
                        label,
                        (s.warmup + s.compile_wait) * 1e3,
                        color_of(system),
                    ));
                    evens.push(breakeven_text(breakeven(s, unfused)));
                }
            }
            Some(Panel {
                title: format!("{}: even after {}", title(case), evens.join(" / ")),
                bars,
            })
        })
        .collect()
}

fn memory_panels(table: &Table) -> Vec<Panel> {
    panels(table, |systems| {
        let fused = find(systems, FUSED)?;
        let unfused = find(systems, UNFUSED)?;
        let mib = |s: &Summary| s.peak_bytes / (1 << 20) as f64;
        Some(vec![
            bar("unfused", mib(unfused), color_of(UNFUSED)),
            bar("fused", mib(fused), color_of(FUSED)),
        ])
    })
}

/// The Markdown report.
pub fn markdown(table: &Table) -> String {
    let mut systems: Vec<(usize, String)> = table
        .values()
        .flatten()
        .map(|(s, _)| rank_of(s))
        .filter(|(_, s)| s != BACKGROUND)
        .collect();
    systems.sort();
    systems.dedup();
    let runs = table
        .values()
        .flatten()
        .map(|(_, s)| s.runs)
        .min()
        .unwrap_or(0);
    let mut out =
        format!("### Time per iteration (ms, medians of at least {runs} runs)\n\n| app | n |");
    for (_, s) in &systems {
        let _ = write!(out, " {s} |");
    }
    out.push_str(" fused / unfused | fastest peer | fused vs fastest peer |\n|---|---|");
    out.push_str(&"---|".repeat(systems.len() + 3));
    out.push('\n');
    for (case, row) in table {
        let _ = write!(out, "| {} | {} |", case.0, case.1);
        for (_, s) in &systems {
            let cell = find(row, s).map_or("–".into(), |m| format!("{:.3}", m.seconds * 1e3));
            let _ = write!(out, " {cell} |");
        }
        let fused = find(row, FUSED);
        let ratio = match (fused, find(row, UNFUSED)) {
            (Some(f), Some(u)) => format!("{:.2}x", u.seconds / f.seconds),
            _ => "–".into(),
        };
        let fastest = row
            .iter()
            .filter(|(s, _)| !is_diffuse(s))
            .min_by(|a, b| a.1.seconds.total_cmp(&b.1.seconds));
        let (peer, versus) = match (fastest, fused) {
            (Some((p, m)), Some(f)) => (p.clone(), format!("{:.2}x", m.seconds / f.seconds)),
            (Some((p, _)), None) => (p.clone(), "–".into()),
            _ => ("–".into(), "–".into()),
        };
        let _ = writeln!(out, " {ratio} | {peer} | {versus} |");
    }
    out.push_str(
        "\n\"fused vs fastest peer\" is the peer's time over diffuse's: above 1, diffuse is \
         faster.\n\n### Where a peer is faster than diffuse (fused)\n\n",
    );
    let behind = trailing(table);
    if behind.is_empty() {
        out.push_str("Nowhere.\n");
    }
    for ((app, n), peer, theirs, ours) in behind {
        let _ = writeln!(
            out,
            "- {app}, n = {n}: {peer} {:.3} ms vs diffuse {:.3} ms ({:.2}x slower)",
            theirs * 1e3,
            ours * 1e3,
            ours / theirs
        );
    }
    out.push_str(
        "\n### Tasks per iteration, warm-up and break-even, memory (diffuse)\n\n\
         | app | n | tasks issued | executed fused | warm-up unfused ms | fused native ms | \
         fused JIT first ms | fused JIT background ms | break-even native / JIT first / \
         background (iterations) | peak MiB unfused | peak MiB fused |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (case, row) in table {
        let (Some(fused), Some(unfused)) = (find(row, FUSED), find(row, UNFUSED)) else {
            continue;
        };
        let mut warm = Vec::new();
        let mut evens = Vec::new();
        for (system, _) in WARMUP {
            let s = find(row, system);
            warm.push(s.map_or("–".into(), |s| {
                format!("{:.1}", (s.warmup + s.compile_wait) * 1e3)
            }));
            evens.push(s.map_or("–".into(), |s| breakeven_text(breakeven(s, unfused))));
        }
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} | {:.1} | {:.1} | {} | {} | {:.1} | {:.1} |",
            case.0,
            case.1,
            fused.issued,
            fused.executed,
            unfused.warmup * 1e3,
            warm.join(" | "),
            evens.join(" / "),
            unfused.peak_bytes / (1 << 20) as f64,
            fused.peak_bytes / (1 << 20) as f64,
        );
    }
    let wrong = disagreements(table);
    if !wrong.is_empty() {
        out.push_str("\n### Results that disagree with NumPy's\n\n");
        for ((app, n), peer, got, want) in wrong {
            let _ = writeln!(
                out,
                "- {app}, n = {n}: {peer} checksum {got:e}, NumPy {want:e}"
            );
        }
    }
    out
}

/// Writes the figures and `peers.md` into `dir`, and returns the Markdown.
pub fn report(records: &[Record], dir: &Path) -> anyhow::Result<String> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let table = table(records);
    let log = |axis| Style {
        axis,
        scale: Scale::Log,
        columns: 3,
        reference: None,
    };
    let linear = |axis| Style {
        axis,
        scale: Scale::Linear,
        columns: 4,
        reference: None,
    };
    let speedup = Style {
        reference: Some(1.0),
        ..log("speedup of diffuse fused (log; right of the line: diffuse faster)")
    };
    let warmup = Style {
        columns: 3,
        ..log("ms of the warm-up iteration (log)")
    };
    let figures = [
        (
            "peers-time.svg",
            log("ms per iteration (log)"),
            time_panels(&table),
        ),
        ("peers-speedup.svg", speedup, speedup_panels(&table)),
        (
            "peers-tasks.svg",
            linear("index tasks per iteration"),
            task_panels(&table),
        ),
        ("peers-warmup.svg", warmup, warmup_panels(&table)),
        (
            "peers-memory.svg",
            linear("peak MiB held by stores"),
            memory_panels(&table),
        ),
    ];
    for (file, style, panels) in figures {
        bars::draw(&dir.join(file), &style, &panels)?;
    }
    let md = markdown(&table);
    let path = dir.join("peers.md");
    std::fs::write(&path, &md).with_context(|| format!("writing {}", path.display()))?;
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(app: &str, system: &str, seconds: f64, iterations: Vec<f64>) -> Record {
        Record {
            app: app.into(),
            system: Some(system.into()),
            n: 100,
            seconds_per_iter: seconds,
            warmup_seconds: seconds * 10.0,
            iteration_seconds: iterations,
            tasks_issued_per_iter: 6.0,
            tasks_executed_per_iter: if system == UNFUSED { 6.0 } else { 2.0 },
            peak_store_bytes: if system == UNFUSED { 3.0 } else { 1.0 } * (1 << 20) as f64,
            ..Record::default()
        }
    }

    #[test]
    fn breakeven_counts_measured_then_extrapolated_iterations() {
        let s = |warmup: f64, its: Vec<f64>| Summary {
            warmup,
            iterations: its,
            ..Summary::default()
        };
        // Fused: 10 s warm-up, then 1 s; unfused: 2 s warm-up, then 3 s. After k timed
        // iterations: 10 + k vs 2 + 3k: even at k = 4.
        assert_eq!(
            breakeven(&s(10.0, vec![1.0; 8]), &s(2.0, vec![3.0; 8])),
            Some(4)
        );
        // Past the 2 measured: 10 + k vs 2 + 3k still gives 4.
        assert_eq!(
            breakeven(&s(10.0, vec![1.0; 2]), &s(2.0, vec![3.0; 2])),
            Some(4)
        );
        // A cheaper warm-up is even at once; a slower steady state never.
        assert_eq!(breakeven(&s(1.0, vec![1.0]), &s(2.0, vec![3.0])), Some(0));
        assert_eq!(breakeven(&s(10.0, vec![3.0]), &s(2.0, vec![1.0])), None);
    }

    #[test]
    fn petsc_follows_the_array_peers_in_colours_of_its_own() {
        assert!(rank_of("cupynumeric") < rank_of("petsc-1rank"));
        assert!(rank_of("petsc-1rank") < rank_of("petsc-2ranks"));
        assert!(rank_of("petsc-2ranks") < rank_of("another-peer"));
        let grey = color_of("another-peer");
        assert!(color_of("petsc-1rank") != grey && color_of("petsc-2ranks") != grey);
    }

    #[test]
    fn the_report_ranks_systems_finds_who_is_faster_and_draws_every_figure() {
        let mut records = Vec::new();
        for rep in 0..3 {
            let jitter = 1.0 + rep as f64 * 0.01;
            records.push(record("stencil", FUSED, 0.010 * jitter, vec![0.010; 4]));
            records.push(record("stencil", UNFUSED, 0.030 * jitter, vec![0.030; 4]));
            records.push(record("stencil", "numpy", 0.040 * jitter, vec![]));
            records.push(record("stencil", "jax", 0.005 * jitter, vec![]));
        }
        // Untimed (all warm-up): left out, not a zero time.
        records.push(record("stencil", "dask", 0.0, vec![]));
        records[2].checksum = Some(2.0);
        records[6].checksum = Some(2.0);
        records[10].checksum = Some(2.0);
        records[3].checksum = Some(2.5);
        let table = table(&records);
        let row = &table[&("stencil".to_string(), 100)];
        let order: Vec<&str> = row.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(order, [FUSED, UNFUSED, "numpy", "jax"]);
        assert_eq!(row[0].1.runs, 3);
        let behind = trailing(&table);
        assert_eq!(behind.len(), 1);
        assert_eq!(behind[0].1, "jax");
        assert_eq!(disagreements(&table).len(), 1);

        let dir = std::env::temp_dir().join(format!("peers-{}", std::process::id()));
        let md = report(&records, &dir).unwrap();
        assert!(
            md.contains(
                "| stencil | 100 | 10.100 | 30.300 | 40.400 | 5.050 | 3.00x | jax | 0.50x |"
            ),
            "{md}"
        );
        assert!(
            md.contains("- stencil, n = 100: jax 5.050 ms vs diffuse 10.100 ms (2.00x slower)"),
            "{md}"
        );
        assert!(md.contains("stencil, n = 100: jax checksum"), "{md}");
        for figure in ["time", "speedup", "tasks", "warmup", "memory"] {
            let svg = std::fs::read_to_string(dir.join(format!("peers-{figure}.svg"))).unwrap();
            assert!(svg.contains("stencil, n = 100"), "{figure}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
