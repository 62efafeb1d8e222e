//! The `Context`: the one object libraries talk to. It creates stores, checks and forwards
//! index tasks to the runtime behind it, and moves data between the application and stores.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::dtype::{DType, Element};
use crate::error::IrError;
use crate::host::{bytes_of_mut, HostBlock, HostData};
use crate::recording::{Recorder, Recording, ReplayStores};
use crate::store::{Store, StoreRef, View};
use crate::task::IndexTask;
use crate::tuple::{Rect, Shape, Tuple};
use crate::validate::validate;

/// What a `Context` forwards to: the runtime that buffers, optimizes and executes tasks.
///
/// The root `diffuse` crate implements it (window, fusion, JIT, mapping, a backend); the IR
/// only fixes the contract.
pub trait Executor: Send + Sync {
    /// A short name for messages (`"embedded"`, `"legion"`).
    fn name(&self) -> &str;

    /// How many processors execute point tasks. Libraries size launch domains with it (one
    /// block per processor); it never changes what a task computes.
    fn processors(&self) -> usize;

    /// The fewest elements worth a launch point of their own: libraries give an operation
    /// over fewer than `processors() * min_block()` elements fewer points (at least one),
    /// since every point costs the backend a fixed amount however small its block. `1` gives
    /// every processor a point whenever the array has that many elements.
    fn min_block(&self) -> usize {
        1
    }

    /// Whether scalar work ([`IndexTask::is_scalar`]) whose result nothing holds after the
    /// launch that reads it runs inside that launch (each point computing it) rather than
    /// as a launch of its own. Where it does, a library may divide two 0-d results again
    /// wherever it needs their quotient instead of keeping the quotient, which would be a
    /// launch of its own; where it does not, keeping it is cheaper. The default: no.
    fn fuses_scalar_work(&self) -> bool {
        false
    }

    /// What buffered or running work still does with `store`: what a host copy of it must
    /// wait for. A read waits only for work that writes the store ([`PendingUse::Writes`]),
    /// a write for any work that uses it; with [`PendingUse::Nothing`] a host copy runs at
    /// once and leaves the rest of the buffered work buffered (it keeps fusing). The
    /// default, `Writes`, is always safe: every host copy waits for everything.
    fn pending_use(&self, store: &StoreRef) -> PendingUse {
        let _ = store;
        PendingUse::Writes
    }

    /// Accepts a validated task. It may run now or later, but before any later `read` or
    /// `write` of a store it touches completes, and in submission order with respect to other
    /// tasks' effects.
    fn execute(&self, task: IndexTask) -> Result<(), IrError>;

    /// Runs everything accepted so far.
    fn flush(&self) -> Result<(), IrError>;

    /// Copies `rect` of `store` to the host (row-major), after all pending work on it.
    fn read(&self, store: &StoreRef, rect: Rect) -> Result<HostData, IrError>;

    /// `read` into a buffer the caller owns: `out` holds exactly the bytes of `rect`'s
    /// elements (the store's dtype, row-major, native-endian). A caller with its own host
    /// buffer (NumPy's) gets the elements with one copy; the default reads and copies.
    fn read_into(&self, store: &StoreRef, rect: Rect, out: &mut [u8]) -> Result<(), IrError> {
        let data = self.read(store, rect)?;
        copy_host_bytes(store, data.as_bytes(), out)
    }

    /// Overwrites `rect` of `store` with row-major `data`, ordered after pending work.
    fn write(&self, store: &StoreRef, rect: Rect, data: HostData) -> Result<(), IrError>;

    /// Hands over the elements of `store`, which the application is done with, in the host
    /// memory that holds them, after all pending work that uses the store: an array moving
    /// to a host library (NumPy) without a copy. `None` where the executor cannot (the
    /// elements are not in one host buffer of its own); the caller then copies with
    /// [`Executor::read_into`]. The caller uses the store no more afterwards: the block is
    /// its elements. The default: `None`.
    fn take_host(&self, store: &StoreRef) -> Result<Option<HostBlock>, IrError> {
        let _ = store;
        Ok(None)
    }

    /// Fills a store that no task has used yet (it was just created) with row-major `data`.
    /// No pending work can touch it, so an executor need not wait for any; by default this
    /// is a `write` of the whole store.
    fn initialize(&self, store: &StoreRef, data: HostData) -> Result<(), IrError> {
        self.write(store, store.bounds(), data)
    }
}

