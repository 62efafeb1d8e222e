//! The one Legion runtime of this process: starting Realm and Legion (once
//! [`crate::library`] loaded them), the driver thread that owns Legion's top-level context,
//! and shutting Legion down at exit.
//!
//! Legion starts once per process and cannot restart, so every [`crate::LegionBackend`] of a
//! process shares it. Every call that needs the top-level context runs on the driver thread
//! (an implicit top-level task, so no Legion processor waits for the application); backends
//! send it [`Command`]s. At process exit the driver drains its work, ends the top-level task
//! and waits for Legion to shut down (bounded, so exit never hangs).

use std::ffi::{c_char, c_int, CString};
use std::path::Path;
use std::sync::mpsc::{
    channel, sync_channel, Receiver, RecvError, RecvTimeoutError, Sender, TryRecvError,
};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use diffuse_backend::MachineShape;

use crate::cluster::Cluster;
use crate::config::Limits;
use crate::driver::{Command, Driver, DriverLimits, DriverThread};
use crate::ffi;
use crate::library::Installation;
use crate::machine;
use crate::mapper;
use crate::point_task;
use crate::LegionConfig;

/// Legion's task id of the implicit top-level task (the driver thread).
const TOP_TASK_ID: ffi::legion_task_id_t = 7_311;

/// Most distinct launches a process issues in Legion traces (each trace Legion recorded
/// stays for the life of the context): a solver or stencil repeats a few dozen.
const MAX_TRACES: usize = 4096;

/// The started runtime, or why it could not start.
static PROCESS: OnceLock<Result<LegionProcess, String>> = OnceLock::new();

/// The process's Legion runtime as backends see it.
pub(crate) struct LegionProcess {
    commands: Mutex<Sender<Command>>,
    /// The machine Legion offers (its Realm processors).
    pub(crate) machine: MachineShape,
    /// The flags Legion started with.
    pub(crate) flags: Vec<String>,
    /// This process's place among the run's processes.
    pub(crate) cluster: Cluster,
}

impl LegionProcess {
    /// Queues `command` for the driver thread.
    pub(crate) fn send(&self, command: Command) -> Result<(), String> {
        self.commands
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(command)
            .map_err(|_| "the Legion driver thread has stopped".to_string())
    }

    /// Runs `f` on the driver thread and waits for its answer.
    pub(crate) fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Driver) -> R + Send + 'static,
    ) -> Result<R, String> {
        let (tx, rx) = sync_channel(1);
        self.send(Box::new(move |driver| {
            let _ = tx.send(f(driver));
        }))?;
        receive_soon(&rx)
            .map_err(|_| "the Legion driver thread stopped before answering".to_string())
    }
}

/// How long a thread waiting for the other side of a hand-off between the application and
/// the driver thread polls before it blocks.
///
/// A blocked thread costs a wake-up when the answer comes: tens of µs on a virtual machine,
/// whose idle cores halt, for each of the two hand-offs of every flush. A small launch's
/// round trip through Legion takes ~100 µs, so polling (yielding the core to runnable
/// threads meanwhile) for a little longer keeps both threads awake across it: the stencil at
/// n = 64 takes ~100 µs an iteration instead of ~200 on two cores. Longer waits cost at most
/// this much processor time before the thread sleeps.
const HANDOFF_POLL: Duration = Duration::from_micros(200);

/// The next message on `rx`: polled for [`HANDOFF_POLL`], then waited for.
fn receive_soon<T>(rx: &Receiver<T>) -> Result<T, RecvError> {
    let start = Instant::now();
    while start.elapsed() < HANDOFF_POLL {
        match rx.try_recv() {
            Ok(message) => return Ok(message),
            Err(TryRecvError::Empty) => std::thread::yield_now(),
            Err(TryRecvError::Disconnected) => return Err(RecvError),
        }
    }
    rx.recv()
}

/// The process's Legion runtime, started with `config` on first use. Later calls get the
/// same runtime (Legion cannot restart); their flags are ignored with a warning if they
/// differ.
pub(crate) fn process(config: &LegionConfig) -> Result<&'static LegionProcess, String> {
    // Checked before anything starts: a refused configuration leaves the process free to
    // start Legion with another one.
    let cluster = Cluster::from_env()?;
    let limits = Limits {
        max_procs: u64::from(ffi::LEGION_MAX_NUM_PROCS),
        memory_bytes: diffuse_backend::memory::physical_memory().map(|b| b as u64),
        ranks: cluster.ranks,
        gpus: diffuse_device::cuda::device_count() as u64,
    };
    let flags = config.checked_flags(&limits).map_err(|e| e.to_string())?;
    warn_if_oversubscribed(&flags);
    let started = PROCESS.get_or_init(|| start(config, flags.clone(), cluster));
    let process = started.as_ref().map_err(Clone::clone)?;
    if flags != process.flags {
        tracing::warn!(
            "Legion already runs in this process with flags {:?}; ignoring {:?}",
            process.flags,
            flags
        );
    }
    Ok(process)
}

