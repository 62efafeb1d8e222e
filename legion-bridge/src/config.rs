//! Settings of the Legion backend and the Legion flags they become.

/// Settings of the Legion backend. Legion starts once per process: the first backend's
/// settings decide its flags.
#[derive(Clone, Debug)]
pub struct LegionConfig {
    /// CPU processors launches are split over, per node (`--procs`); `None` means one per
    /// available core. Realm runs at most one CPU processor per core (`-ll:cpu` defaults to
    /// the smaller of this and the cores): Legion's runtime threads wait for its locks by
    /// spinning, and more processor threads than cores left a lock holder descheduled while
    /// the others spun (16 on 2 cores: 65% of the run in `FastReservation::wrlock_slow`,
    /// iterations 10-20x slower than with 4). The points of the processors beyond the
    /// cores run on the Realm processors in turn (processor `i` on Realm processor `i`
    /// modulo their count). An explicit `-ll:cpu` sets both.
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
    /// Legion's automatic trace recognition (on in Legion 25.12 unless
    /// `-lg:no_auto_tracing`); off by default: it found no trace to replay in diffuse's
    /// launch streams and cost up to 1.7x on small solvers (cg at n = 64 on 2 processors:
    /// 1450 µs per iteration with it, 870 without, medians of 4 interleaved runs).
    pub auto_tracing: bool,
    /// Launches that repeat (the same task, domain, regions and partitions, as a memoized
    /// window's launches do each iteration) go into Legion traces of their own, so Legion
    /// replays their dependence analysis and mapping (see the `traces` module). On by
    /// default: measured on 2 cores, a 1024² stencil over 16 points 3.2 -> 1.7 ms per
    /// iteration, 4096² 29-31 -> 24-27 ms. Single-process runs only.
    pub traced_launches: bool,
    /// Most elements of the partials of a reduction over several points that diffuse folds
    /// itself (launch points times the store's elements; 0: none): each point writes its
    /// contribution to a row of its own, and a launch of one point folds the rows in point
    /// order, bitwise as the embedded backend, and both launches can be traced. Larger
    /// reductions go through Legion's reduction instances, which Legion folds in its own
    /// order, and which keep their launches, and the next launches touching the store,
    /// out of traces (see the `partials` module).
    pub folded_reduction_elements: usize,
    /// Nodes the run must have (`--nodes`), if the application asked for a number: Legion's
    /// nodes are the run's processes, so a count other than the processes is refused
    /// instead of silently ignored. `None`: whatever the run has.
    pub nodes: Option<usize>,
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
            auto_tracing: false,
            traced_launches: true,
            folded_reduction_elements: 1 << 16,
            nodes: None,
        }
    }
}

impl LegionConfig {
    /// The CPU processors per node launches are split over, given the CPU processors per
    /// node Realm runs (see [`LegionConfig::cpus`]).
    pub(crate) fn launch_cpus(&self, realm_cpus: usize) -> usize {
        match self.cpus {
            Some(cpus) if !self.flags.iter().any(|f| f == "-ll:cpu") => cpus.max(1),
            _ => realm_cpus,
        }
    }

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
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        default("-ll:cpu", self.cpus.unwrap_or(cores).min(cores).to_string());
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
        // Realm logs to stdout by default, buffered: a fatal error's message (Legion's
        // reason for aborting) was lost with the buffer, and log lines mixed with the
        // application's output (its JSON records). Standard error is unbuffered.
        default("-logfile", "stderr".into());
        // Several processes: program-order execution, each operation completing before the
        // next starts. Without it, the two-rank random-stream test hung in a fence now and
        // then (2 of 6 runs; Legion 26.1, UCX, one machine) after a launch that reduced into
        // a region both ranks had just written through inline mappings, both ranks having
        // issued the same operations (traced); with it, 16 of 16 runs passed.
        if distributed && !given("-lg:inorder") {
            out.push("-lg:inorder".into());
        }
        if !self.auto_tracing && !given("-lg:no_auto_tracing") {
            out.push("-lg:no_auto_tracing".into());
        }
        out.extend(self.flags.iter().cloned());
        out
    }
}

