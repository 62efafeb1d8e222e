//! Partitions and functors: the index partition of each (shape, partition, color box),
//! cached on the shape's index space, where a region requirement points through it, the one
//! projection functor for non-identity projections, and the sharding functors that give a
//! replicated run's launch points to nodes.

use std::ffi::CString;

use diffuse_ir::{Partition, PartitionKind, ProjComponent, Projection, Rect, Shape, Tuple};

use super::Driver;
use crate::ffi;
use crate::geometry::{domain, domain_point};

/// The first sharding functor id diffuse registers (ids below are left to Legion and
/// libraries loaded beside diffuse).
const FIRST_SHARDING_ID: u32 = 7_000;

impl Driver {
    /// Where a requirement on `region` (of `shape`) through `partition` points in a launch
    /// over `launch`: the whole region (`Replicate`, 0-d stores), or a logical partition of
    /// it with the projection from launch points to its colors (none for the identity).
    pub(super) fn target(
        &mut self,
        region: ffi::legion_logical_region_t,
        shape: Shape,
        partition: &Partition,
        launch: Shape,
    ) -> Target {
        let (colors, tiling) = match partition.kind() {
            _ if shape.dims() == 0 => return Target::Whole,
            PartitionKind::Replicate => return Target::Whole,
            PartitionKind::Tiling(tiling) => (color_box(&tiling.projection, launch), Some(tiling)),
            // One color per launch point: the identity projection.
            PartitionKind::Image(_) => (Rect::from_shape(launch), None),
        };
        let ip = self.partition(shape, partition, colors);
        // SAFETY: the driver thread holds the top-level context; `region` is of `shape`.
        let lp = unsafe {
            self.api
                .legion_logical_partition_create(self.runtime, region, ip)
        };
        let projection = tiling
            .filter(|t| !is_identity(&t.projection, launch.dims()))
            .map(|t| (self.projection_functor(), encode(&t.projection)));
        Target::Tiles(lp, projection)
    }

    /// The index partition of stores of `shape` by the tiling `partition`, over the colors
    /// `colors`: a partition by restriction for a tiling of the whole store, by explicit
    /// tiles for a tiling of a view (clipped to it).
    fn partition(
        &mut self,
        shape: Shape,
        partition: &Partition,
        colors: Rect,
    ) -> ffi::legion_index_partition_t {
        let (api, rt, ctx) = (self.api, self.runtime, self.ctx);
        let space = self.index_space(shape);
        let parent = space.handle;
        *space
            .partitions
            .entry((partition.clone(), colors))
            .or_insert_with(|| {
                // SAFETY: as above.
                unsafe {
                    let color_space =
                        api.legion_index_space_create_domain(rt, ctx, domain(&colors));
                    match partition.kind() {
                        PartitionKind::Tiling(tiling) if tiling.clip.is_none() => {
                            let dims = shape.dims();
                            let mut transform = ffi::legion_domain_transform_t {
                                m: dims as i32,
                                n: dims as i32,
                                ..Default::default()
                            };
                            for k in 0..dims {
                                transform.matrix[k * dims + k] = tiling.tile[k];
                            }
                            // Color 0's tile; color c is it shifted by c * tile.
                            let extent = tiling.tile_rect(&Tuple::splat(dims, 0));
                            api.legion_index_partition_create_by_restriction(
                                rt,
                                ctx,
                                parent,
                                color_space,
                                transform,
                                domain(&extent),
                                ffi::legion_partition_kind_t_LEGION_DISJOINT_KIND,
                                u32::MAX,
                            )
                        }
                        kind => {
                            // Explicit boxes: a view's clipped tiles (disjoint), or an
                            // image's boxes (which may overlap unless found disjoint).
                            let disjoint = match kind {
                                PartitionKind::Image(image) => image.disjoint,
                                _ => true,
                            };
                            let mut points = Vec::new();
                            let mut boxes = Vec::new();
                            for color in colors.points() {
                                points.push(domain_point(&color));
                                let rect = match kind {
                                    PartitionKind::Tiling(t) => t
                                        .tile_rect(&color)
                                        .intersect(&partition.reachable_bounds(shape)),
                                    _ => partition.sub_store(shape, &color),
                                };
                                boxes.push(domain(&rect));
                            }
                            api.legion_index_partition_create_by_domain(
                                rt,
                                ctx,
                                parent,
                                points.as_mut_ptr(),
                                boxes.as_mut_ptr(),
                                points.len(),
                                color_space,
                                true,
                                if disjoint {
                                    ffi::legion_partition_kind_t_LEGION_DISJOINT_KIND
                                } else {
                                    ffi::legion_partition_kind_t_LEGION_COMPUTE_KIND
                                },
                                u32::MAX,
                            )
                        }
                    }
                }
            })
    }

