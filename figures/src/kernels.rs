//! The kernel suite's report (`scripts/kernels.sh`; the records are
//! `benches/peers/kernels/run.py --json`'s): diffuse's speedup over NumPy per kernel and
//! size, as one figure and one Markdown table:
//!
//! - `kernels-speedup.svg`: one panel per size, one bar per kernel coloured by its class,
//!   NumPy's time over diffuse's on a log axis with a line at 1x;
//! - `kernels.md`: every kernel's speedup at every size, their geometric means per size,
//!   the kernels slower than NumPy by more than [`SLOWER`] at the smallest size, results
//!   that differ from NumPy's, fallbacks to NumPy, and the machine.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context as _;
use plotters::style::RGBColor;
use serde::Deserialize;

use crate::bars::{self, Bar, Panel, Scale, Style};

/// The suite's sizes in order; other sizes follow them alphabetically.
const SIZES: [&str; 3] = ["small", "medium", "large"];

/// Slower than NumPy by more than this factor counts as slower (issue 50's bound at the
/// smallest size).
pub const SLOWER: f64 = 1.25;

/// One kernel at one size: the fields of a `run.py` record the report uses.
#[derive(Deserialize, Debug, Clone, Default)]
pub struct KernelRecord {
    /// The kernel's name.
    pub kernel: String,
    /// Its class (`dense`, `stencil`, ...).
    pub class: String,
    /// The size (`small`, `medium`, `large`).
    pub size: String,
    /// NumPy's median seconds over diffuse's; null when not timed (`--validate-only`, or
    /// diffuse raised).
    #[serde(default)]
    pub speedup: Option<f64>,
    /// Timed runs per system whose medians were taken.
    #[serde(default)]
    pub repeats: usize,
    /// Whether diffuse's results matched NumPy's.
    pub valid: bool,
    /// Where and by how much they did not.
    #[serde(default)]
    pub difference: Option<String>,
    /// The exception diffuse raised, if it did.
    #[serde(default)]
    pub error: Option<String>,
    /// The fallback warnings ("... is not native to diffuse ...") the kernel raised.
    #[serde(default)]
    pub fallback_warnings: Vec<String>,
    /// What the run was measured on (`run.py`'s `machine_info`).
    #[serde(default)]
    pub machine: Option<serde_json::Value>,
}

/// One kernel's records, by size.
#[derive(Debug, Clone)]
pub struct Row {
    /// The kernel's name.
    pub kernel: String,
    /// Its class.
    pub class: String,
    /// Its record per size.
    pub cells: BTreeMap<String, KernelRecord>,
}

/// The report's data: the sizes present, in the suite's order, and the kernels in the
/// order the records first name them.
#[derive(Debug, Clone)]
pub struct Table {
    /// The sizes, smallest first.
    pub sizes: Vec<String>,
    /// One row per kernel.
    pub rows: Vec<Row>,
}

fn size_rank(size: &str) -> (usize, String) {
    let rank = SIZES.iter().position(|s| *s == size).unwrap_or(SIZES.len());
    (rank, size.to_string())
}

/// Groups `records` by kernel and size; of two records of one kernel at one size the later
/// one counts (a rerun replaces the earlier run).
pub fn table(records: &[KernelRecord]) -> Table {
    let mut rows: Vec<Row> = Vec::new();
    for r in records {
        let row = match rows.iter().position(|row| row.kernel == r.kernel) {
            Some(i) => &mut rows[i],
            None => {
                rows.push(Row {
                    kernel: r.kernel.clone(),
                    class: r.class.clone(),
                    cells: BTreeMap::new(),
                });
                rows.last_mut().expect("just pushed")
            }
        };
        row.cells.insert(r.size.clone(), r.clone());
    }
    let mut sizes: Vec<(usize, String)> = records.iter().map(|r| size_rank(&r.size)).collect();
    sizes.sort();
    sizes.dedup();
    Table {
        sizes: sizes.into_iter().map(|(_, s)| s).collect(),
        rows,
    }
}