/// What bounds a Legion configuration on this machine and in this run, known before Legion
/// starts.
#[derive(Clone, Debug)]
pub(crate) struct Limits {
    /// Most local processors one Legion process supports (`LEGION_MAX_NUM_PROCS` of the
    /// build; utility processors count).
    pub(crate) max_procs: u64,
    /// The machine's physical memory in bytes, if known.
    pub(crate) memory_bytes: Option<u64>,
    /// Processes of the run, i.e. Legion nodes.
    pub(crate) ranks: usize,
    /// The GPUs this machine has (the CUDA driver's count; 0 without one).
    pub(crate) gpus: u64,
}

/// Why a Legion configuration cannot start, found before Legion is loaded: Legion and Realm
/// abort the whole process on most of these (or hang, for `-ll:bgwork 0`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ConfigError {
    /// A flag that takes a value came without one.
    #[error("the Legion flag {flag} needs a value ({expected})")]
    MissingValue {
        /// The flag.
        flag: String,
        /// What it takes.
        expected: &'static str,
    },
    /// A flag's value is not what the flag takes.
    #[error("the Legion flag {flag} {value:?} is malformed: expected {expected}")]
    BadValue {
        /// The flag.
        flag: String,
        /// The value given.
        value: String,
        /// What it takes.
        expected: &'static str,
    },
    /// A count below what the backend needs.
    #[error("the Legion flag {flag} {value} is too small: {reason}")]
    TooFew {
        /// The flag.
        flag: &'static str,
        /// The count given.
        value: u64,
        /// What needs more.
        reason: &'static str,
    },
    /// More local processors than one Legion process supports.
    #[error(
        "the processors asked of Legion ({listing}) come to {total} in one process; this \
         Legion supports at most {limit} (LEGION_MAX_NUM_PROCS, utility processors included): \
         ask for at most {spare} CPU processors"
    )]
    TooManyProcessors {
        /// The processor flags and their counts.
        listing: String,
        /// Their sum.
        total: u64,
        /// The build's limit.
        limit: u64,
        /// The most CPU processors the other flags leave room for.
        spare: u64,
    },
    /// A flag with which Legion aborts under diffuse.
    #[error("the Legion flag {flag} is not supported: {reason}")]
    Unsupported {
        /// The flag (and its value).
        flag: String,
        /// Why Legion would abort, and what to do instead.
        reason: &'static str,
    },
    /// More GPUs than the machine has (Realm would stop while starting).
    #[error(
        "-ll:gpu {asked} asks for more GPUs than this machine has ({present}, as the CUDA \
         driver counts them); ask for at most {present}, or leave -ll:gpu out (points placed \
         on GPUs then run on CPUs)"
    )]
    Gpus {
        /// GPUs asked for.
        asked: u64,
        /// GPUs present.
        present: u64,
    },
    /// More host memory than the machine has.
    #[error(
        "the host memory asked of Legion ({listing}) comes to {total} MiB; this machine has \
         {physical} MiB: ask for less"
    )]
    Memory {
        /// The memory flags and their sizes.
        listing: String,
        /// Their sum in MiB.
        total: u64,
        /// The machine's memory in MiB.
        physical: u64,
    },
    /// The processor count and `-ll:cpu` both given, and different.
    #[error(
        "the processor count {cpus} (--procs / DIFFUSE_PROCS) and the Legion flag -ll:cpu \
         {flag} disagree: give only one of them"
    )]
    CpuConflict {
        /// `LegionConfig::cpus`.
        cpus: usize,
        /// `-ll:cpu`'s value.
        flag: u64,
    },
    /// A node count other than the run's processes.
    #[error(
        "--nodes {nodes} with the Legion backend: Legion's nodes are the run's processes and \
         this run has {ranks}; start {nodes} processes (`diffuse launch -n {nodes} -- ...`) or \
         leave --nodes out"
    )]
    Nodes {
        /// The nodes asked for.
        nodes: usize,
        /// The run's processes.
        ranks: usize,
    },
}

