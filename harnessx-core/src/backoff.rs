//! [`Backoff`]: how long to wait before the next try, the one rule every retry and poll of
//! the workspace follows.
//!
//! Hand-written rather than taken from a crate (`backon`, `backoff`): what is needed is
//! one pure function of the number of waits so far, without timers, jitter or a retry
//! loop, and the tools' retry policy takes a multiplier as `f64` (`backon`'s is `f32`,
//! which would change the delays of a `backoff_multiplier` such as 1.1).

use std::time::Duration;

/// Exponential back-off without jitter: the first wait is `initial`, each one after it
/// `factor` times the one before, and none longer than `max`.
///
/// Every wait before a retry or a poll in harnessx is one of these:
/// [`ToolRetry`](crate::ToolRetry) (a tool's retries), `ModelRetry` in `harnessx-agent`
/// (a model's), the restart of an MCP server that died (`harnessx-mcp`), the Restate
/// client following a run (`harnessx-durable`) and the removal of a command's cgroup
/// (`harnessx-builtin`). (The one doubling wait it does not cover is `harnessx-infra`'s
/// SQLite set-up: that crate depends on no harnessx crate.)
///
/// ```
/// use std::time::Duration;
/// use harnessx_core::Backoff;
///
/// let restart = Backoff::doubling(Duration::from_millis(250), Duration::from_secs(1));
/// let waits: Vec<Duration> = (0..4).map(|waited| restart.delay(waited)).collect();
/// let ms = |n| Duration::from_millis(n);
/// assert_eq!(waits, [ms(250), ms(500), ms(1000), ms(1000)]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    initial: Duration,
    factor: f64,
    max: Duration,
}

impl Backoff {
    /// Waits of `initial`, then `factor` times longer each time, capped at `max`. A
    /// `factor` below 1 (or NaN) is taken as 1: a back-off never shortens.
    pub fn new(initial: Duration, factor: f64, max: Duration) -> Self {
        Self { initial, factor: if factor >= 1.0 { factor } else { 1.0 }, max }
    }

    /// Waits of `initial`, doubling each time, capped at `max`.
    pub const fn doubling(initial: Duration, max: Duration) -> Self {
        Self { initial, factor: 2.0, max }
    }

    /// No wait at all (retries back to back).
    pub const fn none() -> Self {
        Self { initial: Duration::ZERO, factor: 1.0, max: Duration::ZERO }
    }

    /// The wait after `waited` earlier waits: `initial` for 0, then `initial × factorⁿ`,
    /// never more than `max` (a value past what a `Duration` holds is `max` too).
    pub fn delay(&self, waited: u32) -> Duration {
        if self.initial.is_zero() {
            return Duration::ZERO;
        }
        let exponent = i32::try_from(waited).unwrap_or(i32::MAX);
        let secs = self.initial.as_secs_f64() * self.factor.powi(exponent);
        Duration::try_from_secs_f64(secs).map_or(self.max, |d| d.min(self.max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(non_snake_case)] // reads as the unit: MS(250)
    fn MS(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn waits_grow_by_the_factor_up_to_the_cap() {
        let b = Backoff::new(Duration::from_secs(1), 3.0, Duration::from_secs(5));
        let waits: Vec<Duration> = (0..4).map(|n| b.delay(n)).collect();
        assert_eq!(waits, [1, 3, 5, 5].map(Duration::from_secs));
        let doubling = Backoff::doubling(MS(100), MS(500));
        assert_eq!([0, 1, 2, 3].map(|n| doubling.delay(n)), [MS(100), MS(200), MS(400), MS(500)]);
    }

    #[test]
    fn fractional_factors_keep_their_precision() {
        let b = Backoff::new(Duration::from_secs(10), 1.1, Duration::from_secs(60));
        assert_eq!(b.delay(1), Duration::from_secs(11));
        assert_eq!(b.delay(2), Duration::from_millis(12_100));
    }

    #[test]
    fn a_factor_below_one_or_nan_never_shortens_the_wait() {
        for factor in [0.5, 0.0, -2.0, f64::NAN] {
            let b = Backoff::new(MS(200), factor, Duration::from_secs(1));
            assert_eq!([b.delay(0), b.delay(5)], [MS(200), MS(200)], "factor {factor}");
        }
    }

    #[test]
    fn huge_counts_and_factors_stop_at_the_cap_without_overflow() {
        let b = Backoff::doubling(MS(250), Duration::from_secs(30));
        assert_eq!(b.delay(u32::MAX), Duration::from_secs(30));
        let steep = Backoff::new(MS(1), f64::INFINITY, Duration::from_secs(9));
        assert_eq!([steep.delay(0), steep.delay(1)], [MS(1), Duration::from_secs(9)]);
        let uncapped = Backoff::doubling(Duration::from_secs(1), Duration::MAX);
        assert_eq!(uncapped.delay(10_000), Duration::MAX);
    }

    #[test]
    fn no_initial_wait_means_no_wait() {
        assert_eq!(Backoff::none().delay(3), Duration::ZERO);
        assert_eq!(Backoff::new(Duration::ZERO, f64::INFINITY, Duration::MAX).delay(100), Duration::ZERO);
    }

    #[test]
    fn a_cap_below_the_first_wait_is_the_wait() {
        assert_eq!(
            Backoff::doubling(Duration::from_secs(2), Duration::from_secs(1)).delay(0),
            Duration::from_secs(1)
        );
    }
}
