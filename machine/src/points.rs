//! The one numbering of launch points: mappers hand out processors per point in this order
//! and backends look points up in it, so every side agrees on which point is which.

/// The row-major number of `point` in a launch of `extents` (coordinates from 0; the last
/// dimension varies fastest): `0` for the first point, the launch's volume minus one for
/// the last, `0` for the one point of a 0-d launch. `None` when `point` has another number
/// of dimensions than `extents`, lies outside them, or its number does not fit in a `u64`.
pub fn row_major_index(point: &[i64], extents: &[i64]) -> Option<u64> {
    if point.len() != extents.len() {
        return None;
    }
    point
        .iter()
        .zip(extents)
        .try_fold(0u64, |index, (&x, &extent)| {
            if x < 0 || x >= extent {
                return None;
            }
            // Both are non-negative here.
            index
                .checked_mul(extent.unsigned_abs())?
                .checked_add(x.unsigned_abs())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every point of `extents`, in row-major order (the last coordinate counting fastest).
    fn points_in_order(extents: &[i64]) -> Vec<Vec<i64>> {
        let mut points = vec![vec![]];
        for &extent in extents {
            points = points
                .into_iter()
                .flat_map(|p| {
                    (0..extent).map(move |x| {
                        let mut next = p.clone();
                        next.push(x);
                        next
                    })
                })
                .collect();
        }
        points
    }

    #[test]
    fn points_are_numbered_in_row_major_order_from_zero() {
        for extents in [&[][..], &[5], &[3, 4], &[2, 1, 3], &[2, 3, 2, 2]] {
            for (i, point) in points_in_order(extents).iter().enumerate() {
                assert_eq!(
                    row_major_index(point, extents),
                    Some(i as u64),
                    "{point:?} in {extents:?}"
                );
            }
        }
    }

    #[test]
    fn the_last_dimension_varies_fastest() {
        assert_eq!(row_major_index(&[0, 1], &[2, 8]), Some(1));
        assert_eq!(row_major_index(&[1, 0], &[2, 8]), Some(8));
    }

    #[test]
    fn points_outside_the_extents_have_no_number() {
        assert_eq!(row_major_index(&[2, 0], &[2, 8]), None);
        assert_eq!(row_major_index(&[0, 8], &[2, 8]), None);
        assert_eq!(row_major_index(&[-1, 0], &[2, 8]), None);
        assert_eq!(row_major_index(&[0], &[0]), None);
    }

    #[test]
    fn points_of_another_rank_have_no_number() {
        assert_eq!(row_major_index(&[0], &[2, 8]), None);
        assert_eq!(row_major_index(&[0, 0], &[]), None);
    }

    #[test]
    fn numbers_past_u64_have_no_number() {
        let big = i64::MAX;
        assert_eq!(row_major_index(&[0, 0, 0], &[big, big, big]), Some(0));
        assert_eq!(row_major_index(&[1, 0, 0], &[big, big, big]), None);
        assert_eq!(
            row_major_index(&[1, 0], &[2, big]),
            Some(big.unsigned_abs())
        );
    }
}
