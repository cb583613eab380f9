//! When a handler's attempt started, read cheaply enough to pay on every call.
//!
//! An attempt's deadline counts from its first poll, yet most attempts finish within
//! that poll and never need one. So the start is read from the monotonic clock's coarse
//! reading where there is one (Linux's `CLOCK_MONOTONIC_COARSE`: the same clock, as of
//! its last tick, read without the timestamp counter), and only an attempt still pending
//! after its first poll turns it into a deadline. Measured against the exact reading,
//! the time since the start is never overstated: a deadline may come up to two ticks
//! late (a few milliseconds), never early.

use std::time::Duration;

/// The start of an attempt.
#[derive(Clone, Copy)]
pub(crate) struct Start(Inner);

#[cfg(target_os = "linux")]
type Inner = Duration;
#[cfg(not(target_os = "linux"))]
type Inner = std::time::Instant;

impl Start {
    /// Now.
    pub(crate) fn now() -> Self {
        #[cfg(target_os = "linux")]
        return Self(coarse::now());
        #[cfg(not(target_os = "linux"))]
        return Self(std::time::Instant::now());
    }

    /// The time since the start, or less: the coarse clock's tick is taken off, so this
    /// is never more than the time that passed.
    pub(crate) fn elapsed_at_most(self) -> Duration {
        #[cfg(target_os = "linux")]
        return coarse::now().saturating_sub(self.0).saturating_sub(coarse::tick());
        #[cfg(not(target_os = "linux"))]
        return self.0.elapsed();
    }
}

#[cfg(target_os = "linux")]
mod coarse {
    use std::sync::OnceLock;
    use std::time::Duration;

    use rustix::time::{ClockId, Timespec, clock_getres, clock_gettime};

    fn duration(t: Timespec) -> Duration {
        let secs = u64::try_from(t.tv_sec).unwrap_or(0);
        let nanos = u32::try_from(t.tv_nsec).unwrap_or(0);
        Duration::new(secs, nanos.min(999_999_999))
    }

    pub(super) fn now() -> Duration {
        duration(clock_gettime(ClockId::MonotonicCoarse))
    }

    /// How far the coarse reading may lag (its resolution: one tick of the kernel's).
    pub(super) fn tick() -> Duration {
        static TICK: OnceLock<Duration> = OnceLock::new();
        *TICK.get_or_init(|| duration(clock_getres(ClockId::MonotonicCoarse)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_since_the_start_is_never_overstated() {
        let exact = std::time::Instant::now();
        let start = Start::now();
        std::thread::sleep(Duration::from_millis(30));
        let at_most = start.elapsed_at_most();
        assert!(at_most <= exact.elapsed(), "{at_most:?} is more than {:?}", exact.elapsed());
        // And it is not far off: 30 ms, less two ticks at most.
        #[cfg(target_os = "linux")]
        assert!(at_most + 2 * coarse::tick() >= Duration::from_millis(30), "{at_most:?}");
    }
}
