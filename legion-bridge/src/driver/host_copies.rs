//! Host copies: reading and writing part of a store on the host through an inline mapping
//! of its region, row by row in the mapped instance's layout.

use std::sync::Arc;

use diffuse_backend::memory::for_each_rect_row;
use diffuse_ir::{with_element_type, HostData, IrError, Rect, StoreRef, Tuple};

use super::Driver;
use crate::ffi;
use crate::geometry::{element_strides, raw_rect_ptr, FIELD};
use crate::shared::{legion_error, Shared};

impl Driver {
    /// Maps `store` inline with `privilege`, hands `f` the address of element `rect.lo`
    /// and the element strides, and unmaps. `writes_all`: `f` overwrites every element.
    fn with_mapping<R>(
        &mut self,
        store: &StoreRef,
        shared: &Arc<Shared>,
        rect: &Rect,
        writes_all: bool,
        privilege: ffi::legion_privilege_mode_t,
        f: impl FnOnce(*mut u8, &Tuple) -> R,
    ) -> Result<R, IrError> {
        self.release_dead();
        let (region, _) = self.region(store, shared, writes_all)?;
        let api = self.api;
        // SAFETY: as above; the mapping is released before returning.
        unsafe {
            let launcher = api.legion_inline_launcher_create_logical_region(
                region,
                privilege,
                ffi::legion_coherence_property_t_LEGION_EXCLUSIVE,
                region,
                0,
                false,
                0,
                0,
            );
            api.legion_inline_launcher_add_field(launcher, FIELD, true);
            let mapped = api.legion_inline_launcher_execute(self.runtime, self.ctx, launcher);
            api.legion_physical_region_wait_until_valid(mapped);
            let located = if rect.is_empty() {
                Ok((std::ptr::null_mut(), [0; diffuse_ir::MAX_DIMS]))
            } else {
                raw_rect_ptr(api, mapped, FIELD, rect)
            };
            let result = located.map(|(ptr, bytes)| {
                let strides = element_strides(&bytes, rect.dims(), store.dtype().size_bytes());
                f(ptr, &strides)
            });
            api.legion_runtime_unmap_region(self.runtime, self.ctx, mapped);
            api.legion_physical_region_destroy(mapped);
            api.legion_inline_launcher_destroy(launcher);
            if writes_all {
                // A recycled region's pending fill or reductions are discarded.
                self.traces.contents_materialized(region.tree_id);
            }
            (self.thread.synced)();
            result.map_err(|message| {
                legion_error(format!(
                    "mapping store {} on the host: {message}",
                    store.id()
                ))
            })
        }
    }

    /// Copies `rect` of `store` to the host, row-major.
    pub(crate) fn read(
        &mut self,
        store: &StoreRef,
        shared: &Arc<Shared>,
        rect: Rect,
    ) -> Result<HostData, IrError> {
        let nodes = self.nodes;
        if let Some(traffic) = &mut self.traffic {
            traffic.host_read(store.id(), rect, nodes);
            shared.counters.set_bytes_moved(traffic.moved());
        }
        self.with_mapping(
            store,
            shared,
            &rect,
            false,
            ffi::legion_privilege_mode_t_LEGION_READ_ONLY,
            |ptr, strides| {
                with_element_type!(store.dtype(), T => {
                    let mut out: Vec<T> = Vec::with_capacity(rect.volume().max(0) as usize);
                    visit_rows(&rect, strides, |offset, len| {
                        // SAFETY: the mapped instance holds `rect` at `ptr` with `strides`.
                        let row = unsafe { std::slice::from_raw_parts((ptr as *const T).offset(offset), len) };
                        out.extend_from_slice(row);
                    });
                    HostData::from_vec(out)
                })
            },
        )
    }

    /// Overwrites `rect` of `store` with row-major `data` (already checked to fit).
    pub(crate) fn write(
        &mut self,
        store: &StoreRef,
        shared: &Arc<Shared>,
        rect: Rect,
        data: HostData,
    ) -> Result<(), IrError> {
        let nodes = self.nodes;
        if let Some(traffic) = &mut self.traffic {
            traffic.host_write(store.id(), rect, nodes);
        }
        let whole = rect == store.bounds();
        let privilege = if whole {
            ffi::legion_privilege_mode_t_LEGION_WRITE_DISCARD
        } else {
            ffi::legion_privilege_mode_t_LEGION_READ_WRITE
        };
        with_element_type!(store.dtype(), T => {
            let values: Vec<T> = data.into_vec::<T>().map_err(|d| IrError::HostData {
                store: store.id(),
                what: format!("{} data written to a {} store", d.dtype(), store.dtype()),
            })?;
            self.with_mapping(store, shared, &rect, whole, privilege, |ptr, strides| {
                let mut consumed = 0usize;
                visit_rows(&rect, strides, |offset, len| {
                    // SAFETY: as in `read`; the mapping is exclusive to this thread.
                    let row = unsafe { std::slice::from_raw_parts_mut((ptr as *mut T).offset(offset), len) };
                    row.copy_from_slice(&values[consumed..consumed + len]);
                    consumed += len;
                });
            })
        })
    }
}

/// Calls `f(element_offset, len)` for every row of `rect` (relative to `rect.lo`) in an
/// instance with element `strides`, rows in row-major order; element by element when the
/// innermost stride is not 1.
fn visit_rows(rect: &Rect, strides: &Tuple, mut f: impl FnMut(isize, usize)) {
    let dims = rect.dims();
    if dims == 0 {
        if !rect.is_empty() {
            f(0, 1);
        }
        return;
    }
    let local = Rect::from_shape(rect.extent());
    if strides[dims - 1] == 1 {
        for_each_rect_row(&local, strides, |start, _, len| f(start as isize, len));
    } else {
        for p in local.points() {
            let offset: i64 = (0..dims).map(|d| p[d] * strides[d]).sum();
            f(offset as isize, 1);
        }
    }
}