/// Copies `bytes` read from `store` into `out`, which must have the same length.
pub fn copy_host_bytes(store: &StoreRef, bytes: &[u8], out: &mut [u8]) -> Result<(), IrError> {
    if bytes.len() != out.len() {
        return Err(IrError::HostData {
            store: store.id(),
            what: format!(
                "a host buffer of {} bytes given for {} bytes read",
                out.len(),
                bytes.len()
            ),
        });
    }
    out.copy_from_slice(bytes);
    Ok(())
}

/// What work buffered in an executor (or still running) does with one store
/// ([`Executor::pending_use`]), from least to most: what a host copy must wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PendingUse {
    /// No pending work uses the store: host reads and writes need not wait.
    Nothing,
    /// Pending work only reads the store: a host read need not wait, a host write must.
    Reads,
    /// Pending work may write the store: every host copy must wait.
    Writes,
}

/// An executor that runs nothing: a [`Context`] over it builds stores and index tasks (store
/// creation never reaches the executor) for analyses and benchmarks that only inspect tasks.
/// Executing, reading or writing data fails with [`IrError::Backend`]; flushing has nothing
/// to do.
#[derive(Debug, Default)]
pub struct Detached;

impl Detached {
    fn refuse(what: &str) -> IrError {
        IrError::Backend {
            backend: "detached".into(),
            message: format!("{what}: a detached context runs nothing"),
        }
    }
}

impl Executor for Detached {
    fn name(&self) -> &str {
        "detached"
    }

    fn processors(&self) -> usize {
        1
    }

    fn execute(&self, task: IndexTask) -> Result<(), IrError> {
        Err(Self::refuse(&format!("executing {}", task.kind().name())))
    }

    fn flush(&self) -> Result<(), IrError> {
        Ok(())
    }

    fn read(&self, _store: &StoreRef, _rect: Rect) -> Result<HostData, IrError> {
        Err(Self::refuse("reading a store"))
    }

    fn write(&self, _store: &StoreRef, _rect: Rect, _data: HostData) -> Result<(), IrError> {
        Err(Self::refuse("writing a store"))
    }
}

/// The entry point for libraries and applications; cheap to clone (all clones share the
/// runtime).
#[derive(Clone)]
pub struct Context {
    executor: Arc<dyn Executor>,
    submitted: Arc<AtomicU64>,
    /// Whether `recorder` holds an open recording (read on every submission, without the
    /// lock).
    recording: Arc<AtomicBool>,
    recorder: Arc<Mutex<Option<Recorder>>>,
}

impl Context {
    /// A context forwarding to `executor`.
    pub fn new(executor: Arc<dyn Executor>) -> Self {
        Context {
            executor,
            submitted: Arc::new(AtomicU64::new(0)),
            recording: Arc::new(AtomicBool::new(false)),
            recorder: Arc::new(Mutex::new(None)),
        }
    }

    /// A context over [`Detached`]: it builds stores and tasks but runs nothing.
    pub fn detached() -> Self {
        Context::new(Arc::new(Detached))
    }

    /// How many index tasks have been submitted through this context (and its clones). With
    /// the runtime's count of executed tasks this shows what fusion saved.
    pub fn tasks_submitted(&self) -> u64 {
        self.submitted.load(Ordering::Relaxed)
    }

    /// The name of the runtime behind this context.
    pub fn executor_name(&self) -> &str {
        self.executor.name()
    }

    /// How many processors the runtime behind this context executes point tasks on.
    pub fn processors(&self) -> usize {
        self.executor.processors().max(1)
    }

    /// The fewest elements the runtime behind this context wants per launch point (see
    /// [`Executor::min_block`]; at least 1).
    pub fn min_block(&self) -> usize {
        self.executor.min_block().max(1)
    }

    /// Whether the runtime behind this context runs scalar work inside the launch that
    /// consumes it (see [`Executor::fuses_scalar_work`]).
    pub fn fuses_scalar_work(&self) -> bool {
        self.executor.fuses_scalar_work()
    }

