//! Choosing the launch domain (processor grid) for an operation on an array.
//!
//! Every point of a launch gets one block of the array, so the grid decides both the work per
//! processor and how much data crosses block edges. Like Mapple's `decompose`, the grid follows
//! the array's shape: among all grids with at most `procs` points that give every point a
//! non-empty block, pick the one with the smallest largest block (balanced work), then the
//! smallest block perimeter (least halo), then the most points, and finally the one that
//! splits the outer dimensions first (row-major blocks that are whole rows stay contiguous).
//! A small array gets fewer points than there are processors: at most one per `min_block`
//! elements (at least one), since a point's fixed cost outweighs splitting a small block.

use diffuse_ir::{Shape, Tuple, MAX_DIMS};

/// Picks launch domains for arrays on a machine with a fixed number of processors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partitioner {
    procs: usize,
    min_block: usize,
}

/// How good a candidate grid is; smaller is better (compared lexicographically).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct Cost {
    largest_block: i64,
    block_perimeter: i64,
    unused_points: usize,
    /// The grid's extents innermost first: smaller means the split is further out.
    inner_splits: [i64; MAX_DIMS],
}

impl Partitioner {
    /// A partitioner for `procs` processors (at least 1) that gives every processor a point
    /// whenever the array has that many elements.
    pub fn new(procs: usize) -> Self {
        Partitioner {
            procs: procs.max(1),
            min_block: 1,
        }
    }

    /// This partitioner giving an array at most one point per `min_block` elements (at
    /// least one point; `0` counts as 1).
    pub fn with_min_block(self, min_block: usize) -> Self {
        Partitioner {
            min_block: min_block.max(1),
            ..self
        }
    }

    /// The number of processors it plans for.
    pub fn procs(&self) -> usize {
        self.procs
    }

    /// The fewest elements it gives a point of its own.
    pub fn min_block(&self) -> usize {
        self.min_block
    }

    /// How many points an array of `volume` elements may get: one per processor, but at most
    /// one per `min_block` elements, and at least one.
    fn points_for(&self, volume: i64) -> usize {
        let worth = usize::try_from(volume).unwrap_or(usize::MAX) / self.min_block;
        self.procs.min(worth).max(1)
    }

    /// A launch domain cutting an array of `shape` (at least 1-d) into blocks of whole
    /// leading rows, `[blocks, 1, ..., 1]`: as many blocks as points [`Partitioner::launch_for`]
    /// would use, at most one per row, every block non-empty. Each block is then a
    /// contiguous run of the array's row-major order (what compaction needs), and a band
    /// of it that a point may update in place (what a scatter needs).
    pub fn row_blocks(&self, shape: Shape) -> Shape {
        let mut launch = Tuple::splat(shape.dims(), 1);
        if shape.dims() == 0 || shape.volume() == 0 {
            return launch;
        }
        let rows = shape[0];
        let points = i64::try_from(self.points_for(shape.volume())).unwrap_or(i64::MAX);
        let blocks = (1..=points.min(rows))
            .rev()
            .find(|&l| blocks_fit(rows, l))
            .unwrap_or(1);
        launch.as_mut_slice()[0] = blocks;
        launch
    }

    /// The launch domain for an array of `shape`: one extent per array dimension, product at
    /// most `procs` (and at most one point per `min_block` elements), every block non-empty.
    /// A 0-d array (or one with no elements) gets a single point.
    pub fn launch_for(&self, shape: Shape) -> Shape {
        let dims = shape.dims();
        if dims == 0 || shape.volume() == 0 {
            return Tuple::splat(dims, 1);
        }
        let procs = self.points_for(shape.volume());
        if procs == 1 {
            // The only grid of one point.
            return Tuple::splat(dims, 1);
        }
        let mut best: Option<(Cost, Tuple)> = None;
        let mut grid = Tuple::splat(dims, 1);
        search(procs, shape, &mut grid, 0, 1, &mut best);
        best.map_or(Tuple::splat(dims, 1), |(_, g)| g)
    }
}

/// Enumerates grids over at most `procs` points dimension by dimension, keeping the cheapest
/// complete one.
fn search(
    procs: usize,
    shape: Shape,
    grid: &mut Tuple,
    d: usize,
    points: usize,
    best: &mut Option<(Cost, Tuple)>,
) {
    if d == shape.dims() {
        let cost = cost(procs, shape, grid, points);
        if best.as_ref().is_none_or(|(c, _)| cost < *c) {
            *best = Some((cost, *grid));
        }
        return;
    }
    let max_here = (procs / points).min(shape[d] as usize).max(1);
    for l in 1..=max_here {
        if !blocks_fit(shape[d], l as i64) {
            continue;
        }
        grid.as_mut_slice()[d] = l as i64;
        search(procs, shape, grid, d + 1, points * l, best);
    }
    grid.as_mut_slice()[d] = 1;
}

/// The cost of `grid` (`points` points of the `procs` available) for an array of `shape`.
fn cost(procs: usize, shape: Shape, grid: &Tuple, points: usize) -> Cost {
    let block = shape.zip_with(grid, ceil_div);
    let mut inner_splits = [0; MAX_DIMS];
    for (slot, &l) in inner_splits.iter_mut().zip(grid.as_slice().iter().rev()) {
        *slot = l;
    }
    Cost {
        largest_block: block.as_slice().iter().product(),
        block_perimeter: block.as_slice().iter().sum(),
        unused_points: procs - points,
        inner_splits,
    }
}

/// `ceil(n / l)` for positive `l`.
fn ceil_div(n: i64, l: i64) -> i64 {
    n / l + i64::from(n % l != 0)
}

