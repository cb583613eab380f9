//! Execution-policy values attached to a tool: replay policy, retry, registry-wide policy.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::backoff::Backoff;
use crate::error::ParsePolicyError;

/// The built-in per-call timeout, in seconds, used when neither the tool, the registry
/// nor the agent's [`ToolPolicy`] sets one.
pub const DEFAULT_TOOL_TIMEOUT_SECONDS: f64 = 25.0;

/// Whether an interrupted or failed call may be repeated.
///
/// Retries ([`ToolRetry`]) only ever apply to [`Safe`](ReplayPolicy::Safe) and
/// [`Idempotent`](ReplayPolicy::Idempotent) tools; a durable runtime stops for recovery
/// when a [`Manual`](ReplayPolicy::Manual) tool's outcome is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ReplayPolicy {
    /// Repeating the operation is harmless (a read, a pure computation).
    Safe,
    /// The integration enforces idempotency (an idempotency key, a conditional write).
    Idempotent,
    /// The outcome of an interrupted call must be checked by someone. The default.
    #[default]
    Manual,
}

impl ReplayPolicy {
    /// All values, in the order they are listed in messages.
    pub const ALL: [ReplayPolicy; 3] = [Self::Safe, Self::Idempotent, Self::Manual];

    /// The policy as the plain string the spec uses (`"safe"`, `"idempotent"`, `"manual"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Safe => "safe",
            Self::Idempotent => "idempotent",
            Self::Manual => "manual",
        }
    }

    /// Whether [`ToolRetry`] may repeat a call of a tool with this policy.
    pub fn allows_retry(self) -> bool {
        matches!(self, Self::Safe | Self::Idempotent)
    }
}

impl fmt::Display for ReplayPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ReplayPolicy {
    type Err = ParsePolicyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| ParsePolicyError::new("replay policy", s, "safe, idempotent, manual"))
    }
}

impl serde::Serialize for ReplayPolicy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for ReplayPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// How a `safe` or `idempotent` tool is retried when its handler returns a
/// [`TransientToolError`](crate::TransientToolError) or its `retry_if_result` predicate asks
/// for another attempt.
///
/// `ToolRetry::default()` makes at most 3 attempts, waiting 0.5 s, then 1 s (doubling,
/// capped at 10 s). This is separate from the model's retry policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToolRetry {
    /// Total attempts including the first one. `1` disables retrying.
    pub max_attempts: u32,
    /// Delay before the second attempt, in seconds.
    pub initial_delay_seconds: f64,
    /// Factor applied to the delay after each retry.
    pub backoff_multiplier: f64,
    /// Upper bound for any single delay, in seconds.
    pub max_delay_seconds: f64,
}

impl Default for ToolRetry {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl ToolRetry {
    /// [`ToolRetry::default()`], as a constant.
    pub const DEFAULT: ToolRetry = ToolRetry {
        max_attempts: 3,
        initial_delay_seconds: 0.5,
        backoff_multiplier: 2.0,
        max_delay_seconds: 10.0,
    };

    /// A policy of `max_attempts` attempts with no delay between them (useful in tests).
    pub fn immediate(max_attempts: u32) -> Self {
        Self { max_attempts, initial_delay_seconds: 0.0, backoff_multiplier: 1.0, max_delay_seconds: 0.0 }
    }

    /// A policy that never retries.
    pub fn never() -> Self {
        Self::immediate(1)
    }

    /// The delay before attempt number `next_attempt` (2 for the first retry):
    /// [`backoff`](Self::backoff)'s wait after `next_attempt - 2` earlier ones.
    pub fn delay_before(&self, next_attempt: u32) -> Duration {
        self.backoff().delay(next_attempt.saturating_sub(2))
    }

    /// The waits between attempts as a [`Backoff`]. A `max_delay_seconds` below
    /// `initial_delay_seconds` does not shorten the first wait (the cap is the larger).
    pub fn backoff(&self) -> Backoff {
        let initial = duration_from_secs(self.initial_delay_seconds);
        let max = duration_from_secs(self.max_delay_seconds).max(initial);
        Backoff::new(initial, self.backoff_multiplier, max)
    }
}

/// Registry-wide tool options, as carried by `AgentConfig::tools` or given to
/// [`ToolRegistry::with_policy`](crate::ToolRegistry::with_policy).
///
/// Every field is optional: an unset field falls through to the next source. Precedence,
/// highest first: the registry's own policy, the agent's policy, then the built-in default
/// ([`DEFAULT_TOOL_TIMEOUT_SECONDS`], no deduplication, `ToolRetry::default()`). Tools with
/// their own timeout or retry keep them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolPolicy {
    /// Per-call timeout for tools that do not declare their own, in seconds.
    pub default_timeout_seconds: Option<f64>,
    /// Return the first result for identical repeated calls within one run.
    pub dedupe_calls: Option<bool>,
    /// Retry policy for `safe`/`idempotent` tools without their own.
    pub retry: Option<ToolRetry>,
    /// The most characters of a tool result the model gets (default
    /// [`DEFAULT_MAX_RESULT_CHARS`](crate::engine::cap::DEFAULT_MAX_RESULT_CHARS), 40,000):
    /// applied to every tool, built-in, user or MCP, after the tool's own limits. A longer
    /// result keeps its head and tail around a marker line (see
    /// [`engine::cap`](crate::engine::cap)). Values below
    /// [`MIN_RESULT_CHARS`](crate::engine::cap::MIN_RESULT_CHARS) are raised to it.
    pub max_result_chars: Option<usize>,
}

