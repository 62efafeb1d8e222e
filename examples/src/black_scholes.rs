//! Black-Scholes call and put prices for `--n` European options, written with the array
//! library as the NumPy/cuNumeric benchmark writes it.
//!
//! Spot prices, strikes and maturities are seeded uniform random arrays; every timed iteration
//! prices all options again (about 25 element-wise tasks over `n` values, using log, sqrt,
//! exp and erf). The check compares the last prices with a plain sequential loop over the
//! same inputs.
//!
//! Two forms of the cumulative normal distribution: through `erf` (`black-scholes`), and the
//! Abramowitz–Stegun polynomial with `absolute`, `exp` and `where` that cuNumeric's example
//! uses (`black-scholes-poly`, the Diffuse paper's 67 tasks per iteration).

use diffuse_array::{random, where_, Array, ArrayResult, DType, Distribution};

use crate::common::{ensure_fits, extent, host_f64s, max_error, AppArgs, RunRecord, Runtime};

/// The risk-free interest rate.
const RATE: f64 = 0.02;
/// The volatility.
const VOLATILITY: f64 = 0.3;

/// The standard normal cumulative distribution through erf: `0.5 + 0.5 erf(x / sqrt 2)`.
fn cnd(x: &Array) -> ArrayResult {
    let scaled = (x * std::f64::consts::FRAC_1_SQRT_2)?;
    (0.5 * scaled.erf()?)? + 0.5
}

/// The coefficients of the Abramowitz–Stegun approximation 26.2.17 of the normal
/// distribution: `k = 1 / (1 + P x)`, then a fifth-degree polynomial in `k`.
const AS_P: f64 = 0.231_641_9;
const AS_A: [f64; 5] = [
    0.319_381_53,
    -0.356_563_782,
    1.781_477_937,
    -1.821_255_978,
    1.330_274_429,
];
/// `1 / sqrt(2 pi)`.
const RSQRT_2PI: f64 = 0.398_942_280_401_432_7;

/// The standard normal cumulative distribution by the Abramowitz–Stegun polynomial, as
/// cuNumeric's Black-Scholes writes it (`absolute`, `exp`, `where`).
fn cnd_polynomial(d: &Array) -> ArrayResult {
    let k = (1.0 / ((d.abs()? * AS_P)? + 1.0)?)?;
    let mut poly = (&k * AS_A[4])?;
    for a in AS_A[..4].iter().rev() {
        poly = (&k * (poly + *a)?)?;
    }
    let density = (((d * d)? * -0.5)?.exp()? * RSQRT_2PI)?;
    let tail = (density * &poly)?;
    let upper = (1.0 - &tail)?;
    where_(&d.greater(0.0)?, &upper, &tail)
}

/// The cumulative normal of [`cnd_polynomial`] for one value, in the same order of operations.
fn cnd_polynomial_scalar(d: f64) -> f64 {
    let k = 1.0 / (d.abs() * AS_P + 1.0);
    let mut poly = k * AS_A[4];
    for a in AS_A[..4].iter().rev() {
        poly = k * (poly + a);
    }
    let tail = (d * d * -0.5).exp() * RSQRT_2PI * poly;
    if d > 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// Which cumulative normal distribution the pricing uses.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Cnd {
    /// `0.5 + 0.5 erf(x / sqrt 2)`.
    Erf,
    /// The Abramowitz–Stegun polynomial.
    Polynomial,
}

impl Cnd {
    fn of(self, x: &Array) -> ArrayResult {
        match self {
            Cnd::Erf => cnd(x),
            Cnd::Polynomial => cnd_polynomial(x),
        }
    }

    fn of_scalar(self, x: f64) -> f64 {
        match self {
            Cnd::Erf => 0.5 * libm::erf(x * std::f64::consts::FRAC_1_SQRT_2) + 0.5,
            Cnd::Polynomial => cnd_polynomial_scalar(x),
        }
    }

    /// The app's name in records.
    fn app(self) -> &'static str {
        match self {
            Cnd::Erf => "black-scholes",
            Cnd::Polynomial => "black-scholes-poly",
        }
    }
}

/// Prices every option: returns (call, put).
fn price(spot: &Array, strike: &Array, years: &Array, form: Cnd) -> anyhow::Result<(Array, Array)> {
    let sqrt_t = years.sqrt()?;
    let vol_sqrt_t = (&sqrt_t * VOLATILITY)?;
    let drift = (years * (RATE + 0.5 * VOLATILITY * VOLATILITY))?;
    let d1 = (((spot / strike)?.log()? + drift)? / &vol_sqrt_t)?;
    let d2 = (&d1 - &vol_sqrt_t)?;
    let (cnd_d1, cnd_d2) = (form.of(&d1)?, form.of(&d2)?);
    let discounted = (strike * (years * -RATE)?.exp()?)?;
    let call = ((spot * &cnd_d1)? - (&discounted * &cnd_d2)?)?;
    let put = ((&discounted * (1.0 - &cnd_d2)?)? - (spot * (1.0 - &cnd_d1)?)?)?;
    Ok((call, put))
}

