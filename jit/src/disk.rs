//! Compiled CPU kernels kept on disk between processes: a program run again, or another
//! program that fuses the same work, loads its kernels instead of spending LLVM's time on
//! them again (TorchSWE compiles ~47 kernels in ~3 s of one core per run).
//!
//! Each kernel is a shared library `<name>.so` linked (by `cc -shared`) from the
//! position-independent object the JIT made of it, and `<name>.key` beside it holds what the
//! machine code depends on: this crate's version, the MLIR release and optimization level,
//! the host CPU (model and feature flags), the forwarders below, both pass pipelines and the
//! composed MLIR. The name is a 128-bit hash of that material, and a kernel is loaded only
//! when its `.key` equals the material in full, so neither a hash collision nor a cache
//! written by another version or CPU can bring in wrong code.
//! Files are written under temporary names and renamed into place, so processes sharing
//! the directory never see half a file. Kernels may call the functions the JIT provides
//! (`support.rs`: `memrefCopy`): each library carries a forwarder to them, pointed at this
//! process's functions when it is loaded.
//!
//! The cache holds about [`MAX_KERNELS`] kernels: the first kernel a process keeps prunes it
//! to three quarters of that when it holds more, least recently used first (loading a
//! kernel marks it used). The libraries
//! hold machine code only (no initializers); they are opened from a directory the user
//! owns, like any build cache, and removing the directory is always safe.

use std::ffi::{c_void, CString, OsStr};
use std::hash::Hasher;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once};

use libloading::os::unix::{Library as UnixLibrary, RTLD_LOCAL, RTLD_NOW};
use siphasher::sip128::{Hasher128, SipHasher13};

use crate::compiler::{NativeCode, FUSE_PIPELINE, LOWER_PIPELINE, OPT_LEVEL};

/// The MLIR/LLVM release kernels are compiled with (the `mlir-sys` bindings pin it).
const MLIR_VERSION: &str = "22";

/// The environment variable naming the cache directory (`off` turns the cache off).
pub const CACHE_VARIABLE: &str = "DIFFUSE_KERNEL_CACHE";

/// Linked into every kept kernel: each function the JIT provides its kernels (`support.rs`),
/// forwarding through a pointer the loader sets.
const FORWARDERS: &str = "\
typedef void (*diffuse_memref_copy_fn)(long, void *, void *);
diffuse_memref_copy_fn diffuse_memref_copy_hook;
void memrefCopy(long size, void *src, void *dst) { diffuse_memref_copy_hook(size, src, dst); }
";

/// Past this many kernels, the first kernel a process keeps prunes the cache to three
/// quarters of it (a kernel takes about 100 KB with its key).
pub const MAX_KERNELS: usize = 4096;

/// The symbol of the pointer the forwarder of `memrefCopy` calls through.
const MEMREF_COPY_HOOK: &[u8] = b"diffuse_memref_copy_hook\0";

/// A directory of compiled kernels shared by every process of this user.
#[derive(Debug, Clone)]
pub struct KernelCache {
    dir: PathBuf,
    /// The C compiler that links kept kernels (`$CC`, else `cc`).
    linker: PathBuf,
    /// The host CPU's model and feature flags: code compiled for one CPU may not run on
    /// another.
    host: String,
    /// Pruned (once per cache, when it first keeps a kernel).
    pruned: Arc<Once>,
}