/// Loads Legion, starts it with the driver thread as top-level task, and waits until it
/// runs (or fails).
fn start(
    config: &LegionConfig,
    flags: Vec<String>,
    cluster: Cluster,
) -> Result<LegionProcess, String> {
    let install = Installation::find()?;
    if cluster.is_distributed() {
        prepare_network(&cluster)?;
    }
    let api = install.load()?;
    point_task::register(api)?;
    mapper::register(api);
    let (commands, receiver) = channel::<Command>();
    let (ready_tx, ready_rx) = sync_channel::<Result<MachineShape, String>>(1);
    let argv_flags = flags.clone();
    let limits = DriverLimits {
        region_cache_bytes: config.region_cache_bytes,
        sysmem_bytes: crate::config::sysmem_bytes(&flags).unwrap_or(u64::MAX),
        traces: if config.traced_launches {
            MAX_TRACES
        } else {
            0
        },
    };
    let shard = cluster.is_distributed().then_some(cluster.rank);
    let thread = DriverThread {
        synced: renew_exit_hook,
    };
    std::thread::Builder::new()
        .name("diffuse-legion-driver".into())
        .spawn(move || drive(api, argv_flags, limits, shard, thread, receiver, ready_tx))
        .map_err(|e| format!("cannot start the Legion driver thread: {e}"))?;
    let machine = ready_rx
        .recv_timeout(Duration::from_secs(120))
        .map_err(|_| "Legion did not start within 120 s".to_string())??;
    register_exit_hook();
    Ok(LegionProcess {
        commands: Mutex::new(commands),
        machine,
        flags,
        cluster,
    })
}

/// Prepares the environment Realm's UCX network starts from in a run of several processes:
/// where this process stands (for the bootstrap plugin), the plugin itself (unless the user
/// chose another bootstrap through `REALM_UCP_BOOTSTRAP_MODE`), and UCX's log level (its
/// warning about a configuration key this UCX lacks is noise). Runs before Legion is loaded,
/// while no other thread reads the environment.
fn prepare_network(cluster: &Cluster) -> Result<(), String> {
    for (name, value) in cluster.bootstrap_env() {
        std::env::set_var(name, value);
    }
    if std::env::var_os("REALM_UCP_BOOTSTRAP_MODE").is_none() {
        let plugin = Path::new(env!("DIFFUSE_LEGION_BOOTSTRAP"));
        if !plugin.exists() {
            return Err(format!(
                "the bootstrap plugin {} is missing (rebuild diffuse-legion)",
                plugin.display()
            ));
        }
        std::env::set_var("REALM_UCP_BOOTSTRAP_MODE", "plugin");
        std::env::set_var("REALM_UCP_BOOTSTRAP_PLUGIN", plugin);
    }
    if std::env::var_os("UCX_LOG_LEVEL").is_none() {
        std::env::set_var("UCX_LOG_LEVEL", "error");
    }
    Ok(())
}

/// The driver thread: starts Legion, becomes the top-level task, then runs commands until
/// the process exits.
fn drive(
    api: &'static ffi::LegionApi,
    flags: Vec<String>,
    limits: DriverLimits,
    shard: Option<usize>,
    thread: DriverThread,
    commands: Receiver<Command>,
    ready: std::sync::mpsc::SyncSender<Result<MachineShape, String>>,
) {
    let guard = StartupGuard::arm(&flags);
    let args: Vec<CString> = std::iter::once("diffuse".to_string())
        .chain(flags)
        .filter_map(|a| CString::new(a).ok())
        .collect();
    // Legion keeps argv for the life of the process.
    let argv: &'static mut [*mut c_char] = Box::leak(
        args.into_iter()
            .map(|a| a.into_raw())
            .chain(std::iter::once(std::ptr::null_mut()))
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    );
    let argc = (argv.len() - 1) as c_int;
    // SAFETY: argv is a null-terminated array of C strings that lives forever; the task
    // variants and the mapper were registered before this call, as Legion requires.
    let code = unsafe { api.legion_runtime_start(argc, argv.as_mut_ptr(), true) };
    if code != 0 {
        drop(guard);
        let _ = ready.send(Err(format!("legion_runtime_start failed with code {code}")));
        return;
    }
    // SAFETY: the runtime has started; this thread is not a Legion thread.
    let runtime = unsafe { api.legion_runtime_get_runtime() };
    let name = CString::new("diffuse").unwrap_or_default();
    // SAFETY: as above.
    let ctx = unsafe {
        api.diffuse_legion_begin_implicit_task(
            runtime,
            TOP_TASK_ID,
            name.as_ptr(),
            i32::from(shard.is_some()),
            shard.map_or(-1, |s| s as i32),
        )
    };
    let machine = machine::discover(api);
    let mut driver = Driver::new(
        api,
        runtime,
        ctx,
        limits,
        machine.nodes,
        shard.is_some(),
        thread,
    );
    drop(guard);
    let _ = ready.send(Ok(machine));
    while let Ok(command) = receive_soon(&commands) {
        command(&mut driver);
        if driver.stopped() {
            break;
        }
    }
}

