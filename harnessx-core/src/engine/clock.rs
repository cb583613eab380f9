//! When a handler's attempt started, read cheaply enough to pay on every call.
//!
//! An attempt's deadline counts from its first poll, yet most attempts finish within
//! that poll and never need one. So the start is read from the monotonic clock's coarse
//! reading where there is one (Linux's `CLOCK_MONOTONIC_COARSE`, through `coarsetime`:
//! the same clock as of its last tick, read without the timestamp counter), and only an
//! attempt still pending after its first poll turns it into a deadline. The time since
//! the start is never overstated ([`COARSE_LAG`] is taken off it), so a deadline may
//! come a little late (at most about 20 ms), never early.
//!
//! (`coarsetime` reads the clock through the C library, which knows where the kernel's
//! vDSO is even under valgrind; rustix's own vDSO reader does not, and crashed there.)

use std::time::Duration;

/// The start of an attempt.
#[derive(Clone, Copy)]
pub(crate) struct Start(Inner);

#[cfg(any(target_os = "linux", target_os = "android"))]
type Inner = coarsetime::Instant;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
type Inner = std::time::Instant;

/// How far the coarse reading may lag the clock: one kernel tick (10 ms at the lowest
/// tick rate Linux is built with, `HZ=100`), plus the fixed-point rounding of its
/// readings.
#[cfg(any(target_os = "linux", target_os = "android"))]
const COARSE_LAG: Duration = Duration::from_micros(10_001);

impl Start {
    /// Now.
    pub(crate) fn now() -> Self {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        return Self(coarsetime::Instant::now_without_cache_update());
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        return Self(std::time::Instant::now());
    }

    /// The time since the start, or less: never more than the time that passed.
    pub(crate) fn elapsed_at_most(self) -> Duration {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            let coarse = coarsetime::Instant::now_without_cache_update().duration_since(self.0);
            Duration::from_nanos(coarse.as_nanos()).saturating_sub(COARSE_LAG)
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        self.0.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_since_the_start_is_never_overstated() {
        let exact = std::time::Instant::now();
        let start = Start::now();
        std::thread::sleep(Duration::from_millis(50));
        let at_most = start.elapsed_at_most();
        assert!(at_most <= exact.elapsed(), "{at_most:?} is more than {:?}", exact.elapsed());
        // And it is not far off: 50 ms, less the lag and a tick at most.
        #[cfg(any(target_os = "linux", target_os = "android"))]
        assert!(at_most + 2 * COARSE_LAG >= Duration::from_millis(50), "{at_most:?}");
    }
}