impl KernelCache {
    /// A cache in `dir` (created when the first kernel is kept).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        KernelCache {
            dir: dir.into(),
            linker: std::env::var_os("CC").map_or_else(|| "cc".into(), PathBuf::from),
            host: host_cpu(),
            pruned: Arc::new(Once::new()),
        }
    }

    /// This cache, linking kernels with `linker` (a C compiler driver taking `cc`'s flags).
    pub fn with_linker(mut self, linker: impl Into<PathBuf>) -> Self {
        self.linker = linker.into();
        self
    }

    /// The cache the environment asks for: the directory `DIFFUSE_KERNEL_CACHE` names
    /// (`off`, `0` or empty: none), else `$XDG_CACHE_HOME/diffuse/kernels`, else
    /// `$HOME/.cache/diffuse/kernels`; `None` when off or there is no home.
    pub fn from_env() -> Option<Self> {
        let var = |name: &str| std::env::var_os(name).map(PathBuf::from);
        Self::from_vars(
            var(CACHE_VARIABLE).as_deref(),
            var("XDG_CACHE_HOME").as_deref(),
            var("HOME").as_deref(),
        )
    }

    /// [`KernelCache::from_env`] given the values of `DIFFUSE_KERNEL_CACHE`,
    /// `XDG_CACHE_HOME` and `HOME`.
    pub fn from_vars(
        named: Option<&Path>,
        xdg: Option<&Path>,
        home: Option<&Path>,
    ) -> Option<Self> {
        if let Some(named) = named {
            return match named.to_str() {
                Some("off" | "0" | "") => None,
                _ => Some(Self::new(named)),
            };
        }
        let set = |v: Option<&Path>| {
            v.filter(|p| !p.as_os_str().is_empty())
                .map(Path::to_path_buf)
        };
        let base = set(xdg).or_else(|| set(home).map(|h| h.join(".cache")))?;
        Some(Self::new(base.join("diffuse").join("kernels")))
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Everything the machine code of the kernel composed as `text` depends on.
    fn material(&self, text: &str) -> String {
        format!(
            "diffuse-jit {} (MLIR {}), -O{OPT_LEVEL}, position-independent\n{}\n\
             {FORWARDERS}{FUSE_PIPELINE}\n{LOWER_PIPELINE}\n{text}",
            env!("CARGO_PKG_VERSION"),
            MLIR_VERSION,
            self.host
        )
    }

    /// The file name (without extension) of a kernel with `material`.
    fn name(material: &str) -> String {
        let mut hasher = SipHasher13::new();
        hasher.write(material.as_bytes());
        format!("{:032x}", hasher.finish128().as_u128())
    }

    /// The kernel composed as `text`, with entry point `symbol`, if an earlier process kept
    /// it here.
    pub(crate) fn load(&self, text: &str, symbol: &str) -> Option<NativeCode> {
        let material = self.material(text);
        let base = self.dir.join(Self::name(&material));
        let key_path = base.with_extension("key");
        let key = std::fs::read(&key_path).ok()?;
        if key != material.as_bytes() {
            return None;
        }
        // Marks it used, for pruning (a cache that cannot record this still serves).
        let _ = std::fs::File::options()
            .append(true)
            .open(&key_path)
            .and_then(|f| f.set_modified(std::time::SystemTime::now()));
        let library = open(&base.with_extension("so")).ok()?;
        let entry = entry_point(&library, symbol).ok()?;
        // SAFETY: the hook is the forwarder's function pointer (see `FORWARDERS`), written
        // before any kernel of the library runs; `memref_copy` has the signature it calls.
        unsafe {
            let hook: *mut usize = *library.get::<*mut usize>(MEMREF_COPY_HOOK).ok()?;
            *hook = crate::support::memref_copy as *const () as usize;
        }
        Some(NativeCode::from_library(library, entry))
    }

    /// Where the JIT writes the object of a kernel it is about to compile, for
    /// [`KernelCache::keep`].
    pub(crate) fn object_path(&self) -> PathBuf {
        std::env::temp_dir().join(format!("diffuse-kernel-{}.o", unique()))
    }

    /// Links `object` (the compiled kernel composed as `text`, entry point `symbol`) into a
    /// shared library and keeps it; removes `object`. The reason when it could not be kept.
    pub(crate) fn keep(&self, text: &str, symbol: &str, object: &Path) -> Result<(), String> {
        let kept = self.link_and_check(text, symbol, object);
        let _ = std::fs::remove_file(object);
        kept
    }

    fn link_and_check(&self, text: &str, symbol: &str, object: &Path) -> Result<(), String> {
        let material = self.material(text);
        let base = self.dir.join(Self::name(&material));
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
        self.pruned.call_once(|| self.prune(MAX_KERNELS));
        let stem = format!(".{}", unique());
        let (library, key) = (base.with_extension("so"), base.with_extension("key"));
        let (new_library, new_key) = (
            library.with_extension(format!("so{stem}")),
            key.with_extension(format!("key{stem}")),
        );
        let cleanup = || {
            let _ = std::fs::remove_file(&new_library);
            let _ = std::fs::remove_file(&new_key);
        };
        let forwarders = self.forwarders()?;
        let linked = self.run(&[
            OsStr::new("-shared"),
            OsStr::new("-o"),
            new_library.as_os_str(),
            object.as_os_str(),
            forwarders.as_os_str(),
        ]);
        if let Err(e) = linked {
            cleanup();
            return Err(e);
        }
        let loadable = open(&new_library)
            .and_then(|l| entry_point(&l, symbol).map(|_| ()))
            .map_err(|e| format!("the linked kernel does not load: {e}"));
        let written = loadable.and_then(|()| {
            std::fs::write(&new_key, material.as_bytes())
                .and_then(|()| std::fs::rename(&new_library, &library))
                .and_then(|()| std::fs::rename(&new_key, &key))
                .map_err(|e| format!("cannot write into {}: {e}", self.dir.display()))
        });
        if written.is_err() {
            cleanup();
        }
        written
    }

    /// The object of the forwarders every kept kernel is linked with, compiled into the
    /// cache once (named by a hash of its source).
    fn forwarders(&self) -> Result<PathBuf, String> {
        let object = self
            .dir
            .join(format!("forwarders-{}.o", Self::name(FORWARDERS)));
        if object.exists() {
            return Ok(object);
        }
        let stem = unique();
        let (source, new_object) = (
            self.dir.join(format!("forwarders.{stem}.c")),
            self.dir.join(format!("forwarders.{stem}.o")),
        );
        std::fs::write(&source, FORWARDERS)
            .map_err(|e| format!("cannot write into {}: {e}", self.dir.display()))?;
        let compiled = self
            .run(&[
                OsStr::new("-c"),
                OsStr::new("-fPIC"),
                OsStr::new("-O2"),
                OsStr::new("-o"),
                new_object.as_os_str(),
                source.as_os_str(),
            ])
            .and_then(|()| {
                std::fs::rename(&new_object, &object)
                    .map_err(|e| format!("cannot write into {}: {e}", self.dir.display()))
            });
        let _ = std::fs::remove_file(&source);
        let _ = std::fs::remove_file(&new_object);
        compiled.map(|()| object)
    }

    /// Runs the C compiler with `args`, with the standard descriptors only (see
    /// [`spawn_closed`]); the reason when it cannot be run or fails.
    fn run(&self, args: &[&OsStr]) -> Result<(), String> {
        let errors = self.dir.join(format!(".cc-errors.{}", unique()));
        let outcome = spawn_closed(&self.linker, args, &errors);
        let said = std::fs::read_to_string(&errors).unwrap_or_default();
        let _ = std::fs::remove_file(&errors);
        outcome.map_err(|e| {
            let said = said.trim();
            let colon = if said.is_empty() { "" } else { ": " };
            format!("{} {e}{colon}{said}", self.linker.display())
        })
    }

    /// Removes the least recently used quarter of the kernels when more than `limit` are
    /// kept (by their keys' modification times; a kernel whose key is gone no longer loads,
    /// so a key goes first).
    pub fn prune(&self, limit: usize) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut keys: Vec<(std::time::SystemTime, PathBuf)> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "key"))
            .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
            .collect();
        if keys.len() <= limit {
            return;
        }
        keys.sort();
        for (_, key) in keys.iter().take(keys.len() - limit * 3 / 4) {
            let _ = std::fs::remove_file(key);
            let _ = std::fs::remove_file(key.with_extension("so"));
        }
    }
}

