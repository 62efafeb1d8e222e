//! The JSON records the figures are drawn from: the apps' `--json` output and the peer
//! programs' records (`benches/peers/`), one per line, and medians over repetitions.

use std::path::Path;

use anyhow::Context as _;
use serde::de::DeserializeOwned;
use serde::Deserialize;

/// The fields of a record the figures use. Apps' records carry all of them; the peers'
/// records only the timings, so everything else defaults to zero.
#[derive(Deserialize, Debug, Clone, Default)]
pub struct Record {
    /// The application.
    pub app: String,
    /// The system that ran it, as the peer harness names it (`numpy`, `jax`,
    /// `diffuse-fused`, ...); absent in the apps' own records.
    #[serde(default)]
    pub system: Option<String>,
    /// The peer program's module (`numpy`, `scipy`, ...): the system of a peer record.
    #[serde(default)]
    pub peer: Option<String>,
    /// diffuse's fusion setting (`on`/`off`); absent in peer records.
    #[serde(default)]
    pub fusion: Option<String>,
    /// diffuse's JIT setting (`off`, `on`, `sync`).
    #[serde(default)]
    pub jit: Option<String>,
    /// Problem size.
    pub n: usize,
    /// Legion nodes (processes) of the run.
    #[serde(default = "one")]
    pub nodes: usize,
    /// Mean seconds per timed iteration.
    pub seconds_per_iter: f64,
    /// Seconds of the warm-up iteration (JIT compiles included where the system compiles
    /// before first use).
    #[serde(default)]
    pub warmup_seconds: f64,
    /// Seconds spent after the warm-up waiting for background compiles.
    #[serde(default)]
    pub compile_wait_seconds: f64,
    /// Seconds of each timed iteration, in order.
    #[serde(default)]
    pub iteration_seconds: Vec<f64>,
    /// Index tasks issued per iteration.
    #[serde(default)]
    pub tasks_issued_per_iter: f64,
    /// Index tasks executed per iteration.
    #[serde(default)]
    pub tasks_executed_per_iter: f64,
    /// Peak bytes held by stores during the timed iterations.
    #[serde(default)]
    pub peak_store_bytes: f64,
    /// Bytes moved between nodes per iteration.
    #[serde(default)]
    pub bytes_moved_per_iter: f64,
    /// A peer's checksum of its result (the sum of its first output), to compare with
    /// NumPy's.
    #[serde(default)]
    pub checksum: Option<f64>,
}

fn one() -> usize {
    1
}

impl Record {
    /// The system that ran the record: the harness's name, else the peer's module, else
    /// diffuse's configuration (`diffuse-unfused`, `diffuse-native`, `diffuse-fused`).
    pub fn system(&self) -> String {
        if let Some(s) = self.system.as_ref().or(self.peer.as_ref()) {
            return s.clone();
        }
        match (self.fusion.as_deref(), self.jit.as_deref()) {
            (Some("off"), _) => "diffuse-unfused".into(),
            (_, Some("off")) => "diffuse-native".into(),
            _ => "diffuse-fused".into(),
        }
    }
}

/// Reads `path`, one JSON record per line (blank lines skipped): the apps' [`Record`]s or
/// the kernel suite's records; a line that is not such a record is an error naming
/// `path:line`.
pub fn read_records<T: DeserializeOwned>(path: &Path) -> anyhow::Result<Vec<T>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .with_context(|| format!("{}:{}: not a record", path.display(), i + 1))
        })
        .collect()
}

/// The median of `values` (0 when empty; the mean of the middle two for an even count).
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let m = values.len() / 2;
    if values.is_empty() {
        0.0
    } else if values.len() % 2 == 1 {
        values[m]
    } else {
        (values[m - 1] + values[m]) / 2.0
    }
}

/// The median of `field` over `records`.
pub fn median_of(records: &[&Record], field: impl Fn(&Record) -> f64) -> f64 {
    median(records.iter().map(|r| field(r)).collect())
}
