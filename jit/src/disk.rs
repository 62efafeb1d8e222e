//! Compiled CPU kernels kept on disk between processes: a program run again, or another
//! program that fuses the same work, loads its kernels instead of spending LLVM's time on
//! them again (TorchSWE compiles ~47 kernels in ~3 s of one core per run).
//!
//! Each kernel is a shared library `<name>.so` linked (by `cc -shared`) from the
//! position-independent object the JIT made of it, and `<name>.key` beside it holds what the
//! machine code depends on: this crate's version, the MLIR release and optimization level,
//! the host CPU (model and feature flags), both pass pipelines and the composed MLIR. The name is a 128-bit hash of that material,
//! and a kernel is loaded only when its `.key` equals the material in full, so neither a
//! hash collision nor a cache written by another version or CPU can bring in wrong code.
//! Files are written under temporary names and renamed into place, so processes sharing
//! the directory never see half a file. Kernels may call the functions the JIT provides
//! (`support.rs`: `memrefCopy`): each library carries a forwarder to them, pointed at this
//! process's functions when it is loaded.
//!
//! The cache holds at most [`MAX_KERNELS`] kernels: past that, keeping one first removes
//! the quarter of them least recently used (loading a kernel marks it used). The libraries
//! hold machine code only (no initializers); they are opened from a directory the user
//! owns, like any build cache, and removing the directory is always safe.

use std::ffi::c_void;
use std::hash::Hasher;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

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

/// The most kernels a cache directory holds (a kernel takes about 100 KB with its key).
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
}

impl KernelCache {
    /// A cache in `dir` (created when the first kernel is kept).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        KernelCache {
            dir: dir.into(),
            linker: std::env::var_os("CC").map_or_else(|| "cc".into(), PathBuf::from),
            host: host_cpu(),
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
             {FUSE_PIPELINE}\n{LOWER_PIPELINE}\n{text}",
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
        self.prune(MAX_KERNELS);
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
        let forwarders = self.dir.join(format!("forwarders{stem}.c"));
        std::fs::write(&forwarders, FORWARDERS)
            .map_err(|e| format!("cannot write into {}: {e}", self.dir.display()))?;
        let linker = self.linker.display();
        let mut command = Command::new(&self.linker);
        command
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&new_library)
            .arg(object)
            .arg(&forwarders);
        // SAFETY: the closure makes system calls only, as the child of a multi-threaded
        // process must before exec.
        unsafe { command.pre_exec(close_inherited_descriptors) };
        let linked = command
            .output()
            .map_err(|e| format!("cannot run {linker}: {e}"));
        let _ = std::fs::remove_file(&forwarders);
        let linked = linked?;
        if !linked.status.success() {
            cleanup();
            return Err(format!(
                "{linker} -shared failed: {}",
                String::from_utf8_lossy(&linked.stderr).trim()
            ));
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
}

impl KernelCache {
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

/// In the linker's process, before exec: closes every descriptor but the standard ones. A
/// library that opens files without close-on-exec would otherwise leave them open in the
/// linker, and with them the locks on those files: HDF5 locks the files it opens, and a
/// program (TorchSWE) reopening its output while a kernel was being linked failed to.
fn close_inherited_descriptors() -> std::io::Result<()> {
    // SAFETY: close_range takes no pointers; on kernels without it (before Linux 5.9) each
    // descriptor is closed on its own.
    unsafe {
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) != 0 {
            for fd in 3..4096 {
                libc::close(fd);
            }
        }
    }
    Ok(())
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