/// Flags whose value is a count of processors (`true`) or of threads.
const COUNTS: &[(&str, bool)] = &[
    ("-ll:cpu", true),
    ("-ll:util", true),
    ("-ll:io", true),
    ("-ll:py", true),
    ("-ll:gpu", true),
    ("-ll:bgwork", false),
    ("-ll:ahandlers", false),
];

/// Flags whose value is a memory size (MiB, or with a `k`/`m`/`g`/`t` unit), and whether it
/// is host memory allocated whatever the machine (`-ll:zsize`, `-ll:ib_zsize` and `-ll:fsize`
/// only exist with GPUs, which the backend refuses).
const SIZES: &[(&str, bool)] = &[
    ("-ll:csize", true),
    ("-ll:rsize", true),
    ("-ll:ib_rsize", true),
    ("-ll:zsize", false),
    ("-ll:ib_zsize", false),
    ("-ll:fsize", false),
    ("-ll:stacksize", false),
];

const COUNT: &str = "a non-negative whole number";
const SIZE: &str = "a size in MiB, or with a unit: 512m, 4g";

impl LegionConfig {
    /// [`LegionConfig::flags`], checked against every limit Legion has that is known before
    /// it starts (see [`ConfigError`]): Legion reports most of them by aborting the process.
    pub(crate) fn checked_flags(&self, limits: &Limits) -> Result<Vec<String>, ConfigError> {
        if let Some(nodes) = self.nodes {
            if nodes != limits.ranks {
                return Err(ConfigError::Nodes {
                    nodes,
                    ranks: limits.ranks,
                });
            }
        }
        let flags = self.flags();
        let given = last_values(&flags)?;
        let count = |name: &str| -> Result<Option<u64>, ConfigError> {
            given.get(name).map_or(Ok(None), |v| {
                parse_count(v).map(Some).ok_or_else(|| bad(name, v, COUNT))
            })
        };
        let mut counts = Vec::new();
        for &(name, _) in COUNTS {
            counts.push((name, count(name)?));
        }
        let mut sizes = Vec::new();
        for &(name, host) in SIZES {
            if let Some(v) = given.get(name) {
                let mib = parse_mib(v).ok_or_else(|| bad(name, v, SIZE))?;
                sizes.push((name, host, v.clone(), mib));
            }
        }
        let get = |name: &str| {
            counts
                .iter()
                .find(|(n, _)| *n == name)
                .and_then(|(_, c)| *c)
        };
        let cpus = get("-ll:cpu").unwrap_or(1);
        if let (Some(asked), true) = (self.cpus, self.flags.iter().any(|f| f == "-ll:cpu")) {
            if asked as u64 != cpus {
                return Err(ConfigError::CpuConflict {
                    cpus: asked,
                    flag: cpus,
                });
            }
        }
        if cpus == 0 {
            return Err(ConfigError::TooFew {
                flag: "-ll:cpu",
                value: 0,
                reason: "diffuse's point tasks run on CPU processors, so Legion needs at least \
                         one (--procs / DIFFUSE_PROCS / -ll:cpu)",
            });
        }
        if get("-ll:bgwork") == Some(0) {
            return Err(ConfigError::TooFew {
                flag: "-ll:bgwork",
                value: 0,
                reason: "Realm needs at least one background worker thread (with none it \
                         never finishes starting)",
            });
        }
        if let Some(gpus) = get("-ll:gpu").filter(|&g| g > limits.gpus) {
            return Err(ConfigError::Gpus {
                asked: gpus,
                present: limits.gpus,
            });
        }
        if self.flags.iter().any(|f| f == "-lg:warn") {
            return Err(ConfigError::Unsupported {
                flag: "-lg:warn".into(),
                reason: "with it Legion 25.12 aborts when diffuse's implicit top-level task \
                         ends (\"Unable to find variant 0 of task diffuse\"), after the \
                         program ran; leave it out",
            });
        }
        let processors: Vec<(&str, u64)> = COUNTS
            .iter()
            .filter(|(_, processor)| *processor)
            .map(|&(name, _)| (name, get(name).unwrap_or(0)))
            .filter(|&(_, c)| c > 0)
            .collect();
        check_processors(&processors, limits.max_procs)?;
        if let Some(physical) = limits.memory_bytes {
            let threads = processors
                .iter()
                .fold(0u64, |t, &(_, c)| t.saturating_add(c));
            check_host_memory(&sizes, threads, physical >> 20)?;
        }
        Ok(flags)
    }
}