impl ToolPolicy {
    /// Values of `self`, with unset ones taken from `fallback`.
    pub fn or(&self, fallback: &ToolPolicy) -> ToolPolicy {
        ToolPolicy {
            default_timeout_seconds: self.default_timeout_seconds.or(fallback.default_timeout_seconds),
            dedupe_calls: self.dedupe_calls.or(fallback.dedupe_calls),
            retry: self.retry.or(fallback.retry),
            max_result_chars: self.max_result_chars.or(fallback.max_result_chars),
        }
    }

    /// Resolves the unset values to the built-in defaults.
    pub fn effective(&self) -> EffectivePolicy {
        EffectivePolicy {
            default_timeout_seconds: self.default_timeout_seconds.unwrap_or(DEFAULT_TOOL_TIMEOUT_SECONDS),
            dedupe_calls: self.dedupe_calls.unwrap_or(false),
            retry: self.retry.unwrap_or_default(),
            max_result_chars: self.max_result_chars.unwrap_or(crate::engine::cap::DEFAULT_MAX_RESULT_CHARS),
        }
    }
}

/// The values a registry actually uses, as shown by
/// [`ToolRegistry::policy`](crate::ToolRegistry::policy).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EffectivePolicy {
    /// Timeout for tools without their own, in seconds.
    pub default_timeout_seconds: f64,
    /// Whether identical calls within one run are deduplicated.
    pub dedupe_calls: bool,
    /// Retry policy for tools without their own.
    pub retry: ToolRetry,
    /// The most characters of a result the model gets.
    pub max_result_chars: usize,
}

/// Converts seconds to a [`Duration`], clamping negative, NaN and huge values.
pub fn duration_from_secs(secs: f64) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        Duration::ZERO
    } else {
        Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_policy_parses_plain_strings() {
        assert_eq!("safe".parse::<ReplayPolicy>().unwrap(), ReplayPolicy::Safe);
        assert_eq!("IDEMPOTENT".parse::<ReplayPolicy>().unwrap(), ReplayPolicy::Idempotent);
        let err = "sometimes".parse::<ReplayPolicy>().unwrap_err().to_string();
        assert_eq!(err, "invalid replay policy \"sometimes\": expected one of safe, idempotent, manual");
        assert_eq!(ReplayPolicy::default().to_string(), "manual");
    }

    #[test]
    fn retry_delays_back_off_and_cap() {
        let r = ToolRetry {
            max_attempts: 5,
            initial_delay_seconds: 1.0,
            backoff_multiplier: 3.0,
            max_delay_seconds: 5.0,
        };
        assert_eq!(r.delay_before(2), Duration::from_secs(1));
        assert_eq!(r.delay_before(3), Duration::from_secs(3));
        assert_eq!(r.delay_before(4), Duration::from_secs(5));
        assert_eq!(ToolRetry::immediate(3).delay_before(3), Duration::ZERO);
        let default: Vec<Duration> = (2..=6).map(|n| ToolRetry::DEFAULT.delay_before(n)).collect();
        assert_eq!(default, [0.5, 1.0, 2.0, 4.0, 8.0].map(Duration::from_secs_f64), "0.5 s, doubling");
        assert_eq!(ToolRetry::DEFAULT.delay_before(7), Duration::from_secs(10), "capped at 10 s");
    }

    #[test]
    fn a_cap_below_the_first_retry_delay_keeps_that_delay() {
        let r = ToolRetry { initial_delay_seconds: 2.0, max_delay_seconds: 1.0, ..ToolRetry::DEFAULT };
        assert_eq!((r.delay_before(2), r.delay_before(5)), (Duration::from_secs(2), Duration::from_secs(2)));
    }

    #[test]
    fn policy_precedence_fills_unset_values_only() {
        let explicit = ToolPolicy { default_timeout_seconds: Some(60.0), ..Default::default() };
        let agent =
            ToolPolicy { default_timeout_seconds: Some(5.0), dedupe_calls: Some(true), ..Default::default() };
        let eff = explicit.or(&agent).effective();
        assert_eq!(eff.default_timeout_seconds, 60.0);
        assert!(eff.dedupe_calls);
        assert_eq!(eff.retry, ToolRetry::default());
        assert_eq!(ToolPolicy::default().effective().default_timeout_seconds, DEFAULT_TOOL_TIMEOUT_SECONDS);
    }
}