    /// Creates a store of `shape` and `dtype`, initially all zero (false).
    pub fn create_store(&self, shape: &[i64], dtype: DType) -> Result<Store, IrError> {
        let shape = Tuple::shape(shape)?;
        let addressable = shape
            .checked_volume()
            .and_then(|v| v.checked_mul(dtype.size_bytes() as i64))
            .is_some_and(|bytes| bytes <= isize::MAX as i64);
        if !addressable {
            return Err(IrError::TooLarge {
                what: format!("a {dtype} store of shape {shape}"),
            });
        }
        let store = Store::new(shape, dtype);
        self.while_recording(|r| r.created(&store));
        Ok(store)
    }

    /// Creates a store holding `data` (row-major, `shape.volume()` values).
    pub fn store_from_vec<T: Element>(
        &self,
        shape: &[i64],
        data: Vec<T>,
    ) -> Result<Store, IrError> {
        self.refuse_replay(|| "an array was made from host data".into());
        let store = self.create_store(shape, T::DTYPE)?;
        check_count(&store, data.len(), store.shape())?;
        self.executor
            .initialize(&store.task_ref(), HostData::from_vec(data))?;
        Ok(store)
    }

    /// Checks `task` against its kind and the IR's rules, then hands it to the runtime.
    pub fn submit(&self, task: IndexTask) -> Result<(), IrError> {
        validate(&task)?;
        self.forward(task)
    }

    /// Hands a checked task to the runtime (and to an open recording).
    fn forward(&self, task: IndexTask) -> Result<(), IrError> {
        self.while_recording(|r| r.submitted(&task));
        self.submitted.fetch_add(1, Ordering::Relaxed);
        self.executor.execute(task)
    }

    fn recorder(&self) -> MutexGuard<'_, Option<Recorder>> {
        // A recorder is only ever replaced whole: one left by a panicking thread is usable.
        self.recorder.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the open recording, if there is one.
    fn while_recording(&self, f: impl FnOnce(&mut Recorder)) {
        if self.recording.load(Ordering::Acquire) {
            if let Some(recorder) = self.recorder().as_mut() {
                f(recorder);
            }
        }
    }

    /// Starts recording the tasks submitted through this context (and its clones) until
    /// [`Context::finish_recording`], for [`Context::replay`] with other stores in place of
    /// `inputs`. The tasks still run as usual. Fails if a recording is already open.
    pub fn start_recording(&self, inputs: &[View]) -> Result<(), IrError> {
        let mut recorder = self.recorder();
        if recorder.is_some() {
            return Err(IrError::NotReplayable {
                reason: "another recording is open on this context".into(),
            });
        }
        *recorder = Some(Recorder::new(inputs));
        self.recording.store(true, Ordering::Release);
        Ok(())
    }

    /// Whether a recording is open.
    pub fn is_recording(&self) -> bool {
        self.recording.load(Ordering::Acquire)
    }

    /// Closes the open recording; `outputs` are the views the recorded code produced, rebuilt
    /// over each replay's stores. Fails with [`IrError::NotReplayable`] (saying why) when the
    /// recorded tasks depend on more than their inputs' shapes, or when no recording is open.
    pub fn finish_recording(&self, outputs: &[View]) -> Result<Recording, IrError> {
        let recorder = self.recorder().take();
        self.recording.store(false, Ordering::Release);
        match recorder {
            Some(recorder) => recorder.finish(outputs),
            None => Err(IrError::NotReplayable {
                reason: "no recording is open".into(),
            }),
        }
    }

    /// Runs `f` without recording what it submits or creates, the recording (if one is open)
    /// going on after it: for constants the recorded code builds on first use from host
    /// data (a matrix), which replays then hold as they hold any store from before, and
    /// whose caller makes sure a replay runs only while they are current.
    pub fn unrecorded<R>(&self, f: impl FnOnce() -> R) -> R {
        let was_recording = self.recording.swap(false, Ordering::AcqRel);
        let result = f();
        if was_recording {
            self.recording.store(true, Ordering::Release);
        }
        result
    }

    /// Marks the open recording, if any, unreplayable: for a library whose tasks depend on
    /// state of its own (a counter, a random stream) that a replay would not advance.
    pub fn refuse_replay(&self, reason: impl FnOnce() -> String) {
        self.while_recording(|r| r.refuse(reason));
    }