/// Runs `program` with `args` (found on `PATH`) and waits for it: its standard input and
/// output on `/dev/null`, its standard error into `errors`, and no other descriptor open. A
/// library that opens files without close-on-exec would otherwise leave them open in the
/// child, and with them the locks on those files: HDF5 locks the files it opens, and a
/// program (TorchSWE) reopening its output while a kernel was being linked failed to.
/// `posix_spawn` rather than `std::process::Command`, which forks (copying the page tables
/// of a process that may hold gigabytes: ~40 ms per kernel) as soon as the child must run
/// code of its own before exec, as closing descriptors would need.
fn spawn_closed(program: &Path, args: &[&OsStr], errors: &Path) -> Result<(), String> {
    let c_string = |s: &OsStr| {
        CString::new(s.as_bytes()).map_err(|_| format!("argument {s:?} holds a NUL byte"))
    };
    let mut owned = vec![c_string(program.as_os_str())?];
    for arg in args {
        owned.push(c_string(arg)?);
    }
    let environment: Vec<CString> = std::env::vars_os()
        .filter_map(|(k, v)| {
            let mut pair = k.into_vec();
            pair.push(b'=');
            pair.extend(v.into_vec());
            CString::new(pair).ok()
        })
        .collect();
    let pointers = |strings: &[CString]| -> Vec<*mut libc::c_char> {
        strings
            .iter()
            .map(|c| c.as_ptr().cast_mut())
            .chain(std::iter::once(std::ptr::null_mut()))
            .collect()
    };
    let (argv, envp) = (pointers(&owned), pointers(&environment));
    let null = c_string(OsStr::new("/dev/null"))?;
    let errors = c_string(errors.as_os_str())?;
    // SAFETY: the file actions are initialized before use and destroyed once; every pointer
    // passed is a NUL-terminated string, or a NULL-terminated array of them, that outlives
    // the calls; `pid` and `status` are written by the calls.
    unsafe {
        let mut actions: libc::posix_spawn_file_actions_t = std::mem::zeroed();
        if libc::posix_spawn_file_actions_init(&mut actions) != 0 {
            return Err("cannot be started (file actions)".into());
        }
        let redirect =
            |actions: &mut libc::posix_spawn_file_actions_t, fd, path: &CString, flags| {
                libc::posix_spawn_file_actions_addopen(actions, fd, path.as_ptr(), flags, 0o600)
                    == 0
            };
        let prepared = redirect(&mut actions, 0, &null, libc::O_RDONLY)
            && redirect(&mut actions, 1, &null, libc::O_WRONLY)
            && redirect(
                &mut actions,
                2,
                &errors,
                libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
            )
            && libc::posix_spawn_file_actions_addclosefrom_np(&mut actions, 3) == 0;
        let mut pid: libc::pid_t = 0;
        let spawned = prepared
            && libc::posix_spawnp(
                &mut pid,
                owned[0].as_ptr(),
                &actions,
                std::ptr::null(),
                argv.as_ptr(),
                envp.as_ptr(),
            ) == 0;
        libc::posix_spawn_file_actions_destroy(&mut actions);
        if !spawned {
            return Err("cannot be started".into());
        }
        let mut status = 0;
        while libc::waitpid(pid, &mut status, 0) < 0 {
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return Err("could not be waited for".into());
            }
        }
        if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
            Ok(())
        } else {
            Err(format!("failed (wait status {status})"))
        }
    }
}

