//! 2-D channel flow: step 12 of Lorena Barba's "12 steps to Navier–Stokes", the Diffuse
//! paper's CFD benchmark, written with the array library the way the NumPy original is
//! written: with slices.
//!
//! The incompressible Navier–Stokes equations are solved on an `n x n` grid (rows are y,
//! columns are x) over `[0, 2] x [0, 2]`, with periodic boundaries in x, no-slip walls at
//! y = 0 and y = 2, and a constant source `F = 1` driving `u`. Each time step
//!
//! 1. copies `u` and `v` (`un = u.copy()`, `vn = v.copy()`),
//! 2. builds the pressure equation's right-hand side `b` ([`build_up_b`]),
//! 3. relaxes the pressure Poisson equation for [`NIT`] Jacobi sweeps
//!    ([`pressure_poisson_periodic`]),
//! 4. updates `u` and `v` ([`velocity_update`]) and zeroes them on the walls.
//!
//! Every formula exists three times in the original: once over the interior columns
//! (`[1:-1, 1:-1]`) and once for each periodic column, `x = -1` (its east neighbour is column
//! 0) and `x = 0` (its west neighbour is column -1). Here the formula is written once, over a
//! [`Columns`] triple naming the centre, east and west column slices, and run for each of the
//! three; the tasks issued are the original's, statement by statement.
//!
//! The original loops until `u` stops changing (`udiff < .001`); here one `--iters` iteration
//! is one time step, so that a run does a fixed amount of work. The check runs a plain
//! sequential loop ([`reference()`]) with the same formulas in the same evaluation order for the
//! same number of steps and compares `u`, `v` and `p`.

use anyhow::Context as _;
use diffuse_array::{s, zeros, Array, ArrayError, ArrayResult, DType, SliceArg};

use crate::common::{ensure_square_fits, extent, max_error, AppArgs, RunRecord, Runtime};

/// Jacobi sweeps of the pressure Poisson equation per time step (`nit` in the original).
pub const NIT: usize = 50;

/// The physical and numerical constants of the original.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// Grid points in x (columns).
    pub nx: usize,
    /// Grid points in y (rows).
    pub ny: usize,
    /// Grid spacing in x: `2 / (nx - 1)`.
    pub dx: f64,
    /// Grid spacing in y: `2 / (ny - 1)`.
    pub dy: f64,
    /// Density.
    pub rho: f64,
    /// Kinematic viscosity.
    pub nu: f64,
    /// The constant source term in the x momentum equation.
    pub f: f64,
    /// Time step.
    pub dt: f64,
}

impl Params {
    /// The original's constants on an `n x n` grid, with the time step scaled to the grid:
    /// the original's `dt = 0.01` is stable on its 41-point grid, and finer grids take
    /// `dt = 0.01 (40 / (n - 1))^2`, keeping the original's ratio of time step to the square
    /// of the spacing (with 0.01 on every grid the flow blows up past n of about 100).
    pub fn new(n: usize) -> Self {
        Params {
            nx: n,
            ny: n,
            dx: 2.0 / (n - 1) as f64,
            dy: 2.0 / (n - 1) as f64,
            rho: 1.0,
            nu: 0.1,
            f: 1.0,
            dt: stable_dt(n),
        }
    }
}

/// The time step on an `n x n` grid (see [`Params::new`]).
fn stable_dt(n: usize) -> f64 {
    let scale = (ORIGINAL_SIDE - 1) as f64 / (n.max(2) - 1) as f64;
    0.01 * scale.min(1.0).powi(2)
}

/// The grid side of the original, where `dt = 0.01` is stable.
const ORIGINAL_SIDE: usize = 41;

/// `start..stop` as a slice bound (`None` stop: to the end), usable in constants.
const fn span(start: i64, stop: Option<i64>) -> SliceArg {
    SliceArg {
        start: Some(start),
        stop,
    }
}

/// The column slices one copy of a formula works on: the columns it writes (`center`) and
/// their east (`x + dx`) and west (`x - dx`) neighbours. Rows are always the interior,
/// `[1:-1]`, with north `[2:]` and south `[:-2]`.
#[derive(Clone, Copy, Debug)]
pub struct Columns {
    /// The columns written.
    pub center: SliceArg,
    /// Their east neighbours.
    pub east: SliceArg,
    /// Their west neighbours.
    pub west: SliceArg,
}

