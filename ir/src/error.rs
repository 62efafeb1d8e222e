//! Typed errors of the IR: malformed descriptions, tasks that break their kind's contract, and
//! failures reported by kernels or backends.

use crate::dtype::DType;
use crate::privilege::Privilege;
use crate::store::StoreId;
use crate::tuple::{Point, Shape};

/// Everything that can go wrong building, submitting or running IR.
#[derive(Clone, Debug, thiserror::Error)]
pub enum IrError {
    /// A tuple with more dimensions than the IR supports.
    #[error("{dims} dimensions requested; at most {max} are supported")]
    TooManyDims {
        /// Requested number of dimensions.
        dims: usize,
        /// The limit.
        max: usize,
    },
    /// A shape with a negative extent.
    #[error("shape {shape} has negative extent {extent}")]
    NegativeExtent {
        /// The offending shape.
        shape: Shape,
        /// The negative entry.
        extent: i64,
    },
    /// A projection that reads a missing input dim, repeats one in a permutation, or uses a
    /// negative constant.
    #[error("bad projection: {reason}")]
    BadProjection {
        /// What is wrong.
        reason: String,
    },
    /// A tiling whose parts disagree on dimensions or have non-positive tiles or negative
    /// offsets.
    #[error("bad tiling: {reason}")]
    BadTiling {
        /// What is wrong.
        reason: String,
    },
    /// A store or launch domain with more elements than this machine can address.
    #[error("{what} is too large to address")]
    TooLarge {
        /// What was too large.
        what: String,
    },
    /// A view that does not fit inside its store.
    #[error("view at offset {offset} with shape {shape} does not fit store {store} of shape {store_shape}")]
    ViewOutOfBounds {
        /// The store.
        store: StoreId,
        /// The store's shape.
        store_shape: Shape,
        /// Requested origin (store coordinates).
        offset: Point,
        /// Requested extent.
        shape: Shape,
    },
    /// Registering a second task kind under an existing name.
    #[error("a task kind named `{name}` is already registered")]
    DuplicateKind {
        /// The name.
        name: String,
    },
    /// A task kind definition that is inconsistent with itself.
    #[error("task kind `{kind}`: {reason}")]
    BadKind {
        /// The kind's name.
        kind: String,
        /// What is wrong.
        reason: String,
    },
    /// A launch domain with an empty or too many dimensions.
    #[error(
        "task `{kind}`: launch domain {domain} must have at least one point in every dimension"
    )]
    EmptyLaunch {
        /// The task kind.
        kind: String,
        /// The launch domain.
        domain: Shape,
    },
    /// Wrong number of store arguments.
    #[error("task `{kind}` takes {expected} store arguments, got {found}")]
    ArgCount {
        /// The task kind.
        kind: String,
        /// Declared count.
        expected: usize,
        /// Supplied count.
        found: usize,
    },
    /// Wrong number or types of scalar arguments.
    #[error("task `{kind}` takes scalars {expected:?}, got {found:?}")]
    ScalarMismatch {
        /// The task kind.
        kind: String,
        /// Declared scalar dtypes.
        expected: Vec<DType>,
        /// Supplied scalar dtypes.
        found: Vec<DType>,
    },
    /// A store whose dtype differs from the kind's declaration.
    #[error(
        "task `{kind}` argument {arg}: expected a {expected} store, got {found} store {store}"
    )]
    DTypeMismatch {
        /// The task kind.
        kind: String,
        /// Argument index.
        arg: usize,
        /// Declared dtype.
        expected: DType,
        /// The store's dtype.
        found: DType,
        /// The store.
        store: StoreId,
    },
    /// A privilege the kind does not declare for that argument.
    #[error("task `{kind}` argument {arg}: privilege {requested} requested but the kind declares {declared}")]
    PrivilegeNotDeclared {
        /// The task kind.
        kind: String,
        /// Argument index.
        arg: usize,
        /// Declared privilege.
        declared: Privilege,
        /// Requested privilege.
        requested: Privilege,
    },
    /// A partition whose dimensions do not match the store or the launch domain.
    #[error("task `{kind}` argument {arg}: {what} (store {store} of shape {store_shape}, launch domain {launch})")]
    DimMismatch {
        /// The task kind.
        kind: String,
        /// Argument index.
        arg: usize,
        /// The store.
        store: StoreId,
        /// The store's shape.
        store_shape: Shape,
        /// The launch domain.
        launch: Shape,
        /// Which dimensions disagree.
        what: String,
    },
    /// A tiling whose launch domain reaches tiles that lie outside the store (or view).
    #[error("task `{kind}` argument {arg}: launch domain {launch} reaches tile {color} at {tile_origin}, outside the tiled region {region_lo}..{region_hi} of store {store} of shape {store_shape}")]
    TilingOutOfBounds {
        /// The task kind.
        kind: String,
        /// Argument index.
        arg: usize,
        /// The store.
        store: StoreId,
        /// The store's shape.
        store_shape: Shape,
        /// The launch domain.
        launch: Shape,
        /// The largest color the launch reaches.
        color: Point,
        /// Where that color's tile starts.
        tile_origin: Point,
        /// Lower corner of the region the tiling may reach.
        region_lo: Point,
        /// Upper corner (exclusive) of that region.
        region_hi: Point,
    },
    /// A multi-point launch writing through `Replicate`: every point would write the whole store.
    #[error("task `{kind}` argument {arg}: {privilege} through Replicate in a launch of {points} points (store {store} of shape {store_shape}); every point would write the whole store")]
    ReplicatedWrite {
        /// The task kind.
        kind: String,
        /// Argument index.
        arg: usize,
        /// The store.
        store: StoreId,
        /// The store's shape.
        store_shape: Shape,
        /// The privilege.
        privilege: Privilege,
        /// Launch volume.
        points: i64,
    },
    /// A write through an image partition whose boxes overlap.
    #[error("task `{kind}` argument {arg}: {privilege} through an image partition of store {store} whose boxes overlap; only reads and reductions may go through one")]
    WriteThroughImage {
        /// The task kind.
        kind: String,
        /// Argument index.
        arg: usize,
        /// The store.
        store: StoreId,
        /// The privilege.
        privilege: Privilege,
    },
    /// A write through a tiling whose projection sends several launch points to one tile.
    #[error("task `{kind}` argument {arg}: {privilege} through a tiling whose projection {projection} maps several points of launch domain {launch} to the same tile of store {store}")]
    AliasedWrite {
        /// The task kind.
        kind: String,
        /// Argument index.
        arg: usize,
        /// The store.
        store: StoreId,
        /// The launch domain.
        launch: Shape,
        /// The privilege.
        privilege: Privilege,
        /// The projection, printed.
        projection: String,
    },
    /// Two arguments naming the same store where at least one changes it.
    #[error("task `{kind}` arguments {first} and {second} both access store {store} ({first_privilege} and {second_privilege}); a store that is written may appear only once per task")]
    InterferingArgs {
        /// The task kind.
        kind: String,
        /// First argument index.
        first: usize,
        /// Second argument index.
        second: usize,
        /// The store.
        store: StoreId,
        /// Privilege of the first.
        first_privilege: Privilege,
        /// Privilege of the second.
        second_privilege: Privilege,
    },
    /// Arguments the kind declares aligned whose sub-stores differ in shape.
    #[error("task `{kind}` arguments {first} and {second} must have equal sub-store shapes, but they access regions of shape {first_shape} and {second_shape} (tiles {first_tile} and {second_tile})")]
    ShapeMismatch {
        /// The task kind.
        kind: String,
        /// First argument index.
        first: usize,
        /// Second argument index.
        second: usize,
        /// Region reachable by the first.
        first_shape: Shape,
        /// Region reachable by the second.
        second_shape: Shape,
        /// Tile of the first (its store shape for `Replicate`).
        first_tile: Shape,
        /// Tile of the second.
        second_tile: Shape,
    },
    /// A store used in a task after the application dropped every handle to it.
    #[error("task `{kind}` argument {arg}: store {store} was used after its last application handle was dropped")]
    DeadStore {
        /// The task kind.
        kind: String,
        /// Argument index.
        arg: usize,
        /// The store.
        store: StoreId,
    },
    /// Recorded tasks cannot be replayed (see `Context::finish_recording`).
    #[error("the recorded tasks cannot be replayed: {reason}")]
    NotReplayable {
        /// What the recorded code did that a replay would not repeat.
        reason: String,
    },

    /// A replay's inputs do not match its recording's.
    #[error("cannot replay the recording: {reason}")]
    ReplayMismatch {
        /// Which input differs, and how.
        reason: String,
    },

    /// Host data that does not match the store or view it is read from or written to.
    #[error("store {store}: {what}")]
    HostData {
        /// The store.
        store: StoreId,
        /// What is wrong.
        what: String,
    },
    /// A backend allocation slot already holding another backend's allocation.
    #[error("store {store} already carries an allocation of another backend (wanted {wanted})")]
    AllocationType {
        /// The store.
        store: StoreId,
        /// The type the caller asked for.
        wanted: &'static str,
    },
    /// A store whose data does not fit in the memory the backend may use.
    #[error("out of memory on the {backend} backend: store {store} ({dtype}, shape {shape}) needs {bytes} bytes; {reason}")]
    OutOfMemory {
        /// The backend's name.
        backend: String,
        /// The store.
        store: StoreId,
        /// Its shape.
        shape: Shape,
        /// Its element type.
        dtype: DType,
        /// The bytes its data needs.
        bytes: usize,
        /// What stood in the way: the limit and what was in use, or the allocator.
        reason: String,
    },
    /// A kernel failed.
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// The backend failed for a reason outside any one kernel.
    #[error("backend {backend}: {message}")]
    Backend {
        /// The backend's name.
        backend: String,
        /// What happened.
        message: String,
    },
    /// A store without a value: a task that computes it, or a value it depends on, failed.
    /// Reading it, or running a task that reads it, reports the original failure.
    #[error("store {store} has no value: task `{task}`, on which it depends, failed: {cause}")]
    Poisoned {
        /// The store.
        store: StoreId,
        /// The task that failed (a fused task's joined name when the constituent that failed
        /// is not known).
        task: String,
        /// Why it failed.
        cause: Box<IrError>,
    },
    /// Launches an asynchronous backend accepted and that failed afterwards, reported at the
    /// next flush: each with the ticket of its plan (`LaunchPlan::ticket`), in launch order.
    #[error("{}", launch_failures(.0))]
    Launches(Vec<(u64, IrError)>),
}

fn launch_failures(failures: &[(u64, IrError)]) -> String {
    match failures {
        [] => "no launch failed".to_string(),
        [(_, only)] => only.to_string(),
        [(_, first), rest @ ..] => format!("{first} (and {} more failed launches)", rest.len()),
    }
}

impl IrError {
    /// The failure behind this error: the cause of a [`IrError::Poisoned`] store, the first
    /// of several failed launches, otherwise the error itself.
    pub fn root_cause(&self) -> &IrError {
        match self {
            IrError::Poisoned { cause, .. } => cause.root_cause(),
            IrError::Launches(failures) => failures
                .first()
                .map_or(self, |(_, first)| first.root_cause()),
            other => other,
        }
    }
}

/// A failure inside one point task.
#[derive(Clone, Debug, thiserror::Error)]
#[error("task `{kind}` at point {point}: {reason}")]
pub struct KernelError {
    /// The task kind.
    pub kind: String,
    /// The failing point (empty when not yet known).
    pub point: Point,
    /// What went wrong.
    pub reason: String,
}