/// Warns when the CPU processors Legion is asked for outnumber the machine's cores: Realm
/// then time-slices their threads (it runs, slowly; measured: 62 CPU processors on 2 cores
/// took 1.3 s for a 64^2 stencil iteration instead of 1 ms).
fn warn_if_oversubscribed(flags: &[String]) {
    let cpus = flags
        .iter()
        .rposition(|f| f == "-ll:cpu")
        .and_then(|at| flags.get(at + 1)?.parse::<usize>().ok())
        .unwrap_or(0);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus > cores {
        tracing::warn!(
            "Legion runs {cpus} CPU processors on {cores} cores: they share the cores and run \
             slower than {cores} would"
        );
    }
}

/// Turns an abort, crash or exit inside Legion's start-up into one line naming the flags and
/// exit status 1. Legion and Realm abort the process (SIGABRT, exit status 134) on a
/// configuration they reject, their reason on standard error (`-logfile stderr`) just
/// before, and some flags crash them (`-lg:replay` without its file: SIGSEGV). Armed on the
/// driver thread around `legion_runtime_start` and the top-level task's creation; dropping
/// it disarms it, restoring the handlers before it (an application's, such as Python's
/// `faulthandler`, or UCX's).
struct StartupGuard {
    previous: [usize; FATAL_SIGNALS.len()],
}

/// The line the guard prints (leaked; read by the signal handler), and whether it is armed.
static STARTUP_LINE: std::sync::atomic::AtomicPtr<u8> =
    std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());
static STARTUP_LINE_LEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static STARTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The signals Legion's start-up ends the process with: SIGABRT, SIGBUS, SIGSEGV.
const FATAL_SIGNALS: [c_int; 3] = [6, 7, 11];
/// What `signal` returns when it fails.
const SIG_ERR: usize = usize::MAX;

extern "C" {
    fn signal(signum: c_int, handler: usize) -> usize;
    fn write(fd: c_int, buf: *const u8, count: usize) -> isize;
    fn _exit(status: c_int) -> !;
}

impl StartupGuard {
    fn arm(flags: &[String]) -> StartupGuard {
        use std::sync::atomic::Ordering;
        if STARTUP_LINE.load(Ordering::Acquire).is_null() {
            let line = format!(
                "error: Legion could not start (its reason, when it gave one, is printed \
                 above) with the flags: {}\n",
                flags.join(" ")
            )
            .into_bytes()
            .into_boxed_slice();
            STARTUP_LINE_LEN.store(line.len(), Ordering::Release);
            STARTUP_LINE.store(Box::leak(line).as_mut_ptr(), Ordering::Release);
            // SAFETY: a plain function that never unwinds.
            unsafe { atexit(exit_while_starting) };
        }
        STARTING.store(true, Ordering::Release);
        let handler = fatal_while_starting as extern "C" fn(c_int) as usize;
        // SAFETY: the handler only calls async-signal-safe functions (write, _exit).
        let previous = FATAL_SIGNALS.map(|number| unsafe { signal(number, handler) });
        StartupGuard { previous }
    }
}

impl Drop for StartupGuard {
    fn drop(&mut self) {
        STARTING.store(false, std::sync::atomic::Ordering::Release);
        for (number, previous) in FATAL_SIGNALS.into_iter().zip(self.previous) {
            if previous != SIG_ERR {
                // SAFETY: restores the handler (or action) `signal` returned when the guard
                // was armed.
                unsafe { signal(number, previous) };
            }
        }
    }
}