/// The geometric mean of `values` (None when there are none).
pub fn geomean(values: &[f64]) -> Option<f64> {
    (!values.is_empty())
        .then(|| (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp())
}

impl Table {
    /// The timed speedups at `size`: (kernel, speedup) in row order.
    pub fn speedups(&self, size: &str) -> Vec<(&str, f64)> {
        self.rows
            .iter()
            .filter_map(|row| {
                let s = row.cells.get(size)?.speedup?;
                (s > 0.0).then_some((row.kernel.as_str(), s))
            })
            .collect()
    }

    /// The geometric mean of the speedups at `size`.
    pub fn geomean(&self, size: &str) -> Option<f64> {
        let values: Vec<f64> = self.speedups(size).into_iter().map(|(_, s)| s).collect();
        geomean(&values)
    }

    /// The kernels slower than NumPy by more than [`SLOWER`] at `size`, slowest first.
    pub fn slower(&self, size: &str) -> Vec<(&str, f64)> {
        let mut slow: Vec<(&str, f64)> = self
            .speedups(size)
            .into_iter()
            .filter(|(_, s)| *s * SLOWER < 1.0)
            .collect();
        slow.sort_by(|a, b| a.1.total_cmp(&b.1));
        slow
    }

    /// The smallest size with a timed record.
    pub fn smallest_timed(&self) -> Option<&str> {
        self.sizes
            .iter()
            .map(String::as_str)
            .find(|s| !self.speedups(s).is_empty())
    }

    /// Every record, row by row, sizes in order.
    fn records(&self) -> impl Iterator<Item = &KernelRecord> {
        self.rows
            .iter()
            .flat_map(|row| self.sizes.iter().filter_map(|s| row.cells.get(s)))
    }
}

/// A table cell: the speedup (or whether the untimed run was valid), marked when the result
/// was wrong or a routine fell back to NumPy; `error` when diffuse raised.
fn cell(r: Option<&KernelRecord>) -> String {
    let Some(r) = r else {
        return "–".into();
    };
    let mut text = match (r.speedup, r.valid) {
        _ if r.error.is_some() => "error".into(),
        (Some(s), true) => format!("{s:.2}x"),
        (Some(s), false) => format!("{s:.2}x WRONG"),
        (None, true) => "valid".into(),
        (None, false) => "WRONG".into(),
    };
    if !r.fallback_warnings.is_empty() {
        text.push_str(" (fallback)");
    }
    text
}

/// The machine of the first record that names one, as one line.
fn machine_line(table: &Table) -> Option<String> {
    let m = table.records().find_map(|r| r.machine.as_ref())?;
    let field = |k: &str| match m.get(k) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "?".into(),
    };
    Some(format!(
        "{} ({} cores), NumPy {} with {}, diffuse {} at {}, measured {}",
        field("cpu"),
        field("cores"),
        field("numpy"),
        field("blas"),
        field("diffuse"),
        field("commit"),
        field("date")
    ))
}

