//! [`Replay`]: what a run's journal says, read once and indexed for the loop.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use harnessx_agent::budget::{Limit, ModelPrice, RunLimits, UsageByModel};
use harnessx_agent::model::{ModelError, Usage};
use harnessx_agent::output::OutputSpec;
use harnessx_agent::{NeedsInput, NeedsInputKind};
use harnessx_core::hooks::{Blocked, PromptOutcome, ResponseOutcome};
use harnessx_core::{ApprovalDecision, ToolResult};

use super::fork::ForkedFrom;
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
    pub(super) answers: HashMap<String, String>,
    /// What the pre hooks decided, by call id, with the hash of the arguments.
    pub(super) hooks: HashMap<String, (String, harnessx_core::hooks::PreOutcome)>,
    /// What the `user_prompt` hooks decided.
    pub(super) prompt_hook: Option<PromptOutcome>,
    /// What the `model_response` hooks decided, by turn.
    pub(super) response_hooks: HashMap<u32, ResponseOutcome>,
    /// The hook that ended the run, and why.
    pub(super) blocked: Option<Blocked>,
    pub(super) paused: Vec<NeedsInput>,
    /// Calls that paused for a person mid-run (a login, a server's question) and have
    /// not started again since: each runs again on resume once its need is met.
    pub(super) again: HashMap<String, NeedsInput>,
    /// The answers given to the server's questions of each such call, in order (MCP
    /// elicitation results, compact JSON).
    pub(super) elicited: HashMap<String, Vec<String>>,
    /// The calls in `again` whose last question has its answer.
    pub(super) answered: HashSet<String>,
    /// The run whose conversation this one continues.
    pub(super) continues: Option<String>,
    /// The run this one was forked from, and at which turn.
    pub(super) forked: Option<ForkedFrom>,
    /// What specialists used, by call id.
    pub(super) usage: HashMap<String, UsageByModel>,
    /// The last limit the run stopped at, with the usage it had there.
    pub(super) limit: Option<(Limit, Usage)>,
    /// What a typed run must answer.
    pub(super) output: Option<OutputSpec>,
    /// The run's own limits (those set replace the agent's), when it was given some.
    pub(super) limits: Option<RunLimits>,
    /// The run's own model price, when it was given one.
    pub(super) price: Option<ModelPrice>,
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
                    s.again.remove(call_id);
                    s.answered.remove(call_id);
                }
                Entry::CallResult { result, usage, .. } => {
                    s.results.insert(result.call_id.clone(), result.clone());
                    if !usage.is_empty() {
                        s.usage.insert(result.call_id.clone(), usage.clone());
                    }
                }
                Entry::Approval { call_id, decision, arguments_hash, .. } => {
                    s.decisions.insert(call_id.clone(), (arguments_hash.clone(), decision.clone()));
                }
                Entry::Hook { call_id, arguments_hash, outcome } => {
                    s.hooks.insert(call_id.clone(), (arguments_hash.clone(), outcome.clone()));
                }
                Entry::PromptHook { outcome } => s.prompt_hook = Some(outcome.clone()),
                Entry::ResponseHook { turn, outcome } => {
                    s.response_hooks.insert(*turn, outcome.clone());
                }
                Entry::Blocked { hook, message } => {
                    s.blocked = Some(Blocked { hook: hook.clone(), message: message.clone() });
                }
                Entry::Answer { call_id, text } => {
                    if s.again.get(call_id).is_some_and(|n| n.kind == NeedsInputKind::Elicitation) {
                        s.elicited.entry(call_id.clone()).or_default().push(text.clone());
                        s.answered.insert(call_id.clone());
                    } else {
                        s.answers.insert(call_id.clone(), text.clone());
                    }
                }
                Entry::Paused { needs_input } => {
                    s.paused = serde_json::from_value(needs_input.clone()).unwrap_or_default();
                    for need in &s.paused {
                        if matches!(need.kind, NeedsInputKind::Auth | NeedsInputKind::Elicitation) {
                            // It stopped short: not started, as far as a resume goes.
                            s.started.remove(&need.call_id);
                            s.answered.remove(&need.call_id);
                            s.again.insert(need.call_id.clone(), need.clone());
                        }
                    }
                }
                Entry::Continues { run_id } => s.continues = Some(run_id.clone()),
                Entry::Forked { run_id, turn } => {
                    s.forked = Some(ForkedFrom { run_id: run_id.clone(), turn: *turn });
                }
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
                Entry::Limits { limits, price } => {
                    s.limits = Some(s.limits.take().unwrap_or_default().with(limits));
                    if price.is_some() {
                        s.price = *price;
                    }
                }
                Entry::Final { .. } | Entry::Failed { .. } => {}
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use harnessx_agent::NeedsInputKind;
    use serde_json::json;

    use super::*;

    fn at(seq: u64, entry: Entry) -> JournalEntry {
        JournalEntry { seq, at_ms: 0, entry }
    }

    fn read(entries: Vec<Entry>) -> Replay {
        let entries: Vec<JournalEntry> = entries.into_iter().zip(1..).map(|(e, seq)| at(seq, e)).collect();
        Replay::new(&entries)
    }

    #[test]
    fn responses_starts_and_results_are_indexed_by_turn_and_call() {
        let mut spent = UsageByModel::new();
        spent.insert("sub".into(), Usage { input_tokens: 7, ..Usage::default() });
        let replay = read(vec![
            Entry::ModelResponse { turn: 1, response: json!({"content": "one"}) },
            Entry::CallStart {
                turn: 1,
                call_id: "c1".into(),
                tool: "t".into(),
                replay: "safe".into(),
                idempotency_key: "r/c1".into(),
            },
            Entry::CallStart {
                turn: 1,
                call_id: "c2".into(),
                tool: "t".into(),
                replay: "manual".into(),
                idempotency_key: "r/c2".into(),
            },
            Entry::CallResult {
                turn: 1,
                result: ToolResult::error("c1", "t", "no"),
                timed_out: false,
                usage: spent.clone(),
            },
            Entry::ModelResponse { turn: 2, response: json!({"content": "two"}) },
        ]);
        assert_eq!(replay.responses.len(), 2);
        assert_eq!(replay.responses[&2]["content"], "two");
        assert_eq!(replay.started, HashSet::from(["c1".to_owned(), "c2".to_owned()]));
        assert_eq!(replay.results.keys().collect::<Vec<_>>(), ["c1"], "c2 started and has no result");
        assert_eq!(replay.usage.get("c1"), Some(&spent));
    }

    #[test]
    fn every_decision_is_kept_with_the_hash_of_the_arguments_it_was_made_on() {
        let replay = read(vec![
            Entry::Approval {
                call_id: "c1".into(),
                tool: "write".into(),
                decision: ApprovalDecision::ApproveForSession,
                arguments_hash: Some("h1".into()),
            },
            // A decision from before decisions were bound to arguments grants nothing.
            Entry::Approval {
                call_id: "c2".into(),
                tool: "delete".into(),
                decision: ApprovalDecision::ApproveForSession,
                arguments_hash: None,
            },
            Entry::Approval {
                call_id: "c3".into(),
                tool: "edit".into(),
                decision: ApprovalDecision::Approve,
                arguments_hash: Some("h3".into()),
            },
        ]);
        assert_eq!(replay.decisions.len(), 3);
        assert_eq!(replay.decisions["c3"], (Some("h3".to_owned()), ApprovalDecision::Approve));
    }

    #[test]
    fn the_last_pause_and_the_last_limit_are_what_the_run_waits_on() {
        let need = |call: &str| json!([{"kind": "approval", "call_id": call, "tool": "t", "arguments": "{}", "reason": "asks"}]);
        let usage = Usage { requests: 2, ..Usage::default() };
        let replay = read(vec![
            Entry::Paused { needs_input: need("c1") },
            Entry::Answer { call_id: "c0".into(), text: "it was sent".into() },
            Entry::Paused { needs_input: need("c2") },
            Entry::LimitReached { limit: Limit::Turns, usage: Usage::default() },
            Entry::LimitReached { limit: Limit::ToolCalls, usage },
        ]);
        assert_eq!(replay.paused.len(), 1);
        assert_eq!(
            (replay.paused[0].kind, replay.paused[0].call_id.as_str()),
            (NeedsInputKind::Approval, "c2")
        );
        assert_eq!(replay.answers["c0"], "it was sent");
        assert_eq!(replay.limit, Some((Limit::ToolCalls, usage)));
    }

    #[test]
    fn the_runs_own_limits_are_each_entrys_changes_over_the_last_and_its_price_the_last_given() {
        assert_eq!((read(Vec::new()).limits, read(Vec::new()).price), (None, None), "the agent's");
        let (cheap, dear) = (ModelPrice::new(1.0, 2.0), ModelPrice::new(3.0, 4.0));
        let limits = |calls: Option<u64>, tokens: Option<u64>| RunLimits {
            max_tool_calls: calls,
            max_tokens: tokens,
            ..RunLimits::default()
        };
        let replay = read(vec![
            Entry::Limits { limits: limits(Some(1), Some(100)), price: Some(cheap) },
            Entry::Limits { limits: limits(Some(5), None), price: None },
        ]);
        assert_eq!((replay.limits, replay.price), (Some(limits(Some(5), Some(100))), Some(cheap)));
        let replay = read(vec![
            Entry::Limits { limits: limits(Some(1), None), price: Some(cheap) },
            Entry::Limits { limits: RunLimits::default(), price: Some(dear) },
        ]);
        assert_eq!((replay.limits, replay.price), (Some(limits(Some(1), None)), Some(dear)));
    }

    #[test]
    fn run_hook_decisions_are_kept_by_turn_with_the_block() {
        let stop = Blocked { hook: "watch".into(), message: "leak".into() };
        let replay = read(vec![
            Entry::PromptHook { outcome: PromptOutcome::default() },
            Entry::ResponseHook { turn: 1, outcome: ResponseOutcome::default() },
            Entry::ResponseHook { turn: 2, outcome: ResponseOutcome { stopped: Some(stop.clone()) } },
            Entry::Blocked { hook: "watch".into(), message: "leak".into() },
        ]);
        assert_eq!(replay.prompt_hook, Some(PromptOutcome::default()));
        assert_eq!(replay.response_hooks[&2].stopped.as_ref(), Some(&stop));
        assert_eq!(replay.response_hooks.len(), 2);
        assert_eq!(replay.blocked, Some(stop));
        assert!(read(Vec::new()).prompt_hook.is_none());
    }

    #[test]
    fn an_unreadable_pause_waits_for_nothing_rather_than_failing_the_read() {
        let replay = read(vec![Entry::Paused { needs_input: json!({"not": "a list"}) }]);
        assert!(replay.paused.is_empty());
    }

    #[test]
    fn overflows_summaries_output_and_the_conversation_link_are_kept() {
        let entries = vec![
            Entry::Continues { run_id: "r0".into() },
            Entry::Forked { run_id: "r9".into(), turn: 2 },
            Entry::ContextOverflow { turn: 3, message: "too long".into(), limit: Some(100), requested: None },
            Entry::Compaction { turn: 3, attempt: 1, response: json!({"content": "summary"}) },
        ];
        let replay = read(entries.clone());
        assert_eq!(replay.continues.as_deref(), Some("r0"));
        assert_eq!(replay.forked, Some(ForkedFrom { run_id: "r9".into(), turn: 2 }));
        assert!(matches!(
            &replay.overflows[&3],
            ModelError::ContextWindow { message, limit: Some(100), requested: None } if message == "too long"
        ));
        assert_eq!(replay.summaries[&(3, 1)]["content"], "summary");
        assert!(replay.output.is_none());
        let journal: Vec<JournalEntry> = entries.into_iter().zip(1..).map(|(e, seq)| at(seq, e)).collect();
        assert_eq!(continues(&journal).as_deref(), Some("r0"));
        assert_eq!(continues(&journal[1..]), None);
        assert!(read(Vec::new()).forked.is_none());
    }
}
