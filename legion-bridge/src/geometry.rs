//! Diffuse's shapes, points and boxes as Legion's C structs, the per-dimension C calls
//! (Legion's C API has one function per dimension count) behind one function each, and the
//! one field every region keeps its store's elements in. Launch points are numbered through
//! here, in the one numbering of launch points ([`row_major_index`]).
//!
//! Diffuse boxes are half-open (`lo..hi`); Legion's are inclusive. A 0-d store or launch is
//! Legion's 1-d box `[0, 0]`: Legion has no 0-d index spaces.

use diffuse_ir::{Point, Rect, Shape, Tuple, MAX_DIMS};
use diffuse_machine::row_major_index;

use crate::ffi;

/// The field every region holds its store's elements in.
pub(crate) const FIELD: ffi::legion_field_id_t = 1;

/// Dimensions Legion uses for a diffuse object of `dims` dimensions.
pub(crate) fn legion_dims(dims: usize) -> usize {
    dims.max(1)
}

/// The number of Legion's point `coords` of a launch of shape `launch` in the one numbering
/// of launch points (the order of `LaunchPlacement::processors`); a 0-d launch's one point
/// is Legion's 1-d point 0. `None` outside the launch.
pub(crate) fn launch_point_index(coords: &[i64], launch: &Shape) -> Option<usize> {
    // The coordinate Legion adds to a 0-d launch is not one of diffuse's.
    let index = row_major_index(coords.get(..launch.dims())?, launch.as_slice())?;
    usize::try_from(index).ok()
}

/// The number of `point` among the points of Legion's box `lo..=hi` (inclusive bounds, as a
/// sharding functor sees a launch's domain) in the one numbering of launch points. `None`
/// outside the box or past diffuse's [`MAX_DIMS`] dimensions.
pub(crate) fn domain_point_index(point: &[i64], lo: &[i64], hi: &[i64]) -> Option<u64> {
    let dims = point.len();
    if dims > MAX_DIMS || lo.len() != dims || hi.len() != dims {
        return None;
    }
    let (mut offset, mut extents) = ([0i64; MAX_DIMS], [0i64; MAX_DIMS]);
    for d in 0..dims {
        offset[d] = point[d].checked_sub(lo[d])?;
        extents[d] = hi[d].checked_sub(lo[d])?.checked_add(1)?;
    }
    row_major_index(&offset[..dims], &extents[..dims])
}

/// The Legion domain of the half-open box `rect` (a 0-d box is `[0, 0]`).
pub(crate) fn domain(rect: &Rect) -> ffi::legion_domain_t {
    let dims = legion_dims(rect.dims());
    let mut d = ffi::legion_domain_t {
        dim: dims as i32,
        ..Default::default()
    };
    for k in 0..dims {
        let (lo, hi) = if rect.dims() == 0 {
            (0, 0)
        } else {
            (rect.lo[k], rect.hi[k] - 1)
        };
        d.rect_data[k] = lo;
        d.rect_data[dims + k] = hi;
    }
    d
}

/// The Legion domain of a whole store or launch of extent `shape`.
pub(crate) fn shape_domain(shape: Shape) -> ffi::legion_domain_t {
    domain(&Rect::from_shape(shape))
}

/// The Legion domain point of `p` (a 0-d point is `(0)`).
pub(crate) fn domain_point(p: &Point) -> ffi::legion_domain_point_t {
    let mut d = ffi::legion_domain_point_t {
        dim: legion_dims(p.dims()) as i32,
        ..Default::default()
    };
    for (k, &x) in p.as_slice().iter().enumerate() {
        d.point_data[k] = x;
    }
    d
}

/// The diffuse point of `dims` dimensions that Legion's domain point `d` stands for.
pub(crate) fn point_of(d: &ffi::legion_domain_point_t, dims: usize) -> Point {
    let mut p = Tuple::splat(dims, 0);
    let given = (d.dim.max(0) as usize).min(MAX_DIMS);
    for (k, slot) in p.as_mut_slice().iter_mut().enumerate().take(given) {
        *slot = d.point_data[k];
    }
    p
}

/// The address of element `rect.lo` of field `fid` in a mapped physical region and the
/// byte strides of its instance, for a non-empty `rect` of a store of `store_dims`
/// dimensions; an error if the instance does not hold all of `rect` contiguously
/// addressable.
///
/// # Safety
/// `region` must be a mapped physical region whose instance holds `fid` over `rect`.
pub(crate) unsafe fn raw_rect_ptr(
    api: &ffi::LegionApi,
    region: ffi::legion_physical_region_t,
    fid: ffi::legion_field_id_t,
    rect: &Rect,
) -> Result<(*mut u8, [i64; MAX_DIMS]), String> {
    let dims = legion_dims(rect.dims());
    let d = domain(rect);
    let mut strides = [0i64; MAX_DIMS];
    let mut offsets = [ffi::legion_byte_offset_t::default(); MAX_DIMS];
    let mut got = [0i64; 2 * MAX_DIMS];
    let ptr = raw_rect_ptr_dims(api, region, fid, dims, &d, &mut got, &mut offsets);
    if ptr.is_null() {
        return Err(format!("Legion gave no direct pointer to box {rect}"));
    }
    if got[..2 * dims] != d.rect_data[..2 * dims] {
        return Err(format!(
            "the instance holds only part of box {rect} (Legion answered {:?})",
            &got[..2 * dims]
        ));
    }
    for k in 0..dims {
        strides[k] = i64::from(offsets[k].offset);
    }
    Ok((ptr as *mut u8, strides))
}