/// The same prices as a plain sequential loop, in the same order of operations.
fn reference(spot: &[f64], strike: &[f64], years: &[f64], form: Cnd) -> (Vec<f64>, Vec<f64>) {
    let cnd = |x: f64| form.of_scalar(x);
    let mut call = Vec::with_capacity(spot.len());
    let mut put = Vec::with_capacity(spot.len());
    for ((&s, &k), &t) in spot.iter().zip(strike).zip(years) {
        let sqrt_t = t.sqrt();
        let vol_sqrt_t = sqrt_t * VOLATILITY;
        let drift = t * (RATE + 0.5 * VOLATILITY * VOLATILITY);
        let d1 = ((s / k).ln() + drift) / vol_sqrt_t;
        let d2 = d1 - vol_sqrt_t;
        let discounted = k * (t * -RATE).exp();
        call.push(s * cnd(d1) - discounted * cnd(d2));
        put.push(discounted * (1.0 - cnd(d2)) - s * (1.0 - cnd(d1)));
    }
    (call, put)
}

/// Runs the benchmark with the cumulative normal `form`: one warm-up pricing, `iters` timed
/// ones, then the check.
pub fn run(args: &AppArgs, form: Cnd) -> anyhow::Result<RunRecord> {
    anyhow::ensure!(args.n >= 1, "--n must be at least 1");
    // The host reads back the three inputs and the two prices, and computes the two
    // reference prices.
    ensure_fits(
        args,
        host_f64s(7, args.n as u128),
        &format!("the prices of --n {} options", args.n),
    )?;
    let rt = Runtime::start(args)?;
    let n = [extent(args.n)?];
    let uniform = |low, high, seed| {
        random(
            &rt.arrays,
            &n,
            Distribution::Uniform { low, high },
            seed,
            DType::F64,
        )
    };
    let spot = uniform(5.0, 30.0, 1)?;
    let strike = uniform(1.0, 100.0, 2)?;
    let years = uniform(0.25, 10.0, 3)?;

    let mut prices = None;
    let m = rt.measure(args.iters, || {
        prices = Some(price(&spot, &strike, &years, form)?);
        Ok(())
    })?;
    let (call, put) = prices.ok_or_else(|| anyhow::anyhow!("no iteration ran"))?;

    let (want_call, want_put) =
        reference(&spot.to_vec()?, &strike.to_vec()?, &years.to_vec()?, form);
    let (call, put) = (call.to_vec()?, put.to_vec()?);
    let check = max_error(&call, &want_call).max(max_error(&put, &want_put));
    Ok(rt
        .record(form.app(), args, m, check)
        .with_result(&[&call, &put]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::{test_args, Switch};

    #[test]
    fn prices_match_the_sequential_loop_and_parity_holds() {
        for (procs, form) in [
            (1, Cnd::Erf),
            (2, Cnd::Polynomial),
            (3, Cnd::Erf),
            (3, Cnd::Polynomial),
        ] {
            let record = run(&test_args(1001, 2, procs, Switch::Off), form).unwrap();
            assert!(
                record.check <= 1e-12,
                "procs {procs}: check {}",
                record.check
            );
            assert_eq!(record.tasks_issued_per_iter, record.tasks_executed_per_iter);
            // Fused, an iteration's element-wise tasks run as one task (or fewer: the window
            // may join independent iterations).
            let record = run(&test_args(1001, 2, procs, Switch::On), form).unwrap();
            assert!(
                record.check <= 1e-12,
                "procs {procs}: fused check {}",
                record.check
            );
            assert!(record.tasks_executed_per_iter <= 1.0, "{record:?}");
        }
        // Put-call parity, C - P = S - K e^{-rT}, holds for the reference itself (the
        // polynomial's cnd(x) + cnd(-x) is 1 up to rounding).
        for form in [Cnd::Erf, Cnd::Polynomial] {
            let (call, put) = reference(&[20.0], &[25.0], &[2.0], form);
            let parity = 20.0 - 25.0 * (-RATE * 2.0f64).exp();
            assert!((call[0] - put[0] - parity).abs() < 1e-12, "{form:?}");
        }
        // The polynomial is within 7.5e-8 of erf's distribution (A&S 26.2.17).
        for x in [-3.0, -1.0, -0.1, 0.0, 0.5, 2.0] {
            let gap = (Cnd::Erf.of_scalar(x) - Cnd::Polynomial.of_scalar(x)).abs();
            assert!(gap < 7.5e-8, "x {x}: {gap}");
        }
    }
}
