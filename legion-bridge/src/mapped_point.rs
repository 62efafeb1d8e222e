//! What every point task body shares (the CPU point, the GPU point and the fold): one point
//! of a launch with the regions Legion mapped for it, locating its arguments in those
//! instances, the new stores it zeroes itself, and its failures named after the point.

use diffuse_backend::memory::for_each_rect_row;
use diffuse_backend::point::PointStores;
use diffuse_backend::{LaunchPlan, Slot};
use diffuse_ir::{DType, KernelError, Point, Rect, StoreRef, Tuple};

use crate::ffi;
use crate::geometry::{element_strides, raw_rect_ptr, FIELD};
use crate::launch::LaunchEntry;

/// One point task: a point of a launch (a fold's one point stands for its launch's first
/// point) and the regions Legion mapped for it, in requirement order.
pub(crate) struct MappedPoint<'a> {
    /// Legion's API.
    pub(crate) api: &'a ffi::LegionApi,
    /// The launch the point belongs to.
    pub(crate) entry: &'a LaunchEntry,
    /// The launch point.
    pub(crate) p: Point,
    /// The physical regions of the launch's requirements.
    pub(crate) regions: &'a [ffi::legion_physical_region_t],
}

/// Where one store argument's sub-store is in its mapped instance.
pub(crate) struct Located {
    /// The sub-store at this point.
    pub(crate) rect: Rect,
    /// Address of `rect.lo`.
    pub(crate) ptr: *mut u8,
    /// Element strides of the instance.
    pub(crate) strides: Tuple,
    /// Element size in bytes.
    pub(crate) size: usize,
}

/// The store arguments of one point, located in Legion's instances (addresses in the
/// instances' memory: device addresses for a GPU's framebuffer).
pub(crate) struct Instances {
    args: Vec<Option<Located>>,
}

// SAFETY: the instances are mapped for the point task's whole duration and accessed only
// by it (and Legion's guarantees on requirements exclude conflicting writers).
unsafe impl Sync for Instances {}

/// What a requirement's region holds, for locating it: its name in messages and its element
/// type.
pub(crate) struct Held {
    /// "store 12", or "the partials of store 12".
    pub(crate) name: String,
    /// The element type.
    pub(crate) dtype: DType,
}

impl Held {
    /// What the region of a requirement on `store` itself holds.
    pub(crate) fn whole(store: &StoreRef) -> Held {
        Held {
            name: format!("store {}", store.id()),
            dtype: store.dtype(),
        }
    }
}

impl Located {
    /// The address of element `p`.
    ///
    /// # Safety
    /// `p` must lie inside `self.rect`, so that the address is inside the instance.
    pub(crate) unsafe fn address(&self, p: &Point) -> *mut u8 {
        let offset: i64 = (0..p.dims())
            .map(|d| (p[d] - self.rect.lo[d]) * self.strides[d])
            .sum();
        // SAFETY: the caller's contract.
        unsafe { self.ptr.offset(offset as isize * self.size as isize) }
    }
}

impl PointStores for Instances {
    fn locate(&self, arg: usize, rect: &Rect) -> Result<(*mut u8, Tuple), String> {
        let Some(Some(at)) = self.args.get(arg) else {
            return Err(format!("argument {arg} has no mapped instance"));
        };
        // SAFETY: `rect` lies inside the located sub-store (the executor's contract).
        Ok((unsafe { at.address(&rect.lo) }, at.strides))
    }
}

impl MappedPoint<'_> {
    /// The launch plan the point runs.
    pub(crate) fn plan(&self) -> &LaunchPlan {
        &self.entry.plan
    }

    /// The error of this point failing for `reason`.
    pub(crate) fn fail(&self, reason: String) -> KernelError {
        KernelError {
            kind: self.plan().template().name().to_string(),
            point: self.p,
            reason,
        }
    }

    /// Where `rect` of what `held` describes lies in the region mapped for requirement `r`;
    /// an error unless the instance holds it in C order (diffuse's kernels need the last
    /// dimension contiguous).
    pub(crate) fn locate(&self, r: usize, held: &Held, rect: Rect) -> Result<Located, KernelError> {
        let region = *self
            .regions
            .get(r)
            .ok_or_else(|| self.fail(format!("Legion mapped no region for requirement {r}")))?;
        // SAFETY: requirement `r` names the region with field FIELD, and `rect` is inside the
        // region it maps (the point's sub-store or row, or the whole region of a whole-region
        // requirement).
        let (ptr, bytes) = unsafe { raw_rect_ptr(self.api, region, FIELD, &rect) }
            .map_err(|m| self.fail(format!("{}: {m}", held.name)))?;
        let size = held.dtype.size_bytes();
        let strides = element_strides(&bytes, rect.dims(), size);
        if rect.dims() > 0 && strides[rect.dims() - 1] != 1 && rect.extent()[rect.dims() - 1] > 1 {
            return Err(self.fail(format!(
                "the instance of {} is not in C order (strides {strides}); diffuse's \
                 kernels need the last dimension contiguous",
                held.name
            )));
        }
        Ok(Located {
            rect,
            ptr,
            strides,
            size,
        })
    }

    /// Where each store argument of the point lies in the mapped regions (`None` for
    /// temporaries, empty sub-stores and arguments that write rows of partials, which are
    /// located by the point's own row there, `crate::partials::locate_row`).
    pub(crate) fn instances(&self) -> Result<Instances, KernelError> {
        let (entry, plan) = (self.entry, self.plan());
        let mut args = Vec::with_capacity(plan.template().args().len());
        for (i, layout) in plan.template().args().iter().enumerate() {
            let located = match (layout.slot, entry.arg_requirement[i]) {
                (Slot::Store(_), Some(r)) if !entry.writes_partials(i) => {
                    let arg = plan.arg(i);
                    let rect = arg.partition.sub_store(arg.store.shape(), &self.p);
                    (!rect.is_empty())
                        .then(|| self.locate(r, &Held::whole(&arg.store), rect))
                        .transpose()?
                }
                _ => None,
            };
            args.push(located);
        }
        Ok(Instances { args })
    }

    /// The rows of every region the point zeroes before it runs ([`Requirement::zeroed`]):
    /// each row's address (in the instance's memory) and length in bytes.
    ///
    /// [`Requirement::zeroed`]: crate::launch::Requirement::zeroed
    pub(crate) fn rows_to_zero(&self) -> Result<Vec<(*mut u8, usize)>, KernelError> {
        let mut rows = Vec::new();
        for (r, req) in self.entry.requirements.iter().enumerate() {
            let store = self.plan().store(req.slot);
            // From the origin: the rows' offsets below are the instance's own.
            let whole = Rect::from_shape(store.shape());
            if !req.zeroed || whole.is_empty() {
                continue;
            }
            let at = self.locate(r, &Held::whole(store), whole)?;
            for_each_rect_row(&at.rect, &at.strides, |start, _, len| {
                // SAFETY: every row of the whole store lies inside its mapped instance.
                let row = unsafe { at.ptr.add(start * at.size) };
                rows.push((row, len * at.size));
            });
        }
        Ok(rows)
    }

    /// Zeroes the regions a point on a CPU zeroes before it runs ([`Self::rows_to_zero`]).
    pub(crate) fn zero_on_host(&self) -> Result<(), KernelError> {
        for (row, bytes) in self.rows_to_zero()? {
            // SAFETY: a row of a region this point holds with write privilege, in host
            // memory (a CPU point's instances are in memory its processor addresses).
            unsafe { std::ptr::write_bytes(row, 0, bytes) };
        }
        Ok(())
    }
}