/// `path` opened with every symbol resolved now (so that a missing one fails here, not when
/// a kernel runs).
fn open(path: &Path) -> Result<libloading::Library, libloading::Error> {
    // SAFETY: the library holds a kernel's machine code and no initializers (see the module
    // documentation).
    let library = unsafe { UnixLibrary::open(Some(path), RTLD_NOW | RTLD_LOCAL) }?;
    Ok(library.into())
}

/// The packed entry point of kernel `symbol` in `library`.
fn entry_point(
    library: &libloading::Library,
    symbol: &str,
) -> Result<*mut c_void, libloading::Error> {
    let name = format!("_mlir__mlir_ciface_{symbol}\0");
    // SAFETY: the symbol is the kernel's packed entry point, a function; only its address is
    // taken here.
    let entry = unsafe { library.get::<*mut c_void>(name.as_bytes()) }?;
    Ok(*entry)
}

/// A name part no other file of this or another process has at the same time.
fn unique() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "{}-{}-{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The host CPU's model name and feature flags (the first processor's lines of
/// `/proc/cpuinfo`), or the architecture alone where that file does not exist.
fn host_cpu() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .map_or("", |l| l.split_once(':').map_or("", |(_, v)| v.trim()))
            .to_string()
    };
    format!(
        "{} | {} | {}",
        std::env::consts::ARCH,
        field("model name"),
        field("flags")
    )
}