/// The local processors (flag, count) within Legion's `limit` per process.
fn check_processors(processors: &[(&str, u64)], limit: u64) -> Result<(), ConfigError> {
    let sum = |cpus: bool| {
        processors
            .iter()
            .filter(|&&(name, _)| (name == "-ll:cpu") == cpus)
            .fold(0u64, |t, &(_, c)| t.saturating_add(c))
    };
    let (cpus, others) = (sum(true), sum(false));
    let total = cpus.saturating_add(others);
    if total <= limit {
        return Ok(());
    }
    Err(ConfigError::TooManyProcessors {
        listing: listing(processors.iter().map(|&(n, c)| (n, c.to_string()))),
        total,
        limit,
        spare: limit.saturating_sub(others),
    })
}

/// The host memory of the size flags (flag, host memory?, value, MiB) within the machine's
/// `physical` MiB; every one of `threads` processors has a stack of `-ll:stacksize`.
fn check_host_memory(
    sizes: &[(&str, bool, String, u64)],
    threads: u64,
    physical: u64,
) -> Result<(), ConfigError> {
    let host: Vec<(&str, String, u64)> = sizes
        .iter()
        .filter_map(|(name, host, value, mib)| match (*name, host) {
            ("-ll:stacksize", _) => Some((
                *name,
                format!("{value} x {threads} processors"),
                mib.saturating_mul(threads),
            )),
            (_, true) => Some((*name, value.clone(), *mib)),
            _ => None,
        })
        .collect();
    let total = host.iter().fold(0u64, |t, (_, _, m)| t.saturating_add(*m));
    if total <= physical {
        return Ok(());
    }
    Err(ConfigError::Memory {
        listing: listing(host.iter().map(|(n, v, _)| (*n, v.clone()))),
        total,
        physical,
    })
}

