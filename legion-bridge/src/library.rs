//! Legion's libraries, loaded at run time: where the installation is, the order they are
//! opened in (libcuda: the machine's driver, else the installation's stub; UCX, Legion,
//! then diffuse's shim, all globally), and the C API table every thread calls through,
//! point tasks and mapper callbacks included.
//!
//! An installation is relocatable (`scripts/gpu-check.sh` packs one into its bundle): a
//! directory named by `DIFFUSE_LEGION_DIR` that holds the shim as [`SHIM_IN_INSTALLATION`]
//! is used with that shim; otherwise the shim this crate built is.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::ffi;

/// The loaded Legion API, for every thread.
static API: OnceLock<ffi::LegionApi> = OnceLock::new();

/// The API; only called once [`Installation::load`] succeeded (point tasks, mapper callbacks
/// and drivers exist only then).
pub(crate) fn api() -> &'static ffi::LegionApi {
    API.get()
        .expect("Legion's API is loaded before any Legion callback can run")
}

/// Where an installation may carry diffuse's shim, relative to its directory (a bundle's
/// copy of the installation does; `scripts/legion-setup.sh`'s does not, and the build's
/// shim is used with it).
pub(crate) const SHIM_IN_INSTALLATION: &str = "diffuse/libdiffuse_legion_shim.so";

/// Where the Legion installation and the shim library are.
pub(crate) struct Installation {
    dir: PathBuf,
    shim: PathBuf,
}

impl Installation {
    /// The installation this crate was built against (or `DIFFUSE_LEGION_DIR`), checked to
    /// hold every library the backend opens; its own shim if it carries one (module
    /// documentation).
    pub(crate) fn find() -> Result<Installation, String> {
        let dir = std::env::var_os("DIFFUSE_LEGION_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("DIFFUSE_LEGION_DIR_BUILT")));
        let shim = shim_of(&dir, Path::new(env!("DIFFUSE_LEGION_SHIM")));
        for needed in [
            dir.join("site/legate/lib64/liblegion-legate.so"),
            dir.join("site/libucx/lib/libucp.so.0"),
            shim.clone(),
        ] {
            if !needed.exists() {
                return Err(format!(
                    "{} is missing (run scripts/legion-setup.sh, then rebuild diffuse-legion)",
                    needed.display()
                ));
            }
        }
        Ok(Installation { dir, shim })
    }

    /// Opens the libraries and looks up the API, which [`api`] returns from then on.
    pub(crate) fn load(&self) -> Result<&'static ffi::LegionApi, String> {
        // Realm links libcuda: the driver's where the machine has one (so that GPUs work),
        // else the stub `scripts/legion-setup.sh` builds for machines without.
        let stub = self.dir.join("stub/libcuda.so.1");
        if preload(Path::new("libcuda.so.1")).is_err() && stub.exists() {
            preload(&stub)?;
        }
        preload(&self.dir.join("site/libucx/lib/libucp.so.0"))?;
        preload(&self.dir.join("site/legate/lib64/liblegion-legate.so"))?;
        use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
        // SAFETY: the shim is diffuse's own library, built against this Legion.
        let shim = unsafe { Library::open(Some(&self.shim), RTLD_NOW | RTLD_GLOBAL) }
            .map_err(|e| format!("cannot load {}: {e}", self.shim.display()))?;
        // SAFETY: the bindings were generated from the headers this shim and Legion were
        // built from; every symbol is looked up now.
        let api = unsafe { ffi::LegionApi::from_library(shim) }.map_err(|e| {
            format!(
                "Legion's C API is incomplete in {}: {e}",
                self.dir.display()
            )
        })?;
        Ok(API.get_or_init(|| api))
    }
}

/// The shim to open with the installation in `dir`: its own, if it carries one, else
/// `built` (the one this crate built).
fn shim_of(dir: &Path, built: &Path) -> PathBuf {
    let carried = dir.join(SHIM_IN_INSTALLATION);
    if carried.exists() {
        carried
    } else {
        built.to_path_buf()
    }
}

/// Opens `path` with its symbols visible to libraries loaded later (Realm finds libcuda and
/// UCX this way instead of through a search path), for the life of the process. A bare
/// file name is looked up on the loader's search path.
fn preload(path: &Path) -> Result<(), String> {
    use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
    // SAFETY: these are the wheel's (or the stub's) shared libraries; their initializers
    // only register symbols.
    let lib = unsafe { Library::open(Some(path), RTLD_NOW | RTLD_GLOBAL) }
        .map_err(|e| format!("cannot load {}: {e}", path.display()))?;
    // Realm keeps pointers into it until the process ends.
    std::mem::forget(lib);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_installation_carrying_a_shim_is_used_with_it() {
        let dir = std::env::temp_dir().join(format!("diffuse-shim-test-{}", std::process::id()));
        let built = Path::new("/build/out/libdiffuse_legion_shim.so");
        std::fs::create_dir_all(dir.join("diffuse")).unwrap();
        assert_eq!(shim_of(&dir, built), built, "no shim carried: the build's");
        std::fs::write(dir.join(SHIM_IN_INSTALLATION), b"").unwrap();
        assert_eq!(shim_of(&dir, built), dir.join(SHIM_IN_INSTALLATION));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
