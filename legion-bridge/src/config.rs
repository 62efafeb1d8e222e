//! Settings of the Legion backend and the Legion flags they become.

/// Settings of the Legion backend. Legion starts once per process: the first backend's
/// settings decide its flags.
#[derive(Clone, Debug)]
pub struct LegionConfig {
    /// CPU processors (`-ll:cpu`); `None` means one per available core.
    pub cpus: Option<usize>,
    /// System memory for instances in MiB (`-ll:csize`); `None` means 60% of physical
    /// memory.
    pub sysmem_mib: Option<usize>,
    /// Legion's and Realm's own flags, passed through as given (`-ll:*`, `-lg:*`, `-level`,
    /// `-hl:*`, ...); they win over the flags above.
    pub flags: Vec<String>,
    /// Most bytes of dead stores' regions kept for reuse by later stores of the same shape
    /// and dtype (process-wide: the first backend's setting holds).
    pub region_cache_bytes: u64,
    /// Most bytes of point-local temporaries kept for reuse.
    pub buffer_cache_bytes: usize,
    /// Working-set bytes of one strip when a fused element-wise point runs natively.
    pub strip_bytes: usize,
}

impl Default for LegionConfig {
    fn default() -> Self {
        LegionConfig {
            cpus: None,
            sysmem_mib: None,
            flags: Vec::new(),
            region_cache_bytes: 4 << 30,
            buffer_cache_bytes: 1 << 30,
            strip_bytes: 1 << 20,
        }
    }
}

impl LegionConfig {
    /// The command line Legion starts with: diffuse's defaults for every flag the user did
    /// not give, then the user's flags.
    pub fn flags(&self) -> Vec<String> {
        let given = |flag: &str| self.flags.iter().any(|f| f == flag);
        let mut out = Vec::new();
        let mut default = |flag: &str, value: String| {
            if !given(flag) {
                out.push(flag.to_string());
                out.push(value);
            }
        };
        let cpus = self
            .cpus
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        default("-ll:cpu", cpus.to_string());
        default("-ll:util", "1".into());
        default(
            "-ll:csize",
            self.sysmem_mib
                .unwrap_or_else(default_sysmem_mib)
                .to_string(),
        );
        // One process: no network (the wheel's Realm otherwise tries to bootstrap UCX);
        // several (see `Cluster`): Realm's UCX network, with one background worker, no
        // dedicated active-message handler threads and a pinned utility processor. Measured
        // with two processes on a two-core machine, Realm's default thread counts left every
        // cross-node message waiting for a scheduler tick: a 257^2 stencil iteration took
        // 300 ms instead of 5 ms.
        let distributed = crate::Cluster::from_env().is_ok_and(|c| c.is_distributed());
        if distributed {
            default("-ll:networks", "ucx".into());
            default("-ll:bgwork", "1".into());
            default("-ll:ahandlers", "0".into());
            default("-ll:pin_util", "1".into());
        } else {
            default("-ll:networks", "none".into());
        }
        // The stub libcuda of machines without a GPU makes Realm warn once per start.
        default("-level", "gpu=6,threads=5".into());
        out.extend(self.flags.iter().cloned());
        out
    }
}

/// 60% of the machine's physical memory in MiB (1 GiB if it cannot be read).
fn default_sysmem_mib() -> usize {
    diffuse_backend::memory::physical_memory().map_or(1 << 30, |bytes| bytes) / (1 << 20) * 6 / 10
}

/// The system memory Legion is given by `flags` (the last `-ll:csize`, in MiB), in bytes.
pub(crate) fn sysmem_bytes(flags: &[String]) -> Option<u64> {
    let at = flags.iter().rposition(|f| f == "-ll:csize")?;
    let mib: u64 = flags.get(at + 1)?.parse().ok()?;
    mib.checked_mul(1 << 20)
}

/// True for a command-line argument that belongs to Legion or Realm (`-ll:cpu`,
/// `-lg:prof`, `-level`, `-hl:*`, `-dm:*`, `-ucx:*`, `-logfile`), so applications can pass them
/// through.
pub fn is_legion_flag(arg: &str) -> bool {
    [
        "-ll:", "-lg:", "-hl:", "-dm:", "-cuda:", "-ucx:", "-level", "-logfile",
    ]
    .iter()
    .any(|p| arg.starts_with(p))
}