/// The Markdown report.
pub fn markdown(table: &Table) -> String {
    let runs = table
        .records()
        .filter(|r| r.speedup.is_some())
        .map(|r| r.repeats)
        .min()
        .unwrap_or(0);
    let mut out = format!(
        "### diffuse's speedup over NumPy (NumPy's time / diffuse's; medians of {runs} or more \
         interleaved runs)\n\n| kernel | class |"
    );
    for size in &table.sizes {
        let _ = write!(out, " {size} |");
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---|".repeat(table.sizes.len()));
    out.push('\n');
    for row in &table.rows {
        let _ = write!(out, "| {} | {} |", row.kernel, row.class);
        for size in &table.sizes {
            let _ = write!(out, " {} |", cell(row.cells.get(size)));
        }
        out.push('\n');
    }
    out.push_str("| **geo-mean** | |");
    for size in &table.sizes {
        let text = table
            .geomean(size)
            .map_or("–".into(), |g| format!("{g:.2}x"));
        let _ = write!(out, " **{text}** |");
    }
    out.push_str(
        "\n\nAbove 1x diffuse is faster. WRONG: diffuse's result differs from NumPy's; \
                  (fallback): a routine ran on NumPy.\n",
    );
    if let Some(size) = table.smallest_timed() {
        let slow = table.slower(size);
        let _ = write!(
            out,
            "\n### Slower than NumPy by more than {SLOWER}x at the smallest size ({size})\n\n\
             {} of {} kernels",
            slow.len(),
            table.speedups(size).len()
        );
        if slow.is_empty() {
            out.push_str(".\n");
        } else {
            out.push_str(":\n\n");
            for (kernel, s) in slow {
                let _ = writeln!(out, "- {kernel}: {:.2}x slower", 1.0 / s);
            }
        }
    }
    let wrong: Vec<&KernelRecord> = table.records().filter(|r| !r.valid).collect();
    if !wrong.is_empty() {
        out.push_str("\n### Results that differ from NumPy's\n\n");
        for r in wrong {
            let why = r
                .error
                .as_deref()
                .or(r.difference.as_deref())
                .unwrap_or("?");
            let _ = writeln!(out, "- {} ({}): {why}", r.kernel, r.size);
        }
    }
    let fallbacks: Vec<&KernelRecord> = table
        .records()
        .filter(|r| !r.fallback_warnings.is_empty())
        .collect();
    if !fallbacks.is_empty() {
        out.push_str("\n### Fallbacks to NumPy\n\n");
        for r in fallbacks {
            let _ = writeln!(
                out,
                "- {} ({}): {}",
                r.kernel,
                r.size,
                r.fallback_warnings.join("; ")
            );
        }
    }
    if let Some(machine) = machine_line(table) {
        let _ = write!(out, "\nMachine: {machine}.\n");
    }
    out
}

/// The colour of a kernel class in the figure.
fn color_of(class: &str) -> RGBColor {
    match class {
        "dense" => RGBColor(31, 90, 200),
        "triangular" => RGBColor(200, 50, 50),
        "recurrence" => RGBColor(240, 150, 40),
        "stencil" => RGBColor(60, 160, 60),
        "image" => RGBColor(140, 80, 170),
        "layer" => RGBColor(30, 160, 160),
        "statistics" => RGBColor(150, 100, 60),
        "physics" => RGBColor(230, 110, 170),
        _ => RGBColor(120, 120, 120),
    }
}

/// One panel per timed size: a bar per kernel, its speedup.
fn panels(table: &Table) -> Vec<Panel> {
    table
        .sizes
        .iter()
        .filter_map(|size| {
            let bars: Vec<Bar> = table
                .rows
                .iter()
                .filter_map(|row| {
                    Some(Bar {
                        label: row.kernel.clone(),
                        value: row.cells.get(size)?.speedup?,
                        color: color_of(&row.class),
                    })
                })
                .collect();
            let geo = table.geomean(size)?;
            Some(Panel {
                title: format!("{size}: geo-mean {geo:.2}x"),
                bars,
            })
        })
        .collect()
}

/// Writes `kernels-speedup.svg` and `kernels.md` into `dir`, and returns the Markdown.
pub fn report(records: &[KernelRecord], dir: &Path) -> anyhow::Result<String> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let table = table(records);
    let style = Style {
        axis: "speedup over NumPy (log; right of the line: diffuse faster)",
        scale: Scale::Log,
        columns: table.sizes.len(),
        reference: Some(1.0),
    };
    bars::draw(&dir.join("kernels-speedup.svg"), &style, &panels(&table))?;
    let md = markdown(&table);
    let path = dir.join("kernels.md");
    std::fs::write(&path, &md).with_context(|| format!("writing {}", path.display()))?;
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records as `run.py` writes them, one per line.
    const RECORDS: &str = r#"
{"kernel": "gemm", "class": "dense", "size": "small", "n": 150, "numpy_s": 0.002, "diffuse_s": 0.004, "speedup": 0.5, "repeats": 3, "valid": true, "difference": null, "error": null, "fallback_warnings": [], "machine": {"cpu": "AMD EPYC", "cores": 2, "numpy": "2.4.6", "blas": "openblas 0.3", "diffuse": "0.1.0", "commit": "abc123", "date": "2026-12-02"}}
{"kernel": "sobel", "class": "image", "size": "small", "speedup": 2.0, "repeats": 3, "valid": true, "fallback_warnings": []}
{"kernel": "gemm", "class": "dense", "size": "medium", "speedup": 8.0, "repeats": 1, "valid": true, "fallback_warnings": []}
{"kernel": "lu", "class": "triangular", "size": "small", "speedup": 0.1, "repeats": 3, "valid": false, "difference": "output 0: 3 of 9 elements differ", "fallback_warnings": ["diffuse.numpy: tril is not native to diffuse; it runs on NumPy"]}
{"kernel": "sobel", "class": "image", "size": "medium", "speedup": 2.0, "repeats": 3, "valid": true, "fallback_warnings": []}
{"kernel": "lu", "class": "triangular", "size": "large", "speedup": null, "valid": false, "error": "TypeError: bad", "fallback_warnings": []}
{"kernel": "sobel", "class": "image", "size": "small", "speedup": 4.0, "repeats": 3, "valid": true, "fallback_warnings": []}
"#;

    /// The records of `RECORDS`, read from a file of `test`'s own (tests run in parallel).
    fn records(test: &str) -> Vec<KernelRecord> {
        let name = format!("kernels-{test}-{}.jsonl", std::process::id());
        let path = std::env::temp_dir().join(name);
        std::fs::write(&path, RECORDS).unwrap();
        let records = crate::records::read_records(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        records
    }

    #[test]
    fn records_group_by_kernel_and_size_in_order_and_a_rerun_replaces() {
        let records = records("grouping");
        assert_eq!(records.len(), 7);
        assert_eq!(records[0].machine.as_ref().unwrap()["cores"], 2);
        let table = table(&records);
        assert_eq!(table.sizes, ["small", "medium", "large"]);
        let kernels: Vec<&str> = table.rows.iter().map(|r| r.kernel.as_str()).collect();
        assert_eq!(kernels, ["gemm", "sobel", "lu"]);
        // The second small sobel record replaced the first.
        assert_eq!(table.rows[1].cells["small"].speedup, Some(4.0));
        assert_eq!(table.speedups("large"), []);
        assert_eq!(table.smallest_timed(), Some("small"));
    }

    #[test]
    fn geomeans_and_the_slower_kernels_per_size() {
        let table = table(&records("geomeans"));
        // small: 0.5, 4.0, 0.1.
        let g = table.geomean("small").unwrap();
        assert!((g - 0.2f64.cbrt()).abs() < 1e-12, "{g}");
        assert_eq!(table.geomean("medium"), Some(4.0));
        assert_eq!(table.geomean("large"), None);
        assert_eq!(table.slower("small"), [("lu", 0.1), ("gemm", 0.5)]);
        assert_eq!(table.slower("medium"), []);
        // 0.8x is exactly 1.25x slower: not counted.
        assert!(geomean(&[]).is_none());
        let edge = KernelRecord {
            kernel: "k".into(),
            size: "small".into(),
            speedup: Some(0.8),
            valid: true,
            ..KernelRecord::default()
        };
        assert_eq!(super::table(&[edge]).slower("small"), []);
    }

    #[test]
    fn the_markdown_has_every_cell_the_geomeans_and_what_went_wrong() {
        let md = markdown(&table(&records("markdown")));
        for want in [
            "| kernel | class | small | medium | large |",
            "| gemm | dense | 0.50x | 8.00x | – |",
            "| sobel | image | 4.00x | 2.00x | – |",
            "| lu | triangular | 0.10x WRONG (fallback) | – | error |",
            "| **geo-mean** | | **0.58x** | **4.00x** | **–** |",
            "medians of 1 or more",
            "at the smallest size (small)\n\n2 of 3 kernels:\n\n- lu: 10.00x slower\n\
             - gemm: 2.00x slower\n",
            "- lu (small): output 0: 3 of 9 elements differ",
            "- lu (large): TypeError: bad",
            "- lu (small): diffuse.numpy: tril is not native",
            "Machine: AMD EPYC (2 cores), NumPy 2.4.6 with openblas 0.3, diffuse 0.1.0 at \
             abc123, measured 2026-12-02.",
        ] {
            assert!(md.contains(want), "missing {want:?} in\n{md}");
        }
    }

    #[test]
    fn validation_only_records_say_valid_and_draw_no_panel() {
        let r = KernelRecord {
            kernel: "gemm".into(),
            class: "dense".into(),
            size: "small".into(),
            valid: true,
            ..KernelRecord::default()
        };
        let table = table(&[r]);
        assert!(markdown(&table).contains("| gemm | dense | valid |"));
        assert!(table.smallest_timed().is_none());
        assert!(panels(&table).is_empty());
    }

    #[test]
    fn the_report_writes_the_figure_and_the_table() {
        let dir = std::env::temp_dir().join(format!("kernels-report-{}", std::process::id()));
        let md = report(&records("report"), &dir).unwrap();
        let svg = std::fs::read_to_string(dir.join("kernels-speedup.svg")).unwrap();
        let written = std::fs::read_to_string(dir.join("kernels.md")).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(md, written);
        for want in [
            "small: geo-mean 0.58x",
            "medium: geo-mean 4.00x",
            "sobel",
            "8.00",
        ] {
            assert!(svg.contains(want), "{want} missing from the figure");
        }
        // No timed large record: no panel for it.
        assert!(!svg.contains("large: geo-mean"));
    }
}
