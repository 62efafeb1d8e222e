//! Task kinds: named computations with a declared argument contract, a native Rust variant and
//! an optional MLIR generator for the JIT.
//!
//! Kinds live in one process-wide registry so that a kind's id and name identify it everywhere
//! (memoization keys, backend task registration).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use crate::dtype::DType;
use crate::error::{IrError, KernelError};
use crate::kernel::{NativeKernel, PointTask, MAX_ARGS};
use crate::mlir::MlirGenerator;
use crate::privilege::Privilege;

/// The declared contract of one store argument.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ArgDecl {
    /// A short name for messages (`"a"`, `"out"`).
    pub name: String,
    /// The element type the kernel expects.
    pub dtype: DType,
    /// The one privilege the kernel is written for.
    pub privilege: Privilege,
}

/// A registered task kind.
pub struct TaskKind {
    id: u32,
    name: String,
    args: Vec<ArgDecl>,
    scalars: Vec<DType>,
    aligned: Vec<Vec<usize>>,
    elementwise: bool,
    native_on_cpu: bool,
    native: NativeKernel,
    mlir: Option<Arc<dyn MlirGenerator>>,
}

impl TaskKind {
    /// Starts declaring a kind named `name`.
    pub fn builder(name: impl Into<String>) -> TaskKindBuilder {
        TaskKindBuilder {
            name: name.into(),
            args: Vec::new(),
            scalars: Vec::new(),
            aligned: Vec::new(),
            elementwise: false,
            native_on_cpu: false,
            mlir: None,
        }
    }

    /// Finds a registered kind by name.
    pub fn lookup(name: &str) -> Option<Arc<TaskKind>> {
        let reg = registry().read().unwrap_or_else(|e| e.into_inner());
        reg.by_name.get(name).map(|&i| Arc::clone(&reg.kinds[i]))
    }

    /// The kind named `name`, declared with `declare` (given a builder of that name) and
    /// registered if no kind of that name exists yet: how libraries register their kinds on
    /// first use. Threads asking for the same name at once all get the one kind (the
    /// lookup-then-register step is serialized), never `DuplicateKind`.
    pub fn lookup_or_register(
        name: &str,
        declare: impl FnOnce(TaskKindBuilder) -> Result<Arc<TaskKind>, IrError>,
    ) -> Result<Arc<TaskKind>, IrError> {
        static REGISTERING: Mutex<()> = Mutex::new(());
        if let Some(kind) = Self::lookup(name) {
            return Ok(kind);
        }
        let _guard = REGISTERING.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(kind) = Self::lookup(name) {
            return Ok(kind);
        }
        declare(Self::builder(name))
    }

    /// The registry index of the kind (dense, starting at 0).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The kind's unique name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The declared store arguments.
    pub fn args(&self) -> &[ArgDecl] {
        &self.args
    }

    /// The declared scalar argument types.
    pub fn scalars(&self) -> &[DType] {
        &self.scalars
    }

    /// Groups of arguments whose sub-stores must have equal shapes at every point.
    pub fn aligned_groups(&self) -> &[Vec<usize>] {
        &self.aligned
    }

    /// True when the kernel is element-wise (see [`TaskKindBuilder::elementwise`]).
    pub fn is_elementwise(&self) -> bool {
        self.elementwise
    }

    /// Runs the native variant on one point task.
    pub fn run_native(&self, task: &PointTask<'_>) -> Result<(), KernelError> {
        (self.native)(task)
    }

    /// The MLIR generator, if the library provided one.
    pub fn mlir_generator(&self) -> Option<&Arc<dyn MlirGenerator>> {
        self.mlir.as_ref()
    }

    /// True when the native kernel is preferred on CPUs (see
    /// [`TaskKindBuilder::native_on_cpu`]).
    pub fn prefers_native_on_cpu(&self) -> bool {
        self.native_on_cpu
    }

    /// True when the kind runs compiled on host processors: it has an MLIR generator and
    /// does not prefer its native kernel there.
    pub fn compiles_on_cpu(&self) -> bool {
        self.mlir.is_some() && !self.native_on_cpu
    }
}

impl fmt::Debug for TaskKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TaskKind({} #{})", self.name, self.id)
    }
}

/// Declares a task kind; finish with [`TaskKindBuilder::register`].
pub struct TaskKindBuilder {
    name: String,
    args: Vec<ArgDecl>,
    scalars: Vec<DType>,
    aligned: Vec<Vec<usize>>,
    elementwise: bool,
    native_on_cpu: bool,
    mlir: Option<Arc<dyn MlirGenerator>>,
}

