#![doc = include_str!("../README.md")]
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod agent;
pub mod budget;
mod builder;
pub mod config;
pub mod context;
mod error;
pub mod events;
mod front_matter;
pub mod knowledge;
pub mod model;
pub mod output;
pub mod planning;
mod prompt;
pub mod run;
pub mod skills;
pub mod spans;
pub mod specialist;
#[cfg(feature = "otel")]
pub mod telemetry;
pub mod testing;

pub use agent::Agent;
pub use budget::{Limit, ModelPrice, RunLimits};
pub use builder::AgentBuilder;
pub use config::AgentConfig;
pub use context::{ContextPolicy, Summarizer};
pub use error::AgentError;
pub use events::AgentEvent;
pub use knowledge::{Knowledge, KnowledgeError, KnowledgeSource};
pub use model::{ParseToolChoiceError, ToolChoice};
pub use output::{Output, OutputError, OutputMode};
pub use planning::{PLANNING_PROMPT_LINE, PlanningState};
pub use prompt::Prompt;
pub use run::engine::{Start, drive};
pub use run::recovery::{Recovery, Unknown};
pub use run::state::{NeedsInput, NeedsInputKind, RunOutcome, RunResult, RunState, RunStatus};
pub use run::steps::{Answer, Executed, Recorded, Steps};
pub use run::{Events, RunStream, call_ids_for_turn, history_safe};
#[cfg(feature = "mcp")]
pub use skills::SkillPrompts;
pub use skills::{SKILL_TOOL_NAME, Skill, SkillError, SkillSource};
pub use specialist::SubAgent;