    /// The projection functor that maps launch points to tile colors through the
    /// projection encoded in a requirement's projection arguments.
    fn projection_functor(&mut self) -> ffi::legion_projection_id_t {
        if let Some(id) = self.projection {
            return id;
        }
        let name = CString::new("diffuse").unwrap_or_default();
        // SAFETY: as above.
        let id = unsafe {
            let id = self.api.legion_runtime_generate_library_projection_ids(
                self.runtime,
                name.as_ptr(),
                1,
            );
            self.api
                .diffuse_legion_register_projection(self.runtime, id);
            id
        };
        self.projection = Some(id);
        id
    }

    /// The sharding functor that gives a launch's point number `i` (row-major) to node
    /// `nodes[i]`, registered on first use. Every process of a replicated run issues
    /// the same launches in the same order, so ids agree across processes.
    pub(super) fn sharding(&mut self, nodes: Vec<u32>) -> u32 {
        let nodes = if nodes.is_empty() { vec![0] } else { nodes };
        if let Some(&id) = self.shardings.get(&nodes) {
            return id;
        }
        let id = FIRST_SHARDING_ID + self.shardings.len() as u32;
        // SAFETY: the runtime is alive; Legion copies nothing but keeps the functor, which
        // owns a copy of `nodes`.
        unsafe {
            self.api
                .diffuse_legion_register_sharding(self.runtime, id, nodes.as_ptr(), nodes.len())
        };
        self.shardings.insert(nodes, id);
        id
    }
}

/// Where a requirement points: the whole region, or a logical partition with the
/// projection functor and encoded projection (none for the identity).
pub(super) enum Target {
    Whole,
    Tiles(
        ffi::legion_logical_partition_t,
        Option<(ffi::legion_projection_id_t, Vec<i64>)>,
    ),
}

/// The colors a projection reaches over `launch`: per store dimension, the launch
/// dimension's range or the constant.
fn color_box(projection: &Projection, launch: Shape) -> Rect {
    let comps = projection.components();
    let mut lo = Tuple::splat(comps.len(), 0);
    let mut hi = Tuple::splat(comps.len(), 0);
    for (k, c) in comps.iter().enumerate() {
        let (l, h) = match *c {
            ProjComponent::Dim(d) => (0, launch[d]),
            ProjComponent::Const(v) => (v, v + 1),
        };
        lo.as_mut_slice()[k] = l;
        hi.as_mut_slice()[k] = h;
    }
    Rect { lo, hi }
}

/// True when the projection maps every point of a `launch_dims`-d launch to itself.
fn is_identity(projection: &Projection, launch_dims: usize) -> bool {
    let comps = projection.components();
    launch_dims > 0
        && comps.len() == launch_dims
        && comps
            .iter()
            .enumerate()
            .all(|(k, c)| *c == ProjComponent::Dim(k))
}

/// A projection as projection arguments for the shim's functor: the component count, then
/// per component `(0, launch dim)` or `(1, constant)`.
fn encode(projection: &Projection) -> Vec<i64> {
    let comps = projection.components();
    let mut out = Vec::with_capacity(1 + 2 * comps.len());
    out.push(comps.len() as i64);
    for c in comps {
        match *c {
            ProjComponent::Dim(d) => out.extend([0, d as i64]),
            ProjComponent::Const(v) => out.extend([1, v]),
        }
    }
    out
}