/// "-ll:cpu 64 and -ll:util 1" from (flag, value) pairs.
fn listing<'a>(pairs: impl Iterator<Item = (&'a str, String)>) -> String {
    let parts: Vec<String> = pairs.map(|(n, v)| format!("{n} {v}")).collect();
    match parts.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

fn bad(flag: &str, value: &str, expected: &'static str) -> ConfigError {
    ConfigError::BadValue {
        flag: flag.to_string(),
        value: value.to_string(),
        expected,
    }
}

/// The value each counted or sized flag has in `flags` (the last one given wins, as in
/// Realm), and an error for one of them without a value.
fn last_values(flags: &[String]) -> Result<std::collections::HashMap<&str, String>, ConfigError> {
    let mut values = std::collections::HashMap::new();
    let mut tokens = flags.iter().peekable();
    while let Some(flag) = tokens.next() {
        let expected = if COUNTS.iter().any(|(n, _)| n == flag) {
            COUNT
        } else if SIZES.iter().any(|(n, _)| n == flag) {
            SIZE
        } else {
            continue;
        };
        match tokens.next_if(|v| !v.starts_with('-')) {
            Some(value) => values.insert(flag.as_str(), value.clone()),
            None => {
                return Err(ConfigError::MissingValue {
                    flag: flag.clone(),
                    expected,
                })
            }
        };
    }
    Ok(values)
}

/// A count as Realm reads it: decimal digits only.
fn parse_count(value: &str) -> Option<u64> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

/// A size in MiB as Realm reads it: a decimal number in MiB, or with a unit `k`, `m`, `g`
/// or `t` (either case, optionally followed by `b`), rounded up to whole MiB.
fn parse_mib(value: &str) -> Option<u64> {
    let lower = value.to_ascii_lowercase();
    let body = lower
        .strip_suffix('b')
        .filter(|b| b.ends_with(['k', 'm', 'g', 't']));
    let body = body.unwrap_or(&lower);
    let (number, unit_kib) = match body.as_bytes().last()? {
        b'k' => (&body[..body.len() - 1], 1.0),
        b'm' => (&body[..body.len() - 1], 1024.0),
        b'g' => (&body[..body.len() - 1], 1024.0 * 1024.0),
        b't' => (&body[..body.len() - 1], 1024.0 * 1024.0 * 1024.0),
        _ => (body, 1024.0),
    };
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let kib = number.parse::<f64>().ok()? * unit_kib;
    kib.is_finite().then(|| (kib / 1024.0).ceil() as u64)
}

/// 60% of the machine's physical memory in MiB (1 GiB if it cannot be read).
fn default_sysmem_mib() -> usize {
    diffuse_backend::memory::physical_memory().map_or(1 << 30, |bytes| bytes) / (1 << 20) * 6 / 10
}

/// The system memory Legion is given by `flags` (the last `-ll:csize`, in MiB), in bytes.
pub(crate) fn sysmem_bytes(flags: &[String]) -> Option<u64> {
    let at = flags.iter().rposition(|f| f == "-ll:csize")?;
    parse_mib(flags.get(at + 1)?)?.checked_mul(1 << 20)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A machine of 64 processors per process and 16 GiB, in a run of one process.
    const LIMITS: Limits = Limits {
        max_procs: 64,
        memory_bytes: Some(16 << 30),
        ranks: 1,
        gpus: 0,
    };

    fn config(cpus: Option<usize>, flags: &[&str]) -> LegionConfig {
        LegionConfig {
            cpus,
            sysmem_mib: Some(1024),
            flags: flags.iter().map(|f| f.to_string()).collect(),
            ..Default::default()
        }
    }

    fn refused(cpus: Option<usize>, flags: &[&str]) -> String {
        match config(cpus, flags).checked_flags(&LIMITS) {
            Err(e) => e.to_string(),
            Ok(flags) => panic!("{flags:?} were accepted"),
        }
    }

    #[test]
    fn configurations_within_the_limits_start_with_the_flags_given() {
        let ok = config(
            Some(2),
            &["-ll:util", "2", "-ll:csize", "4g", "-lg:prof", "1"],
        );
        let flags = ok.checked_flags(&LIMITS).unwrap();
        assert_eq!(flags, ok.flags());
        // 63 CPU processors and the utility processor are Legion's 64.
        assert!(config(Some(63), &[]).checked_flags(&LIMITS).is_ok());
        // The same count twice is no conflict; the last of repeated flags counts, as in Realm.
        assert!(config(Some(2), &["-ll:cpu", "2"])
            .checked_flags(&LIMITS)
            .is_ok());
        assert!(config(None, &["-ll:cpu", "70", "-ll:cpu", "4"])
            .checked_flags(&LIMITS)
            .is_ok());
    }

    #[test]
    fn processors_past_legions_limit_are_refused_naming_the_counts() {
        let e = refused(None, &["-ll:cpu", "64"]);
        assert!(e.contains("-ll:cpu 64 and -ll:util 1"), "{e}");
        assert!(e.contains("come to 65") && e.contains("at most 64"), "{e}");
        assert!(e.contains("at most 63 CPU processors"), "{e}");
        let e = refused(None, &["-ll:cpu", "8", "-ll:util", "40", "-ll:io", "20"]);
        assert!(e.contains("-ll:io 20") && e.contains("come to 68"), "{e}");
        assert!(e.contains("at most 4 CPU processors"), "{e}");
        let e = refused(None, &["-ll:cpu", "18446744073709551615", "-ll:util", "1"]);
        assert!(e.contains("at most 63 CPU processors"), "{e}");
    }

    #[test]
    fn realm_runs_at_most_one_cpu_processor_per_core_and_launches_keep_the_count() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let realm_cpus = |c: &LegionConfig| {
            let flags = c.flags();
            let at = flags.iter().position(|f| f == "-ll:cpu").expect("-ll:cpu");
            flags[at + 1].parse::<usize>().expect("a count")
        };
        // Far more processors than any machine here has cores (and than Legion's limit).
        let many = config(Some(200), &[]);
        assert_eq!(realm_cpus(&many), cores.min(200));
        // Accepted wherever the cores are within Legion's limit.
        assert_eq!(many.checked_flags(&LIMITS).is_ok(), cores < 63);
        assert_eq!(many.launch_cpus(realm_cpus(&many)), 200);
        // Without a count, one per core; an explicit -ll:cpu sets both.
        let default = config(None, &[]);
        assert_eq!(realm_cpus(&default), cores);
        assert_eq!(default.launch_cpus(cores), cores);
        let explicit = config(None, &["-ll:cpu", "3"]);
        assert_eq!(explicit.launch_cpus(3), 3);
    }

    #[test]
    fn automatic_tracing_is_off_unless_asked_for() {
        let off = config(None, &[]).flags();
        assert_eq!(
            off.iter().filter(|f| *f == "-lg:no_auto_tracing").count(),
            1
        );
        let given = config(None, &["-lg:no_auto_tracing"]).flags();
        assert_eq!(
            given.iter().filter(|f| *f == "-lg:no_auto_tracing").count(),
            1
        );
        let on = LegionConfig {
            auto_tracing: true,
            ..config(None, &[])
        };
        assert!(!on.flags().iter().any(|f| f == "-lg:no_auto_tracing"));
    }

    #[test]
    fn counts_the_backend_cannot_run_with_are_refused() {
        for (cpus, flags, want) in [
            (Some(0), &[][..], "-ll:cpu 0 is too small"),
            (None, &["-ll:cpu", "0"][..], "-ll:cpu 0 is too small"),
            (None, &["-ll:bgwork", "0"][..], "-ll:bgwork 0 is too small"),
            (
                None,
                &["-ll:gpu", "1"][..],
                "-ll:gpu 1 asks for more GPUs than",
            ),
            (None, &["-lg:warn"][..], "-lg:warn is not supported"),
            (
                Some(4),
                &["-ll:cpu", "2"][..],
                "count 4 (--procs / DIFFUSE_PROCS)",
            ),
        ] {
            let e = refused(cpus, flags);
            assert!(e.contains(want), "{flags:?}: {e}");
        }
        // -ll:gpu 0 asks for nothing; a machine with GPUs runs up to as many.
        assert!(config(None, &["-ll:gpu", "0"])
            .checked_flags(&LIMITS)
            .is_ok());
        let two_gpus = Limits { gpus: 2, ..LIMITS };
        assert!(config(None, &["-ll:gpu", "2"])
            .checked_flags(&two_gpus)
            .is_ok());
        let e = config(None, &["-ll:gpu", "3"])
            .checked_flags(&two_gpus)
            .expect_err("three GPUs of two");
        assert!(e.to_string().contains("this machine has (2"), "{e}");
    }

    #[test]
    fn malformed_or_missing_values_are_named() {
        for (flags, want) in [
            (&["-ll:cpu", "abc"][..], r#"-ll:cpu "abc" is malformed"#),
            (&["-ll:util", "0x2"][..], r#"-ll:util "0x2" is malformed"#),
            (
                &["-ll:csize", "lots"][..],
                r#"-ll:csize "lots" is malformed"#,
            ),
            (
                &["-ll:csize", "1.2.3g"][..],
                r#"-ll:csize "1.2.3g" is malformed"#,
            ),
            (&["-ll:cpu"][..], "-ll:cpu needs a value"),
            (
                &["-ll:csize", "-ll:cpu", "2"][..],
                "-ll:csize needs a value",
            ),
        ] {
            let e = refused(None, flags);
            assert!(e.contains(want), "{flags:?}: {e}");
        }
    }

    #[test]
    fn host_memory_past_the_machine_is_refused_naming_each_flag() {
        let e = refused(None, &["-ll:csize", "1t"]);
        assert!(
            e.contains("(-ll:csize 1t)") && e.contains("1048576 MiB"),
            "{e}"
        );
        assert!(e.contains("this machine has 16384 MiB"), "{e}");
        let e = refused(Some(2), &["-ll:rsize", "15g", "-ll:stacksize", "1024"]);
        assert!(
            e.contains("-ll:csize 1024, -ll:rsize 15g and -ll:stacksize 1024 x 3 processors"),
            "{e}"
        );
        // Zero-copy and framebuffer memory exist only with GPUs.
        assert!(config(None, &["-ll:zsize", "100000"])
            .checked_flags(&LIMITS)
            .is_ok());
    }

    #[test]
    fn a_node_count_must_be_the_runs_processes() {
        let mut c = config(Some(2), &[]);
        c.nodes = Some(2);
        let e = c.checked_flags(&LIMITS).unwrap_err().to_string();
        assert!(
            e.contains("--nodes 2") && e.contains("this run has 1"),
            "{e}"
        );
        assert!(e.contains("diffuse launch -n 2"), "{e}");
        c.nodes = Some(1);
        assert!(c.checked_flags(&LIMITS).is_ok());
    }

    proptest::proptest! {
        /// Any mix of processor counts, sizes and other flags, well-formed or not: the checks
        /// never panic, and what they accept is within every limit they know.
        #[test]
        fn accepted_flags_are_within_every_limit(
            cpus in proptest::option::of(0usize..80),
            picks in proptest::collection::vec((0usize..12, 0usize..9), 0..8),
        ) {
            const NAMES: [&str; 12] = [
                "-ll:cpu", "-ll:util", "-ll:io", "-ll:gpu", "-ll:bgwork", "-ll:csize",
                "-ll:rsize", "-ll:stacksize", "-ll:zsize", "-lg:prof", "-lg:warn", "-level",
            ];
            const VALUES: [&str; 9] = ["0", "1", "2", "63", "64", "4g", "1t", "abc", "-ll:cpu"];
            let mut flags = Vec::new();
            for (name, value) in picks {
                flags.push(NAMES[name]);
                flags.push(VALUES[value]);
            }
            let config = config(cpus, &flags);
            let limits = Limits { gpus: 1, ..LIMITS };
            if let Ok(flags) = config.checked_flags(&limits) {
                let given = last_values(&flags).expect("accepted flags have their values");
                let count = |name: &str| given.get(name).and_then(|v| parse_count(v));
                let cpus = count("-ll:cpu").unwrap_or(0);
                proptest::prop_assert!(cpus >= 1);
                proptest::prop_assert!(count("-ll:bgwork") != Some(0));
                proptest::prop_assert!(count("-ll:gpu").unwrap_or(0) <= limits.gpus);
                let processors = ["-ll:cpu", "-ll:util", "-ll:io"]
                    .iter()
                    .map(|n| count(n).unwrap_or(0))
                    .sum::<u64>();
                proptest::prop_assert!(processors <= LIMITS.max_procs);
                let host = ["-ll:csize", "-ll:rsize"]
                    .iter()
                    .filter_map(|n| given.get(n).and_then(|v| parse_mib(v)))
                    .sum::<u64>();
                proptest::prop_assert!(host <= 16 << 10);
                proptest::prop_assert!(!flags.iter().any(|f| f == "-lg:warn"));
            }
        }
    }

    #[test]
    fn sizes_read_as_realm_reads_them() {
        for (value, mib) in [
            ("4096", 4096),
            ("1g", 1024),
            ("1G", 1024),
            ("1gb", 1024),
            ("1.5g", 1536),
            ("1048576k", 1024),
            ("1t", 1 << 20),
            ("512m", 512),
        ] {
            assert_eq!(parse_mib(value), Some(mib), "{value}");
        }
        for value in ["", "g", "b", "-1", "1x", "1.2.3", "inf"] {
            assert_eq!(parse_mib(value), None, "{value}");
        }
        let flags: Vec<String> = ["-ll:csize", "2g"].iter().map(|s| s.to_string()).collect();
        assert_eq!(sysmem_bytes(&flags), Some(2 << 30));
    }
}