/// True when blocking `n` elements over `l` points with blocks of `ceil(n / l)` leaves no
/// point without elements (the last block starts before `n`).
pub fn blocks_fit(n: i64, l: i64) -> bool {
    l >= 1 && n >= 1 && ceil_div(n, l) * (l - 1) < n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(procs: usize, shape: &[i64]) -> Vec<i64> {
        let s = Tuple::shape(shape).unwrap();
        Partitioner::new(procs).launch_for(s).as_slice().to_vec()
    }

    #[test]
    fn grids_follow_the_array_shape() {
        assert_eq!(launch(4, &[4096, 4096]), vec![2, 2]);
        // A tie between row and column bands goes to row bands (contiguous in memory).
        assert_eq!(launch(2, &[4096, 4096]), vec![2, 1]);
        assert_eq!(launch(4, &[1 << 20, 8]), vec![4, 1]);
        assert_eq!(launch(4, &[8, 1 << 20]), vec![1, 4]);
        let g = launch(6, &[4096, 4096]);
        assert_eq!(g[0] * g[1], 6);
        assert_eq!(launch(2, &[10_000_000]), vec![2]);
        // Equal block volumes everywhere: the smaller perimeter wins, the short dim stays whole.
        let g = launch(8, &[1000, 1000, 10]);
        assert_eq!((g[0] * g[1], g[2]), (8, 1));
        assert!(g[0] == 2 || g[0] == 4, "{g:?}");
    }

    #[test]
    fn small_and_degenerate_arrays_get_fitting_grids() {
        assert_eq!(launch(4, &[5]), vec![3]);
        assert_eq!(launch(4, &[1]), vec![1]);
        assert_eq!(launch(4, &[]), Vec::<i64>::new());
        assert_eq!(launch(4, &[0, 7]), vec![1, 1]);
        assert_eq!(launch(1, &[4096, 4096]), vec![1, 1]);
    }

    #[test]
    fn small_arrays_get_at_most_one_point_per_min_block() {
        let with = |min_block: usize, shape: &[i64]| {
            let p = Partitioner::new(4).with_min_block(min_block);
            p.launch_for(Tuple::shape(shape).unwrap())
                .as_slice()
                .to_vec()
        };
        // 4096 elements: one point per 1024, so all four; per 2048, two; per 16384, one.
        assert_eq!(with(1024, &[64, 64]), vec![2, 2]);
        assert_eq!(with(2048, &[64, 64]), vec![2, 1]);
        assert_eq!(with(16384, &[64, 64]), vec![1, 1]);
        assert_eq!(with(16384, &[100]), vec![1]);
        // 40000 elements per 16384: two points; large arrays are split over every processor.
        assert_eq!(with(16384, &[40000]), vec![2]);
        assert_eq!(with(16384, &[1 << 20]), vec![4]);
        assert_eq!(with(0, &[8]), vec![4]);
    }

    #[test]
    fn row_blocks_split_only_the_first_dimension() {
        let rows = |procs: usize, shape: &[i64]| {
            Partitioner::new(procs)
                .row_blocks(Tuple::shape(shape).unwrap())
                .as_slice()
                .to_vec()
        };
        assert_eq!(rows(4, &[8, 100]), vec![4, 1]);
        assert_eq!(rows(4, &[3, 100, 7]), vec![3, 1, 1]);
        // 5 rows over 4 blocks would leave one empty: 3 blocks of 2, 2, 1 rows.
        assert_eq!(rows(4, &[5]), vec![3]);
        assert_eq!(rows(4, &[0, 3]), vec![1, 1]);
        assert_eq!(rows(4, &[]), Vec::<i64>::new());
        let small = Partitioner::new(4).with_min_block(1 << 14);
        assert_eq!(
            small
                .row_blocks(Tuple::shape(&[64, 64]).unwrap())
                .as_slice(),
            &[1, 1]
        );
    }

    proptest::proptest! {
        /// The chosen grid gives every point a non-empty block, uses at most `procs` points,
        /// and no grid in the whole box `[1, procs]^dims` has a smaller largest block.
        #[test]
        fn chosen_grid_is_valid_and_balanced(
            shape in proptest::collection::vec(1i64..=50, 1..=3),
            procs in 1usize..=12,
        ) {
            let g = launch(procs, &shape);
            let points: i64 = g.iter().product();
            proptest::prop_assert!(points as usize <= procs);
            for (d, &l) in g.iter().enumerate() {
                let n = shape[d];
                let nonempty = (0..l).all(|c| c * ceil_div(n, l) < n);
                proptest::prop_assert!(nonempty, "dim {} of {:?}: {:?}", d, shape, g);
            }
            let largest = |grid: &[i64]| -> i64 {
                grid.iter().zip(&shape).map(|(&l, &n)| ceil_div(n, l)).product()
            };
            let mut best = i64::MAX;
            let total = procs.pow(shape.len() as u32);
            for code in 0..total {
                let grid: Vec<i64> = (0..shape.len())
                    .map(|d| (code / procs.pow(d as u32) % procs) as i64 + 1)
                    .collect();
                let fits = grid.iter().zip(&shape).all(|(&l, &n)| {
                    l <= n && (0..l).all(|c| c * ceil_div(n, l) < n)
                });
                if fits && grid.iter().product::<i64>() as usize <= procs {
                    best = best.min(largest(&grid));
                }
            }
            proptest::prop_assert_eq!(largest(&g), best, "{:?} for {:?} on {}", g, shape, procs);
        }
    }
}