/// Interior columns: `[1:-1]`, east `[2:]`, west `[0:-2]`.
const INTERIOR: Columns = Columns {
    center: span(1, Some(-1)),
    east: span(2, None),
    west: span(0, Some(-2)),
};

/// The periodic column at x = 2: `[-1]`, east `[0]` (wrapping around), west `[-2]`.
const LAST: Columns = Columns {
    center: span(-1, None),
    east: span(0, Some(1)),
    west: span(-2, Some(-1)),
};

/// The periodic column at x = 0: `[0]`, east `[1]`, west `[-1]` (wrapping around).
const FIRST: Columns = Columns {
    center: span(0, Some(1)),
    east: span(1, Some(2)),
    west: span(-1, None),
};

/// The three copies of each formula, in the original's order: interior, x = 2, x = 0.
const COLUMN_SETS: [Columns; 3] = [INTERIOR, LAST, FIRST];

impl Columns {
    /// `a[1:-1, center]`: the points written.
    fn c(&self, a: &Array) -> ArrayResult {
        a.slice(&s![1..-1, self.center])
    }

    /// `a[1:-1, east]`: each point's east neighbour.
    fn e(&self, a: &Array) -> ArrayResult {
        a.slice(&s![1..-1, self.east])
    }

    /// `a[1:-1, west]`: each point's west neighbour.
    fn w(&self, a: &Array) -> ArrayResult {
        a.slice(&s![1..-1, self.west])
    }

    /// `a[2:, center]`: each point's north neighbour (next row).
    fn n(&self, a: &Array) -> ArrayResult {
        a.slice(&s![2.., self.center])
    }

    /// `a[0:-2, center]`: each point's south neighbour (previous row).
    fn s(&self, a: &Array) -> ArrayResult {
        a.slice(&s![..-2, self.center])
    }
}

/// The right-hand side of the pressure Poisson equation, from the velocities (the original's
/// `build_up_b`): a fresh zero array whose interior rows are filled, column set by column set.
///
/// ```text
/// b = rho * (1/dt * (du/dx + dv/dy) - (du/dx)**2 - 2 * (du/dy * dv/dx) - (dv/dy)**2)
/// ```
/// with central differences; as in the original, `du/dx` and `dv/dy` are evaluated twice (once
/// in the divergence, once squared), and the cross term divides by `2 dx` after multiplying.
pub fn build_up_b(prm: &Params, u: &Array, v: &Array) -> ArrayResult {
    let (nx, ny, dx, dy, rho, dt) = (prm.nx, prm.ny, prm.dx, prm.dy, prm.rho, prm.dt);
    let b = zeros(u.context(), &[ny as i64, nx as i64], DType::F64)?;
    for cols in COLUMN_SETS {
        let (u_e, u_w, u_n, u_s) = (cols.e(u)?, cols.w(u)?, cols.n(u)?, cols.s(u)?);
        let (v_e, v_w, v_n, v_s) = (cols.e(v)?, cols.w(v)?, cols.n(v)?, cols.s(v)?);
        // (u[1:-1, east] - u[1:-1, west]) / (2 * dx), and the same for v in y.
        let dudx = || (&u_e - &u_w)? / (2.0 * dx);
        let dvdy = || (&v_n - &v_s)? / (2.0 * dy);
        let divergence = ((1.0 / dt) * (dudx()? + dvdy()?)?)?;
        let dudx_sq = {
            let d = dudx()?;
            (&d * &d)?
        };
        let cross = ((((&u_n - &u_s)? / (2.0 * dy))? * (&v_e - &v_w))? / (2.0 * dx))?;
        let dvdy_sq = {
            let d = dvdy()?;
            (&d * &d)?
        };
        let value = (rho * (divergence - &dudx_sq - (2.0 * &cross)? - &dvdy_sq)?)?;
        cols.c(&b)?.assign(&value)?;
    }
    Ok(b)
}

