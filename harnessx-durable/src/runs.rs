//! What a durable run is started or resumed with besides its prompt, on every backend.

use harnessx_agent::budget::{ModelPrice, RunLimits};
use harnessx_agent::output::Output;

/// What a run brings besides its prompt. The limits and price are the run's own: journaled
/// with it (SQLite) or carried by it (Restate), they hold on every resume, whichever
/// agent or worker drives it.
#[derive(Clone, Default)]
pub struct StartOptions {
    /// What a typed run must answer (`None`: free text). See
    /// [`AgentRuntime::start_with_output`](crate::AgentRuntime::start_with_output).
    pub output: Option<Output>,
    /// The run's limits: those set replace the agent's
    /// ([`AgentConfig::limits`](harnessx_agent::AgentConfig::limits)).
    pub limits: Option<RunLimits>,
    /// The model's price in place of the agent's, for the run's cost and a cost limit.
    pub price: Option<ModelPrice>,
}

impl std::fmt::Debug for StartOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartOptions")
            .field("output", &self.output.as_ref().map(|_| "Output"))
            .field("limits", &self.limits)
            .field("price", &self.price)
            .finish()
    }
}

/// What a resume changes: higher (or other) limits, those set replacing the run's, and
/// another model price. Both are the run's from then on; nothing set keeps what it had.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResumeOptions {
    /// The limits set replace the run's (see [`RunLimits::with`]).
    pub limits: RunLimits,
    /// The model's price from now on, in place of the run's.
    pub price: Option<ModelPrice>,
}

impl ResumeOptions {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.limits.is_empty() && self.price.is_none()
    }
}