impl TaskKindBuilder {
    /// Declares the next store argument.
    pub fn arg(mut self, name: impl Into<String>, dtype: DType, privilege: Privilege) -> Self {
        self.args.push(ArgDecl {
            name: name.into(),
            dtype,
            privilege,
        });
        self
    }

    /// Declares the next scalar argument.
    pub fn scalar(mut self, dtype: DType) -> Self {
        self.scalars.push(dtype);
        self
    }

    /// Declares that the listed arguments must have equal sub-store shapes at every point
    /// (e.g. all operands of an element-wise operation).
    pub fn aligned(mut self, args: &[usize]) -> Self {
        self.aligned.push(args.to_vec());
        self
    }

    /// Declares the kernel element-wise: it computes each element of its outputs only from
    /// the elements at the same position of its inputs (an input whose sub-store has extent 1
    /// in a dimension, or lacks leading dimensions, is broadcast along them, NumPy-style), and
    /// it locates itself only through [`PointTask::sub_store`](crate::PointTask::sub_store).
    /// Running it on a band of rows, with every argument restricted to that band, then
    /// computes exactly those rows, so backends may run fused element-wise tasks strip by
    /// strip with cache-sized temporaries. Kinds with `Reduce` arguments are never run in
    /// strips.
    pub fn elementwise(mut self) -> Self {
        self.elementwise = true;
        self
    }

    /// Attaches an MLIR generator for the JIT (kept only for kinds of real element types:
    /// the JIT does not compile complex values).
    pub fn mlir(mut self, generator: Arc<dyn MlirGenerator>) -> Self {
        self.mlir = Some(generator);
        self
    }

    /// Declares the native kernel faster on CPUs than what the JIT makes of the MLIR body
    /// (a tuned library routine, such as a blocked matrix product): on host processors the
    /// runtime runs the kind natively, also inside a fused group (its neighbours compiled
    /// as segments around it). The MLIR body still serves GPUs, where only compiled kernels
    /// run.
    pub fn native_on_cpu(mut self) -> Self {
        self.native_on_cpu = true;
        self
    }

    /// Registers the kind with its native variant. Fails if the name is taken or the
    /// declaration is inconsistent.
    pub fn register(
        self,
        native: impl Fn(&PointTask<'_>) -> Result<(), KernelError> + Send + Sync + 'static,
    ) -> Result<Arc<TaskKind>, IrError> {
        if self.args.len() > MAX_ARGS {
            return Err(IrError::BadKind {
                kind: self.name,
                reason: format!(
                    "{} arguments; at most {MAX_ARGS} are supported",
                    self.args.len()
                ),
            });
        }
        if let Some(&bad) = self
            .aligned
            .iter()
            .flatten()
            .find(|&&i| i >= self.args.len())
        {
            return Err(IrError::BadKind {
                kind: self.name,
                reason: format!(
                    "aligned group names argument {bad} but only {} are declared",
                    self.args.len()
                ),
            });
        }
        let mut reg = registry().write().unwrap_or_else(|e| e.into_inner());
        if reg.by_name.contains_key(&self.name) {
            return Err(IrError::DuplicateKind { name: self.name });
        }
        // The kernel ABI compiles real element types only: a kind touching complex values
        // runs its native kernel everywhere (on the host when placed on a GPU).
        let complex = self.args.iter().any(|a| a.dtype.is_complex())
            || self.scalars.iter().any(|d| d.is_complex());
        let mlir = self.mlir.filter(|_| !complex);
        let kind = Arc::new(TaskKind {
            id: reg.kinds.len() as u32,
            name: self.name,
            args: self.args,
            scalars: self.scalars,
            aligned: self.aligned,
            elementwise: self.elementwise,
            native_on_cpu: self.native_on_cpu,
            native: Arc::new(native),
            mlir,
        });
        let index = reg.kinds.len();
        reg.by_name.insert(kind.name.clone(), index);
        reg.kinds.push(Arc::clone(&kind));
        Ok(kind)
    }
}

#[derive(Default)]
struct Registry {
    kinds: Vec<Arc<TaskKind>>,
    by_name: HashMap<String, usize>,
}

fn registry() -> &'static RwLock<Registry> {
    static REGISTRY: OnceLock<RwLock<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(|| RwLock::new(Registry::default()))
}