/// Relaxes the pressure Poisson equation `lap p = b` in place with [`NIT`] Jacobi sweeps (the
/// original's `pressure_poisson_periodic`).
///
/// Each sweep copies `p` to `pn`, writes the five-point update from `pn` over the interior
/// and both periodic columns, then imposes `dp/dy = 0` on the walls by copying row -2 to row
/// -1 and row 1 to row 0 (reading the values just written, as the original does).
pub fn pressure_poisson_periodic(prm: &Params, p: &Array, b: &Array) -> Result<(), ArrayError> {
    let (dx2, dy2) = (prm.dx * prm.dx, prm.dy * prm.dy);
    let denom = 2.0 * (dx2 + dy2);
    let coef = dx2 * dy2 / denom;
    for _ in 0..NIT {
        let pn = p.copy()?;
        for cols in COLUMN_SETS {
            // ((pn_e + pn_w) * dy**2 + (pn_n + pn_s) * dx**2) / (2 (dx**2 + dy**2))
            //     - dx**2 dy**2 / (2 (dx**2 + dy**2)) * b
            let ew = ((cols.e(&pn)? + cols.w(&pn)?)? * dy2)?;
            let ns = ((cols.n(&pn)? + cols.s(&pn)?)? * dx2)?;
            let value = (((ew + &ns)? / denom)? - coef * &cols.c(b)?)?;
            cols.c(p)?.assign(&value)?;
        }
        p.slice(&s![-1.., ..])?.assign(&p.slice(&s![-2..-1, ..])?)?;
        p.slice(&s![0..1, ..])?.assign(&p.slice(&s![1..2, ..])?)?;
    }
    Ok(())
}

/// Which velocity component a momentum update computes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Component {
    /// `u`: pressure gradient in x, plus the source `F`.
    U,
    /// `v`: pressure gradient in y, no source.
    V,
}

/// The new values of one velocity component on `cols` (interior rows), from the previous
/// step's `un`, `vn` (`wn` is the component's own previous values: `un` or `vn`) and the
/// relaxed pressure `p`:
///
/// ```text
/// wn - un * dt/dx * (wn - wn_w) - vn * dt/dy * (wn - wn_s) - dt/(2 rho h) * (p_+ - p_-)
///    + nu * (dt/dx**2 * (wn_e - 2 wn + wn_w) + dt/dy**2 * (wn_n - 2 wn + wn_s)) [+ F dt]
/// ```
/// where the pressure difference is east minus west with `h = dx` for `u`, north minus south
/// with `h = dy` for `v`, and only `u` gets the source. Terms are evaluated left to right as
/// NumPy does (`un * dt / dx * d` is `((un * dt) / dx) * d`).
pub fn velocity_update(
    prm: &Params,
    cols: Columns,
    component: Component,
    un: &Array,
    vn: &Array,
    p: &Array,
) -> ArrayResult {
    let (dx, dy, rho, nu, f, dt) = (prm.dx, prm.dy, prm.rho, prm.nu, prm.f, prm.dt);
    let wn = match component {
        Component::U => un,
        Component::V => vn,
    };
    let (w_c, w_e, w_w, w_n, w_s) = (
        cols.c(wn)?,
        cols.e(wn)?,
        cols.w(wn)?,
        cols.n(wn)?,
        cols.s(wn)?,
    );
    let (un_c, vn_c) = (cols.c(un)?, cols.c(vn)?);
    let advect_x = (((&un_c * dt)? / dx)? * (&w_c - &w_w))?;
    let advect_y = (((&vn_c * dt)? / dy)? * (&w_c - &w_s))?;
    let pressure = match component {
        Component::U => ((dt / (2.0 * rho * dx)) * (cols.e(p)? - cols.w(p)?)?)?,
        Component::V => ((dt / (2.0 * rho * dy)) * (cols.n(p)? - cols.s(p)?)?)?,
    };
    let lap_x = ((dt / (dx * dx)) * (&w_e - (2.0 * &w_c)? + &w_w)?)?;
    let lap_y = ((dt / (dy * dy)) * (&w_n - (2.0 * &w_c)? + &w_s)?)?;
    let diffusion = (nu * (lap_x + &lap_y)?)?;
    let value = (&w_c - &advect_x - &advect_y - &pressure + &diffusion)?;
    match component {
        Component::U => value + f * dt,
        Component::V => Ok(value),
    }
}

/// One time step of the channel flow on the arrays `u`, `v`, `p` (updated in place), exactly
/// the body of the original's loop (without its convergence test).
pub fn step(prm: &Params, u: &Array, v: &Array, p: &Array) -> Result<(), ArrayError> {
    let un = u.copy()?;
    let vn = v.copy()?;
    let b = build_up_b(prm, u, v)?;
    pressure_poisson_periodic(prm, p, &b)?;
    for component in [Component::U, Component::V] {
        let target = match component {
            Component::U => u,
            Component::V => v,
        };
        for cols in COLUMN_SETS {
            let value = velocity_update(prm, cols, component, &un, &vn, p)?;
            cols.c(target)?.assign(&value)?;
        }
    }
    for w in [u, v] {
        w.slice(&s![0..1, ..])?.assign(0.0)?;
        w.slice(&s![-1.., ..])?.assign(0.0)?;
    }
    Ok(())
}

