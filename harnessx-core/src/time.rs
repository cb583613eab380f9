//! Time as harnessx stores and shows it: milliseconds since the Unix epoch
//! ([`now_unix_ms`]), and those broken into a UTC calendar date and time for people to
//! read ([`UtcDateTime`]).
//!
//! The calendar is worked out here rather than by a date crate: this is all the
//! workspace needs of one, and the arithmetic is Howard Hinnant's `civil_from_days`
//! (<https://howardhinnant.github.io/date_algorithms.html>), exact for every day of the
//! proleptic Gregorian calendar.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in milliseconds since the Unix epoch (0 for a clock set before it).
pub fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A moment in UTC as calendar fields (proleptic Gregorian, no leap seconds).
///
/// ```
/// use harnessx_core::time::UtcDateTime;
///
/// let t = UtcDateTime::from_unix_ms(951_825_600_000);
/// let shown = format!("{:04}-{:02}-{:02} {:02}:{:02}", t.year, t.month, t.day, t.hour, t.minute);
/// assert_eq!(shown, "2000-02-29 12:00");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UtcDateTime {
    /// The year, e.g. 2026.
    pub year: i64,
    /// 1 to 12.
    pub month: u32,
    /// 1 to 31.
    pub day: u32,
    /// 0 to 23.
    pub hour: u32,
    /// 0 to 59.
    pub minute: u32,
    /// 0 to 59.
    pub second: u32,
}

impl UtcDateTime {
    /// The moment `ms` milliseconds after the Unix epoch (1970-01-01 00:00:00 UTC); the
    /// milliseconds within the second are dropped.
    pub fn from_unix_ms(ms: u64) -> Self {
        let secs = ms / 1000;
        let (days, rest) = (secs / 86_400, secs % 86_400);
        // Far from overflow: u64::MAX ms is some 2.1e11 days.
        let (year, month, day) = civil_from_days(days as i64);
        // `rest` is under 86 400, so each part fits a u32.
        let (hour, minute, second) = ((rest / 3600) as u32, (rest % 3600 / 60) as u32, (rest % 60) as u32);
        Self { year, month, day, hour, minute, second }
    }
}

/// The (year, month, day) of the day `days` days after 1970-01-01 (Hinnant's
/// `civil_from_days`: eras of 400 years, each 146 097 days, counted from 0000-03-01).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // day of the era, 0 to 146 096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // year of the era, 0 to 399
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of the year from March 1, 0 to 365
    let mp = (5 * doy + 2) / 153; // month from March, 0 to 11
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = (if mp < 10 { mp + 3 } else { mp - 9 }) as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> (i64, u32, u32, u32, u32, u32) {
        let t = UtcDateTime::from_unix_ms(ms);
        (t.year, t.month, t.day, t.hour, t.minute, t.second)
    }

    #[test]
    fn the_epoch_is_the_first_of_january_1970() {
        assert_eq!(at(0), (1970, 1, 1, 0, 0, 0));
        assert_eq!(at(999), (1970, 1, 1, 0, 0, 0), "milliseconds are dropped");
        assert_eq!(at(86_399_999), (1970, 1, 1, 23, 59, 59));
        assert_eq!(at(86_400_000), (1970, 1, 2, 0, 0, 0));
    }

    #[test]
    fn leap_days() {
        // 2000: divisible by 400, a leap year.
        assert_eq!(at(951_782_400_000), (2000, 2, 29, 0, 0, 0));
        assert_eq!(at(951_868_800_000), (2000, 3, 1, 0, 0, 0));
        // 2024: divisible by 4.
        assert_eq!(at(1_709_164_800_000), (2024, 2, 29, 0, 0, 0));
        assert_eq!(at(1_709_251_199_000), (2024, 2, 29, 23, 59, 59));
        // 1972: the first leap day after the epoch.
        assert_eq!(at(68_169_600_000), (1972, 2, 29, 0, 0, 0));
        // 2100: divisible by 100 but not 400, no leap day: 28 February, then 1 March.
        assert_eq!(at(4_107_456_000_000), (2100, 2, 28, 0, 0, 0));
        assert_eq!(at(4_107_542_400_000), (2100, 3, 1, 0, 0, 0));
    }

    #[test]
    fn ends_of_years_and_months() {
        assert_eq!(at(1_798_761_599_999), (2026, 12, 31, 23, 59, 59));
        assert_eq!(at(1_798_761_600_000), (2027, 1, 1, 0, 0, 0));
        assert_eq!(at(1_796_048_748_000), (2026, 11, 30, 14, 25, 48));
        // 2^31 seconds: where a signed 32-bit time_t ends.
        assert_eq!(at(2_147_483_648_000), (2038, 1, 19, 3, 14, 8));
    }

    #[test]
    fn the_largest_instant_does_not_overflow() {
        let t = UtcDateTime::from_unix_ms(u64::MAX);
        assert!(t.year > 500_000_000, "{t:?}");
        assert!((1..=12).contains(&t.month) && (1..=31).contains(&t.day));
    }

    #[test]
    fn now_is_after_this_code_was_written() {
        assert!(now_unix_ms() > 1_767_225_600_000, "after 2026-01-01");
    }
}