macro_rules! raw_ptr_case {
    ($api:ident, $region:ident, $fid:ident, $d:ident, $got:ident, $offsets:ident,
     $acc:ident, $rect_t:ident, $raw:ident, $destroy:ident, $n:literal) => {{
        let acc = $api.$acc($region, $fid);
        let mut r = ffi::$rect_t::default();
        let mut sub = ffi::$rect_t::default();
        for k in 0..$n {
            r.lo.x[k] = $d.rect_data[k];
            r.hi.x[k] = $d.rect_data[$n + k];
        }
        let ptr = $api.$raw(acc, r, &mut sub, $offsets.as_mut_ptr());
        for k in 0..$n {
            $got[k] = sub.lo.x[k];
            $got[$n + k] = sub.hi.x[k];
        }
        $api.$destroy(acc);
        ptr
    }};
}

unsafe fn raw_rect_ptr_dims(
    api: &ffi::LegionApi,
    region: ffi::legion_physical_region_t,
    fid: ffi::legion_field_id_t,
    dims: usize,
    d: &ffi::legion_domain_t,
    got: &mut [i64; 2 * MAX_DIMS],
    offsets: &mut [ffi::legion_byte_offset_t; MAX_DIMS],
) -> *mut std::ffi::c_void {
    match dims {
        1 => raw_ptr_case!(
            api,
            region,
            fid,
            d,
            got,
            offsets,
            legion_physical_region_get_field_accessor_array_1d,
            legion_rect_1d_t,
            legion_accessor_array_1d_raw_rect_ptr,
            legion_accessor_array_1d_destroy,
            1
        ),
        2 => raw_ptr_case!(
            api,
            region,
            fid,
            d,
            got,
            offsets,
            legion_physical_region_get_field_accessor_array_2d,
            legion_rect_2d_t,
            legion_accessor_array_2d_raw_rect_ptr,
            legion_accessor_array_2d_destroy,
            2
        ),
        3 => raw_ptr_case!(
            api,
            region,
            fid,
            d,
            got,
            offsets,
            legion_physical_region_get_field_accessor_array_3d,
            legion_rect_3d_t,
            legion_accessor_array_3d_raw_rect_ptr,
            legion_accessor_array_3d_destroy,
            3
        ),
        4 => raw_ptr_case!(
            api,
            region,
            fid,
            d,
            got,
            offsets,
            legion_physical_region_get_field_accessor_array_4d,
            legion_rect_4d_t,
            legion_accessor_array_4d_raw_rect_ptr,
            legion_accessor_array_4d_destroy,
            4
        ),
        5 => raw_ptr_case!(
            api,
            region,
            fid,
            d,
            got,
            offsets,
            legion_physical_region_get_field_accessor_array_5d,
            legion_rect_5d_t,
            legion_accessor_array_5d_raw_rect_ptr,
            legion_accessor_array_5d_destroy,
            5
        ),
        _ => raw_ptr_case!(
            api,
            region,
            fid,
            d,
            got,
            offsets,
            legion_physical_region_get_field_accessor_array_6d,
            legion_rect_6d_t,
            legion_accessor_array_6d_raw_rect_ptr,
            legion_accessor_array_6d_destroy,
            6
        ),
    }
}

/// Element strides (diffuse's dimensions) from the byte strides of an instance, for a store
/// of `dims` dimensions and elements of `size` bytes.
pub(crate) fn element_strides(bytes: &[i64; MAX_DIMS], dims: usize, size: usize) -> Tuple {
    let mut t = Tuple::splat(dims, 0);
    for (k, s) in t.as_mut_slice().iter_mut().enumerate() {
        *s = bytes[k] / size as i64;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_points_are_numbered_in_the_order_a_launch_box_lists_them() {
        for extents in [&[7][..], &[3, 4], &[2, 3, 2]] {
            let shape = Tuple::shape(extents).unwrap();
            for (i, p) in Rect::from_shape(shape).points().enumerate() {
                assert_eq!(launch_point_index(p.as_slice(), &shape), Some(i), "{p}");
            }
            assert_eq!(launch_point_index(extents, &shape), None);
        }
    }

    #[test]
    fn the_one_point_of_a_0d_launch_is_legions_point_0() {
        let shape = Tuple::shape(&[]).unwrap();
        assert_eq!(launch_point_index(&[0], &shape), Some(0));
        assert_eq!(launch_point_index(&[], &shape), Some(0));
    }

    #[test]
    fn domain_points_are_numbered_from_the_domains_low_corner() {
        let rect = Rect {
            lo: Tuple::new(&[2, -1, 3]).unwrap(),
            hi: Tuple::new(&[4, 2, 5]).unwrap(),
        };
        let lo = rect.lo.as_slice();
        let hi: Vec<i64> = rect.hi.as_slice().iter().map(|h| h - 1).collect();
        for (i, p) in rect.points().enumerate() {
            assert_eq!(
                domain_point_index(p.as_slice(), lo, &hi),
                Some(i as u64),
                "{p}"
            );
        }
        assert_eq!(domain_point_index(&[1, 0, 3], lo, &hi), None);
        assert_eq!(domain_point_index(&[2, 0], lo, &hi), None);
    }
}