/// The velocity and pressure grids on the host, row-major (index `j * nx + i`, `j` the row).
#[derive(Clone, Debug)]
pub struct Fields {
    /// Velocity in x.
    pub u: Vec<f64>,
    /// Velocity in y.
    pub v: Vec<f64>,
    /// Pressure.
    pub p: Vec<f64>,
}

impl Fields {
    /// The fluid at rest, `u = v = p = 0`: the original's (and the benchmark's) start.
    pub fn at_rest(n: usize) -> Self {
        Fields {
            u: vec![0.0; n * n],
            v: vec![0.0; n * n],
            p: vec![0.0; n * n],
        }
    }

    /// A deterministic, irregular start (values in [-0.1, 0.1)) for the tests. From rest the
    /// flow stays one-dimensional (`v`, `b` and `p` remain exactly 0), which would leave the
    /// pressure solver and the `v` update unchecked; this start exercises every term.
    #[cfg(test)]
    pub fn stirred(n: usize) -> Self {
        let grid = |seed: usize| -> Vec<f64> {
            (0..n * n)
                .map(|k| ((k / n) * 29 + (k % n) * 53 + seed) % 89)
                .map(|h| 0.2 * (h as f64 / 89.0) - 0.1)
                .collect()
        };
        Fields {
            u: grid(7),
            v: grid(41),
            p: grid(66),
        }
    }
}

/// The fields after `steps` time steps from `init`, as a plain sequential loop over row-major
/// `Vec<f64>` grids.
///
/// Periodicity in x is index arithmetic (`(i + 1) % nx`, `(i + nx - 1) % nx`), so one loop
/// covers the interior and both periodic columns; every expression is evaluated in the same
/// order as the array version so that the results agree to the last bit or nearly.
pub fn reference(prm: &Params, init: &Fields, steps: usize) -> Fields {
    let Params {
        nx,
        ny,
        dx,
        dy,
        rho,
        nu,
        f,
        dt,
    } = *prm;
    let Fields {
        mut u,
        mut v,
        mut p,
    } = init.clone();
    let (dx2, dy2) = (dx * dx, dy * dy);
    let denom = 2.0 * (dx2 + dy2);
    let coef = dx2 * dy2 / denom;
    let at = |j: usize, i: usize| j * nx + i;
    let east = |i: usize| (i + 1) % nx;
    let west = |i: usize| (i + nx - 1) % nx;
    for _ in 0..steps {
        let un = u.clone();
        let vn = v.clone();

        let mut b = vec![0.0; nx * ny];
        for j in 1..ny - 1 {
            for i in 0..nx {
                let (e, w) = (east(i), west(i));
                let dudx = (u[at(j, e)] - u[at(j, w)]) / (2.0 * dx);
                let dvdy = (v[at(j + 1, i)] - v[at(j - 1, i)]) / (2.0 * dy);
                let cross = (u[at(j + 1, i)] - u[at(j - 1, i)]) / (2.0 * dy)
                    * (v[at(j, e)] - v[at(j, w)])
                    / (2.0 * dx);
                b[at(j, i)] =
                    rho * ((1.0 / dt) * (dudx + dvdy) - dudx * dudx - 2.0 * cross - dvdy * dvdy);
            }
        }

        for _ in 0..NIT {
            let pn = p.clone();
            for j in 1..ny - 1 {
                for i in 0..nx {
                    let ew = (pn[at(j, east(i))] + pn[at(j, west(i))]) * dy2;
                    let ns = (pn[at(j + 1, i)] + pn[at(j - 1, i)]) * dx2;
                    p[at(j, i)] = (ew + ns) / denom - coef * b[at(j, i)];
                }
            }
            p.copy_within(at(ny - 2, 0)..at(ny - 1, 0), at(ny - 1, 0));
            p.copy_within(at(1, 0)..at(2, 0), 0);
        }

        for (out, wn, is_u) in [(&mut u, &un, true), (&mut v, &vn, false)] {
            for j in 1..ny - 1 {
                for i in 0..nx {
                    let (e, w) = (east(i), west(i));
                    let c = wn[at(j, i)];
                    let advect_x = un[at(j, i)] * dt / dx * (c - wn[at(j, w)]);
                    let advect_y = vn[at(j, i)] * dt / dy * (c - wn[at(j - 1, i)]);
                    let pressure = if is_u {
                        dt / (2.0 * rho * dx) * (p[at(j, e)] - p[at(j, w)])
                    } else {
                        dt / (2.0 * rho * dy) * (p[at(j + 1, i)] - p[at(j - 1, i)])
                    };
                    let lap_x = dt / (dx * dx) * (wn[at(j, e)] - 2.0 * c + wn[at(j, w)]);
                    let lap_y = dt / (dy * dy) * (wn[at(j + 1, i)] - 2.0 * c + wn[at(j - 1, i)]);
                    let value = c - advect_x - advect_y - pressure + nu * (lap_x + lap_y);
                    out[at(j, i)] = if is_u { value + f * dt } else { value };
                }
            }
            out[..nx].fill(0.0);
            out[(ny - 1) * nx..].fill(0.0);
        }
    }
    Fields { u, v, p }
}

