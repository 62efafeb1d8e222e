//! The sequential reference the properties compare against: a dense row-major array on a
//! `Vec`, with NumPy broadcasting, slicing by absolute ranges and broadcast assignment into a
//! region. Deliberately naive (index arithmetic per element) so that it is obviously right.

/// A dense row-major n-d array of `T` (0-d when `shape` is empty).
#[derive(Clone, Debug, PartialEq)]
pub struct Dense<T> {
    pub shape: Vec<usize>,
    pub data: Vec<T>,
}

/// The number of elements of `shape` (1 for 0-d).
pub fn volume(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Every multi-index of `shape` in row-major order.
pub fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let mut out = Vec::with_capacity(volume(shape));
    if volume(shape) == 0 {
        return out;
    }
    let mut idx = vec![0usize; shape.len()];
    loop {
        out.push(idx.clone());
        let mut d = shape.len();
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// NumPy's broadcast of two shapes (aligned from the right), or `None`.
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let ext = |s: &[usize], k: usize| {
        // Dimension k of the result, counted from the left of an n-d shape.
        (k + s.len()).checked_sub(n).map_or(1, |j| s[j])
    };
    (0..n)
        .map(|k| match (ext(a, k), ext(b, k)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

impl<T: Copy> Dense<T> {
    /// An array of `shape` holding `data` row-major.
    pub fn new(shape: Vec<usize>, data: Vec<T>) -> Self {
        assert_eq!(
            volume(&shape),
            data.len(),
            "model data length for {shape:?}"
        );
        Dense { shape, data }
    }

    /// A 0-d array.
    pub fn scalar(v: T) -> Self {
        Dense::new(Vec::new(), vec![v])
    }

    /// The row-major position of `idx` (one index per dimension).
    fn offset(&self, idx: &[usize]) -> usize {
        idx.iter()
            .zip(&self.shape)
            .fold(0, |acc, (&i, &n)| acc * n + i)
    }

    /// The element at output index `out` of a broadcast this array takes part in
    /// (`out` has at least as many dimensions; extent-1 dimensions repeat).
    pub fn at_broadcast(&self, out: &[usize]) -> T {
        let shift = out.len() - self.shape.len();
        let idx: Vec<usize> = (0..self.shape.len())
            .map(|j| {
                if self.shape[j] == 1 {
                    0
                } else {
                    out[j + shift]
                }
            })
            .collect();
        self.data[self.offset(&idx)]
    }

    /// This array broadcast to `shape` (which it must broadcast to).
    pub fn broadcast_to(&self, shape: &[usize]) -> Dense<T> {
        assert_eq!(
            broadcast_shape(&self.shape, shape).as_deref(),
            Some(shape),
            "model: {:?} does not broadcast to {shape:?}",
            self.shape
        );
        let data = indices(shape)
            .iter()
            .map(|i| self.at_broadcast(i))
            .collect();
        Dense::new(shape.to_vec(), data)
    }

    /// `f` applied element by element.
    pub fn map<U: Copy>(&self, f: impl Fn(T) -> U) -> Dense<U> {
        Dense::new(
            self.shape.clone(),
            self.data.iter().map(|&x| f(x)).collect(),
        )
    }

    /// A copy of the box `ranges[d].0 .. ranges[d].1` (one range per dimension).
    pub fn slice(&self, ranges: &[(usize, usize)]) -> Dense<T> {
        assert_eq!(ranges.len(), self.shape.len());
        let shape: Vec<usize> = ranges.iter().map(|&(a, b)| b - a).collect();
        let data = indices(&shape)
            .iter()
            .map(|i| {
                let abs: Vec<usize> = i.iter().zip(ranges).map(|(&k, r)| k + r.0).collect();
                self.data[self.offset(&abs)]
            })
            .collect();
        Dense::new(shape, data)
    }

    /// Overwrites the box `ranges` with `src` broadcast to the box's shape.
    pub fn assign_region(&mut self, ranges: &[(usize, usize)], src: &Dense<T>) {
        let shape: Vec<usize> = ranges.iter().map(|&(a, b)| b - a).collect();
        let src = src.broadcast_to(&shape);
        for (i, v) in indices(&shape).iter().zip(src.data) {
            let abs: Vec<usize> = i.iter().zip(ranges).map(|(&k, r)| k + r.0).collect();
            let at = self.offset(&abs);
            self.data[at] = v;
        }
    }
}

/// `f(a, b)` element-wise with broadcasting.
pub fn zip<A: Copy, B: Copy, C: Copy>(
    a: &Dense<A>,
    b: &Dense<B>,
    f: impl Fn(A, B) -> C,
) -> Dense<C> {
    let shape = broadcast_shape(&a.shape, &b.shape)
        .unwrap_or_else(|| panic!("model: {:?} and {:?} do not broadcast", a.shape, b.shape));
    let data = indices(&shape)
        .iter()
        .map(|i| f(a.at_broadcast(i), b.at_broadcast(i)))
        .collect();
    Dense::new(shape, data)
}

/// `c ? x : y` element-wise with broadcasting of all three.
pub fn select<T: Copy>(c: &Dense<bool>, x: &Dense<T>, y: &Dense<T>) -> Dense<T> {
    let xy = broadcast_shape(&x.shape, &y.shape).expect("model: where values broadcast");
    let shape = broadcast_shape(&c.shape, &xy).expect("model: where condition broadcasts");
    let data = indices(&shape)
        .iter()
        .map(|i| {
            if c.at_broadcast(i) {
                x.at_broadcast(i)
            } else {
                y.at_broadcast(i)
            }
        })
        .collect();
    Dense::new(shape, data)
}

/// NumPy's `maximum` on floats: NaN if either operand is NaN.
pub fn fmaximum(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// NumPy's `minimum` on floats: NaN if either operand is NaN.
pub fn fminimum(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

#[test]
fn model_broadcasts_like_numpy() {
    assert_eq!(broadcast_shape(&[3, 1], &[4]), Some(vec![3, 4]));
    assert_eq!(broadcast_shape(&[], &[2, 3]), Some(vec![2, 3]));
    assert_eq!(broadcast_shape(&[0, 3], &[1, 3]), Some(vec![0, 3]));
    assert_eq!(broadcast_shape(&[2, 3], &[3, 2]), None);
    let a = Dense::new(vec![2, 1], vec![1, 2]);
    let b = Dense::new(vec![3], vec![10, 20, 30]);
    let c = zip(&a, &b, |x, y| x + y);
    assert_eq!(c, Dense::new(vec![2, 3], vec![11, 21, 31, 12, 22, 32]));
    let s = Dense::new(vec![3, 3], (0..9).collect()).slice(&[(1, 3), (0, 2)]);
    assert_eq!(s, Dense::new(vec![2, 2], vec![3, 4, 6, 7]));
}