    /// Submits `recording`'s tasks again with `inputs` in place of the recorded inputs and
    /// fresh stores in place of those it created, and returns its outputs over them. The
    /// inputs must be views like the recorded ones (same boxes of stores of the same shapes
    /// and dtypes, sharing stores where they did); the tasks then pass validation exactly as
    /// the recorded ones did, so they are not checked again.
    pub fn replay(&self, recording: &Recording, inputs: &[View]) -> Result<Vec<View>, IrError> {
        let mut stores = ReplayStores::new(recording, inputs, |shape, dtype| {
            self.create_store(shape.as_slice(), dtype)
        })?;
        stores.submit_all(|task| self.forward(task))?;
        stores.outputs()
    }

    /// What buffered work still does with `view`'s store (see [`Executor::pending_use`]):
    /// a library keeps a small operation on the host when its operands need not wait.
    pub fn pending_use(&self, view: &View) -> PendingUse {
        self.executor.pending_use(&view.store().task_ref())
    }

    /// Runs every task submitted so far.
    pub fn flush_window(&self) -> Result<(), IrError> {
        self.executor.flush()
    }

    /// Reads a view back to the host (row-major), waiting for pending work.
    pub fn read<T: Element>(&self, view: &View) -> Result<Vec<T>, IrError> {
        self.refuse_replay(|| "a value was read back".into());
        let store = view.store();
        check_dtype::<T>(store)?;
        let data = self.executor.read(&store.task_ref(), view.bounds())?;
        data.into_vec::<T>().map_err(|other| IrError::HostData {
            store: store.id(),
            what: format!(
                "backend returned {} data for a {} store",
                other.dtype(),
                T::DTYPE
            ),
        })
    }

    /// Reads a view into `out` (row-major), which holds exactly the view's elements,
    /// waiting as [`Context::read`] does: one copy, into memory the caller owns.
    pub fn read_into<T: Element>(&self, view: &View, out: &mut [T]) -> Result<(), IrError> {
        self.refuse_replay(|| "a value was read back".into());
        let store = view.store();
        check_dtype::<T>(store)?;
        check_count(store, out.len(), view.shape())?;
        self.executor
            .read_into(&store.task_ref(), view.bounds(), bytes_of_mut(out))
    }

    /// The elements of `view`'s store, handed over in the host memory that holds them
    /// ([`Executor::take_host`]), when `view` is the whole store; `None` where the executor
    /// cannot, or `view` is a part of its store. The caller uses the store no more.
    pub fn take_host(&self, view: &View) -> Result<Option<HostBlock>, IrError> {
        self.refuse_replay(|| "a value was read back".into());
        if !view.is_whole_store() {
            return Ok(None);
        }
        self.executor.take_host(&view.store().task_ref())
    }

    /// Reads a 0-d store's (or one-element view's) single value.
    pub fn read_scalar<T: Element>(&self, view: &View) -> Result<T, IrError> {
        let values = self.read::<T>(view)?;
        match values.as_slice() {
            [v] => Ok(*v),
            _ => Err(IrError::HostData {
                store: view.store().id(),
                what: format!("read_scalar on a view of {} elements", values.len()),
            }),
        }
    }

    /// Overwrites a view with row-major `data`, ordered after pending work.
    pub fn write<T: Element>(&self, view: &View, data: Vec<T>) -> Result<(), IrError> {
        self.refuse_replay(|| "host data was written into an array".into());
        let store = view.store();
        check_dtype::<T>(store)?;
        check_count(store, data.len(), view.shape())?;
        self.executor
            .write(&store.task_ref(), view.bounds(), HostData::from_vec(data))
    }
}

/// Fails unless `given` host values fill a view of `shape` of `store`.
fn check_count(store: &Store, given: usize, shape: Shape) -> Result<(), IrError> {
    let expected = shape.volume() as usize;
    if given == expected {
        return Ok(());
    }
    Err(IrError::HostData {
        store: store.id(),
        what: format!("{given} values given for a view of shape {shape} ({expected} elements)"),
    })
}

fn check_dtype<T: Element>(store: &Store) -> Result<(), IrError> {
    if store.dtype() == T::DTYPE {
        return Ok(());
    }
    Err(IrError::HostData {
        store: store.id(),
        what: format!(
            "the store holds {} but {} was requested",
            store.dtype(),
            T::DTYPE
        ),
    })
}