/// Runs the channel flow from rest: one warm-up step, `iters` timed ones, then the check.
pub fn run(args: &AppArgs) -> anyhow::Result<RunRecord> {
    anyhow::ensure!(
        args.n >= 3,
        "--n must be at least 3 (the grid needs an interior)"
    );
    // The start and its copies into stores (u, v, p), the reference's fields and its
    // per-step copies (u, v, p, un, vn, b, pn), and the results read back: 16 grids.
    ensure_square_fits(args, 16, args.n as u128, "grids")?;
    simulate(args, &Fields::at_rest(args.n))
}

/// Runs the channel flow from `init` (one warm-up step, `iters` timed ones) and checks `u`,
/// `v` and `p` against [`reference()`] run for as many steps: `check` is the largest of the
/// three errors.
pub fn simulate(args: &AppArgs, init: &Fields) -> anyhow::Result<RunRecord> {
    let rt = Runtime::start(args)?;
    let prm = Params::new(args.n);
    let shape = [extent(args.n)?, extent(args.n)?];
    let u = Array::from_vec(&rt.arrays, &shape, init.u.clone()).context("creating u")?;
    let v = Array::from_vec(&rt.arrays, &shape, init.v.clone()).context("creating v")?;
    let p = Array::from_vec(&rt.arrays, &shape, init.p.clone()).context("creating p")?;

    let m = rt.measure(args.iters, || Ok(step(&prm, &u, &v, &p)?))?;

    let want = reference(&prm, init, args.iters + 1);
    let (u, v, p) = (u.to_vec::<f64>()?, v.to_vec::<f64>()?, p.to_vec::<f64>()?);
    let check = [
        max_error(&u, &want.u),
        max_error(&v, &want.v),
        max_error(&p, &want.p),
    ]
    .into_iter()
    .fold(0.0, f64::max);
    Ok(rt.record("cfd", args, m, check).with_result(&[&u, &v, &p]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::{test_args, Switch};

    /// From rest (the benchmark's start) and from a stirred start that exercises the
    /// pressure solver and the `v` update, on 1, 2 and 3 processors, fused and unfused.
    #[test]
    fn cfd_matches_the_sequential_loop() {
        let n = 17;
        for (procs, fusion) in [
            (1, Switch::Off),
            (2, Switch::On),
            (3, Switch::Off),
            (3, Switch::On),
        ] {
            let args = test_args(n, 3, procs, fusion);
            for (start, record) in [
                ("rest", run(&args).unwrap()),
                ("stirred", simulate(&args, &Fields::stirred(n)).unwrap()),
            ] {
                assert!(
                    record.check <= 1e-9,
                    "procs {procs}, {start}: check {}",
                    record.check
                );
                assert!(record.tasks_issued_per_iter > 0.0);
                if fusion == Switch::Off {
                    assert_eq!(record.tasks_issued_per_iter, record.tasks_executed_per_iter);
                } else {
                    assert!(record.tasks_executed_per_iter < record.tasks_issued_per_iter / 2.0);
                }
            }
        }
    }

    /// The stirred start really does move `v` and `p`, so the check above covers them.
    #[test]
    fn cfd_stirred_reference_moves_every_field() {
        let prm = Params::new(17);
        let init = Fields::stirred(17);
        let out = reference(&prm, &init, 2);
        let moved = |a: &[f64], b: &[f64]| a.iter().zip(b).any(|(x, y)| (x - y).abs() > 1e-6);
        assert!(moved(&out.u, &init.u) && moved(&out.v, &init.v) && moved(&out.p, &init.p));
    }
}