/// Writes the guard's line to standard error (async-signal-safe).
fn write_startup_line() {
    use std::sync::atomic::Ordering;
    let line = STARTUP_LINE.load(Ordering::Acquire);
    if !line.is_null() {
        // SAFETY: a leaked buffer of this length that is never freed.
        unsafe { write(2, line, STARTUP_LINE_LEN.load(Ordering::Acquire)) };
    }
}

extern "C" fn fatal_while_starting(_signal: c_int) {
    write_startup_line();
    // SAFETY: ends the process at once, as the signal would have, with status 1.
    unsafe { _exit(1) }
}

/// Realm exits (status 1) on flags it cannot parse, naming none: add the flags.
extern "C" fn exit_while_starting() {
    if STARTING.load(std::sync::atomic::Ordering::Acquire) {
        write_startup_line();
    }
}

extern "C" {
    fn atexit(callback: extern "C" fn()) -> c_int;
    fn on_exit(
        callback: extern "C" fn(c_int, *mut std::ffi::c_void),
        arg: *mut std::ffi::c_void,
    ) -> c_int;
    fn fflush(stream: *mut std::ffi::c_void) -> c_int;
}

/// Shuts Legion down when the process exits normally.
fn register_exit_hook() {
    // SAFETY: `shutdown_at_exit` is a plain function that never unwinds.
    unsafe { on_exit(shutdown_at_exit, std::ptr::null_mut()) };
}

/// How many times [`renew_exit_hook`] registers the exit hook again.
const EXIT_HOOK_RENEWALS: usize = 16;

/// Registers the exit hook again (the first [`EXIT_HOOK_RENEWALS`] times it is called; the
/// driver calls it after fences and host mappings, as its [`DriverThread::synced`]), so that it runs before the exit handlers
/// Realm registers after Legion started. Exit runs handlers last-registered first, and Realm
/// builds some singletons at their first use, registering their destructors then: its
/// transfer queue at the first copy or fill, whose destructor asserts that no transfer is
/// left. In a run of several processes whose program ended without [`shutdown`], that
/// destructor ran while Legion still ran (the other ranks' transfers still arriving) and
/// aborted the finished run. The hook is idempotent: the first to run shuts Legion down and
/// ends the process.
fn renew_exit_hook() {
    static RENEWED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    if RENEWED.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < EXIT_HOOK_RENEWALS {
        register_exit_hook();
    }
}

/// How long exit waits for Legion to finish outstanding work and shut down.
const SHUTDOWN_LIMIT: Duration = Duration::from_secs(30);

/// Shuts Legion down (unless the program did), then ends the process with its exit status
/// without running the exit handlers and static destructors registered before Legion
/// started, Realm's among them: with Legion shut down nothing is left for them to do, and
/// Realm's assert that no transfer is left over. In runs of several processes one sometimes
/// is (seen under load: "~XferDesQueue(): Assertion `guid_to_xd.empty()' failed"), which
/// turned a finished run, its results printed, into an abort (SIGABRT).
extern "C" fn shutdown_at_exit(status: c_int, _arg: *mut std::ffi::c_void) {
    shutdown();
    // SAFETY: flushes C's buffered streams (Rust's and Python's are flushed before `exit`),
    // then ends the process as `exit(status)` was about to.
    unsafe {
        fflush(std::ptr::null_mut());
        _exit(status)
    }
}

/// Finishes the work of every Legion backend of the process and shuts Legion down (waiting
/// at most 30 s); nothing if Legion never started or already stopped. Legion cannot start
/// again afterwards. Programs should call it before `main` returns: at process exit (where
/// it also runs) some of Legion's tools, such as its profiler, can no longer finish cleanly.
pub fn shutdown() {
    let Some(Ok(process)) = PROCESS.get() else {
        return;
    };
    // Once only: a later call (the exit hook after an explicit shutdown) would otherwise race
    // with the driver thread leaving its loop.
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if DONE.swap(true, std::sync::atomic::Ordering::AcqRel) {
        return;
    }
    let (tx, rx) = sync_channel(1);
    let sent = process.send(Box::new(move |driver: &mut Driver| {
        driver.shutdown();
        let _ = tx.send(());
    }));
    if sent.is_err() {
        return;
    }
    match rx.recv_timeout(SHUTDOWN_LIMIT) {
        Ok(()) | Err(RecvTimeoutError::Disconnected) => {}
        Err(RecvTimeoutError::Timeout) => {
            eprintln!("diffuse: Legion did not shut down within {SHUTDOWN_LIMIT:?}; exiting anyway")
        }
    }
}
