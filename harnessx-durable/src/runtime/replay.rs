//! [`Replay`]: what a run's journal says, read once and indexed for the loop.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use harnessx_agent::NeedsInput;
use harnessx_agent::budget::{Limit, UsageByModel};
use harnessx_agent::model::{ModelError, Usage};
use harnessx_agent::output::OutputSpec;
use harnessx_core::{ApprovalDecision, ToolResult};

use crate::journal::{Entry, JournalEntry};

/// What a run's journal says, indexed for the loop.
#[derive(Default)]
pub(super) struct Replay {
    pub(super) responses: HashMap<u32, Value>,
    /// Context-length refusals by turn, each replayed once.
    pub(super) overflows: HashMap<u32, ModelError>,
    /// Compaction summaries by (turn, attempt).
    pub(super) summaries: HashMap<(u32, u32), Value>,
    pub(super) started: HashSet<String>,
    pub(super) results: HashMap<String, ToolResult>,
    /// Decisions by call id, with the hash of the arguments they were made on.
    pub(super) decisions: HashMap<String, (Option<String>, ApprovalDecision)>,
    pub(super) session_grants: Vec<String>,
    pub(super) answers: HashMap<String, String>,
    pub(super) paused: Vec<NeedsInput>,
    /// The run whose conversation this one continues.
    pub(super) continues: Option<String>,
    /// What specialists used, by call id.
    pub(super) usage: HashMap<String, UsageByModel>,
    /// The last limit the run stopped at, with the usage it had there.
    pub(super) limit: Option<(Limit, Usage)>,
    /// What a typed run must answer.
    pub(super) output: Option<OutputSpec>,
}

/// The run a run's journal says it continues.
pub(super) fn continues(entries: &[JournalEntry]) -> Option<String> {
    entries.iter().find_map(|e| match &e.entry {
        Entry::Continues { run_id } => Some(run_id.clone()),
        _ => None,
    })
}

impl Replay {
    pub(super) fn new(entries: &[JournalEntry]) -> Self {
        let mut s = Self::default();
        for e in entries {
            match &e.entry {
                Entry::ModelResponse { turn, response } => {
                    s.responses.insert(*turn, response.clone());
                }
                Entry::CallStart { call_id, .. } => {
                    s.started.insert(call_id.clone());
                }
                Entry::CallResult { result, usage, .. } => {
                    s.results.insert(result.call_id.clone(), result.clone());
                    if !usage.is_empty() {
                        s.usage.insert(result.call_id.clone(), usage.clone());
                    }
                }
                Entry::Approval { call_id, tool, decision, arguments_hash } => {
                    s.decisions.insert(call_id.clone(), (arguments_hash.clone(), decision.clone()));
                    if decision.grants_session() && arguments_hash.is_some() {
                        s.session_grants.push(tool.clone());
                    }
                }
                Entry::Answer { call_id, text } => {
                    s.answers.insert(call_id.clone(), text.clone());
                }
                Entry::Paused { needs_input } => {
                    s.paused = serde_json::from_value(needs_input.clone()).unwrap_or_default();
                }
                Entry::Continues { run_id } => s.continues = Some(run_id.clone()),
                Entry::ContextOverflow { turn, message, limit, requested } => {
                    let error = ModelError::ContextWindow {
                        message: message.clone(),
                        limit: *limit,
                        requested: *requested,
                    };
                    s.overflows.insert(*turn, error);
                }
                Entry::Compaction { turn, attempt, response } => {
                    s.summaries.insert((*turn, *attempt), response.clone());
                }
                Entry::LimitReached { limit, usage } => s.limit = Some((*limit, *usage)),
                Entry::Output { output } => s.output = Some(output.clone()),
                Entry::Final { .. } | Entry::Failed { .. } => {}
            }
        }
        s
    }
}
