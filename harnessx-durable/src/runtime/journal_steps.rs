//! [`JournalSteps`]: the [`Steps`] of a run journaled in a [`JournalStore`], the seam
//! the one loop (`harnessx_agent::drive`) calls for a SQLite or in-memory run.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use harnessx_agent::budget::{Limit, RunLimits, UsageByModel, UsageSink};
use harnessx_agent::model::{ModelError, ModelRequest, ModelResponse, Usage};
use harnessx_agent::run::recovery;
use harnessx_agent::{
    Agent, AgentError, Events, Executed, NeedsInput, NeedsInputKind, Recorded, Recovery, Steps, Unknown,
    spans,
};
use harnessx_core::hooks::{Blocked, ModelTurn, PromptOutcome, ResponseOutcome, RunUsage, UserPrompt};
use harnessx_core::{
    ApprovalDecision, ApprovalRequest, PlannedBatch, ReplayPolicy, RunContext, RunHooks, ToolCall, ToolResult,
};

use super::error::DurableError;
use super::fingerprint::arguments_hash;
use super::group_commit::GroupCommit;
use super::replay::Replay;
use crate::journal::{Entry, JournalEntry, JournalError, JournalStore, RunStatus};

/// The steps of a run journaled in a [`JournalStore`]: every response committed as it
/// arrives, every decision before its call runs, every start before its handler.
pub(super) struct JournalSteps {
    pub(super) run_id: String,
    pub(super) journal: Arc<dyn JournalStore>,
    pub(super) replay: Replay,
    /// Entries that go with the next commit (results the loop settled).
    pub(super) pending: Vec<Entry>,
    /// Replaying a completed run for its messages: everything must come from the
    /// journal; nothing is written, asked or run.
    pub(super) read_only: bool,
}

impl JournalSteps {
    pub(super) fn read_only(run_id: &str, journal: Arc<dyn JournalStore>, entries: &[JournalEntry]) -> Self {
        Self {
            run_id: run_id.to_owned(),
            journal,
            replay: Replay::new(entries),
            pending: Vec::new(),
            read_only: true,
        }
    }

    /// The error of a replay that would have to do something live.
    fn not_journaled(&self, what: &str) -> DurableError {
        DurableError::Conversation(format!(
            "run {:?} does not replay from its journal ({what} is not journaled)",
            self.run_id
        ))
    }

    fn commit(
        &mut self,
        mut entries: Vec<Entry>,
        status: Option<(RunStatus, Option<String>)>,
    ) -> Result<(), DurableError> {
        if self.read_only {
            self.pending.clear();
            return Ok(());
        }
        let mut all = std::mem::take(&mut self.pending);
        all.append(&mut entries);
        if all.is_empty() && status.is_none() {
            return Ok(());
        }
        self.journal.append(&self.run_id, &all, status)?;
        Ok(())
    }
}

impl Steps for JournalSteps {
    type Error = DurableError;

    fn run_id(&self) -> Option<&str> {
        Some(&self.run_id)
    }

    async fn response(
        &mut self,
        agent: &Agent,
        turn: u32,
        request: &ModelRequest,
        events: Option<&Events>,
    ) -> Result<ModelResponse, DurableError> {
        // A journaled refusal of this turn's first request comes first: the loop then
        // compacts as it did, and asks again (the recorded response below).
        if let Some(refusal) = self.replay.overflows.remove(&turn) {
            return Err(AgentError::Model(refusal).into());
        }
        if let Some(recorded) = self.replay.responses.get(&turn) {
            let response: ModelResponse = serde_json::from_value(recorded.clone()).map_err(|e| {
                JournalError::Storage(format!(
                    "run {:?}: the model response of turn {turn} cannot be read: {e}",
                    self.run_id
                ))
            })?;
            if let Some(model) = agent.model() {
                spans::replayed_chat(&**model, request, turn, &response);
            }
            return Ok(response);
        }
        if self.read_only {
            return Err(self.not_journaled(&format!("the model response of turn {turn}")));
        }
        let response = match agent.request_turn(request, events, turn).await {
            Err(AgentError::Model(ModelError::ContextWindow { message, limit, requested })) => {
                // Journaled, so a resume compacts as this run is about to.
                let entry = Entry::ContextOverflow { turn, message: message.clone(), limit, requested };
                self.commit(vec![entry], None)?;
                return Err(AgentError::Model(ModelError::ContextWindow { message, limit, requested }).into());
            }
            other => other?,
        };
        // Committed as it arrives, before anything is asked or run: a crash after this
        // never asks the model for this turn again.
        let entry = Entry::ModelResponse {
            turn,
            response: serde_json::to_value(&response).expect("a response serialises"),
        };
        self.commit(vec![entry], Some((RunStatus::Running, None)))?;
        Ok(response)
    }

    async fn summary(
        &mut self,
        agent: &Agent,
        turn: u32,
        attempt: u32,
        request: &ModelRequest,
    ) -> Result<ModelResponse, DurableError> {
        if let Some(recorded) = self.replay.summaries.get(&(turn, attempt)) {
            return serde_json::from_value(recorded.clone()).map_err(|e| {
                JournalError::Storage(format!(
                    "run {:?}: the compaction summary of turn {turn} cannot be read: {e}",
                    self.run_id
                ))
                .into()
            });
        }
        if self.read_only {
            return Err(self.not_journaled(&format!("the compaction summary of turn {turn}")));
        }
        let response = agent.summarize(request, turn).await?;
        let entry = Entry::Compaction {
            turn,
            attempt,
            response: serde_json::to_value(&response).expect("a response serialises"),
        };
        self.commit(vec![entry], None)?;
        Ok(response)
    }

    fn context_overflow(&self, error: &DurableError) -> Option<ModelError> {
        match error {
            DurableError::Agent(AgentError::Model(e @ ModelError::ContextWindow { .. })) => Some(e.clone()),
            _ => None,
        }
    }

    fn replays_response(&self, turn: u32) -> bool {
        self.replay.responses.contains_key(&turn)
    }

    fn recorded(&self, call_id: &str) -> Recorded<'_> {
        if let Some(result) = self.replay.results.get(call_id) {
            Recorded::Result(result)
        } else if let Some(need) = self.replay.again.get(call_id) {
            let answers = self.replay.elicited.get(call_id).map_or(&[][..], Vec::as_slice);
            match need.kind {
                NeedsInputKind::Elicitation if !self.replay.answered.contains(call_id) => {
                    Recorded::Awaits(need)
                }
                _ => Recorded::Again(answers),
            }
        } else if let Some(text) = self.replay.answers.get(call_id) {
            Recorded::Answer(text)
        } else if self.replay.started.contains(call_id) {
            Recorded::Started
        } else {
            Recorded::Nothing
        }
    }

    fn recorded_usage(&self, call_id: &str) -> Option<&UsageByModel> {
        self.replay.usage.get(call_id)
    }

    fn recorded_decision(&self, call_id: &str, arguments: &str) -> Option<ApprovalDecision> {
        let (hash, decision) = self.replay.decisions.get(call_id)?;
        (hash.as_deref() == Some(arguments_hash(arguments).as_str())).then(|| decision.clone())
    }

    async fn pre_hooks(
        &mut self,
        agent: &Agent,
        call: &ToolCall,
        tool: &str,
        arguments: &serde_json::Value,
        usage: RunUsage,
    ) -> Result<harnessx_core::hooks::PreOutcome, DurableError> {
        let hash = arguments_hash(&call.arguments);
        if let Some((recorded, outcome)) = self.replay.hooks.get(&call.id)
            && *recorded == hash
        {
            return Ok(outcome.clone());
        }
        if self.read_only {
            return Err(self.not_journaled(&format!("the hooks' decision on call {:?}", call.id)));
        }
        let asked = harnessx_core::hooks::PreToolUse {
            tool,
            call_id: &call.id,
            arguments,
            run_id: Some(&self.run_id),
            usage,
        };
        let outcome = agent.hooks().pre_tool_use(asked).await;
        // Committed with the batch's starts, before the call runs.
        self.replay.hooks.insert(call.id.clone(), (hash.clone(), outcome.clone()));
        self.pending.push(Entry::Hook {
            call_id: call.id.clone(),
            arguments_hash: hash,
            outcome: outcome.clone(),
        });
        Ok(outcome)
    }

    async fn user_prompt(
        &mut self,
        agent: &Agent,
        prompt: &str,
        usage: RunUsage,
    ) -> Result<PromptOutcome, DurableError> {
        if let Some(outcome) = &self.replay.prompt_hook {
            return Ok(outcome.clone());
        }
        // A journal from before the run had hooks (it made requests, or is replayed for
        // its messages): nothing was decided, and nothing is asked now.
        if self.read_only || !self.replay.responses.is_empty() {
            return Ok(PromptOutcome::default());
        }
        let asked = UserPrompt { prompt, run_id: Some(&self.run_id), usage };
        let outcome = agent.hooks().user_prompt(asked).await;
        // Committed before the first request: a resume applies it without asking again.
        self.commit(vec![Entry::PromptHook { outcome: outcome.clone() }], None)?;
        self.replay.prompt_hook = Some(outcome.clone());
        Ok(outcome)
    }

    async fn model_response(
        &mut self,
        agent: &Agent,
        turn: u32,
        text: &str,
        calls: &[ToolCall],
        usage: RunUsage,
    ) -> Result<ResponseOutcome, DurableError> {
        if let Some(outcome) = self.replay.response_hooks.get(&turn) {
            return Ok(outcome.clone());
        }
        if self.read_only {
            return Ok(ResponseOutcome::default());
        }
        let asked = ModelTurn { turn, text, tool_calls: calls, run_id: Some(&self.run_id), usage };
        let outcome = agent.hooks().model_response(asked).await;
        // Committed before any call of the response runs.
        self.commit(vec![Entry::ResponseHook { turn, outcome: outcome.clone() }], None)?;
        self.replay.response_hooks.insert(turn, outcome.clone());
        Ok(outcome)
    }

    async fn blocked(&mut self, _turn: u32, blocked: &Blocked) -> Result<(), DurableError> {
        let entry = Entry::Blocked { hook: blocked.hook.clone(), message: blocked.message.clone() };
        self.commit(vec![entry], Some((RunStatus::Blocked, Some(blocked.message.clone()))))
    }

    async fn run_end(&mut self, agent: &Agent, state: &harnessx_agent::RunState) -> Result<(), DurableError> {
        // A replay for the messages is no end of anything.
        if !self.read_only {
            agent.run_end_hooks(state).await;
        }
        Ok(())
    }

    async fn decide(
        &mut self,
        permissions: &harnessx_core::PermissionManager,
        request: ApprovalRequest,
        arguments: &str,
    ) -> Result<Option<ApprovalDecision>, DurableError> {
        if self.read_only {
            return Err(self.not_journaled(&format!("a decision on call {:?}", request.call_id)));
        }
        let Some(decision) = permissions.decision(&request).await else { return Ok(None) };
        let entry = Entry::Approval {
            call_id: request.call_id.clone(),
            tool: request.tool_name.clone(),
            decision: decision.clone(),
            arguments_hash: Some(arguments_hash(arguments)),
        };
        self.commit(vec![entry], None)?;
        self.replay.decisions.insert(request.call_id, (Some(arguments_hash(arguments)), decision.clone()));
        Ok(Some(decision))
    }

    fn record(&mut self, turn: u32, result: &ToolResult) {
        self.pending.push(Entry::CallResult {
            turn,
            result: result.clone(),
            timed_out: false,
            usage: UsageByModel::new(),
        });
    }

    async fn execute(
        &mut self,
        agent: &Agent,
        turn: u32,
        batch: PlannedBatch,
        ctx: &RunContext,
    ) -> Result<Vec<Executed>, DurableError> {
        let mut batch = batch;
        let mut calls: Vec<ToolCall> = Vec::with_capacity(batch.len());
        // The calls that have a result (settled: they do not run).
        let mut settled: HashSet<usize> = HashSet::new();
        let mut starts: Vec<Entry> = Vec::new();
        // Starts of serial calls queued behind another: committed when their turn comes.
        let mut deferred_starts: HashMap<usize, Entry> = HashMap::new();
        let mut policies: HashMap<usize, ReplayPolicy> = HashMap::new();
        let mut serial_seen = false;
        for planned in batch.iter_mut() {
            let index = planned.position();
            let call = planned.call();
            calls.push(call.clone());
            if planned.result().is_some() {
                settled.insert(index);
            } else if self.read_only {
                return Err(self.not_journaled(&format!("the result of call {:?}", call.id)));
            }
            let (Some(tool), Some(policy)) = (planned.tool(), planned.replay_policy()) else {
                continue;
            };
            let tool = tool.to_owned();
            policies.insert(index, policy);
            let key = harnessx_agent::run::recovery::idempotency_key(&self.run_id, &call.id);
            // (The loop gave the call this key.) Concurrent calls start together, and so does the first serial one: their
            // starts go in the batch commit. A serial call queued behind another commits
            // its start when its turn comes, so a crash before then does not leave it
            // looking started.
            let queued = !planned.is_concurrent() && std::mem::replace(&mut serial_seen, true);
            let start = Entry::CallStart {
                turn,
                call_id: call.id.clone(),
                tool,
                replay: policy.as_str().to_owned(),
                idempotency_key: key,
            };
            if queued {
                deferred_starts.insert(index, start);
            } else {
                starts.push(start);
            }
        }
        // The settled results and the starts of the batch: one commit.
        self.commit(starts, Some((RunStatus::Running, None)))?;
        let writer = GroupCommit::new(self.journal.clone(), self.run_id.clone());
        let unknown: Arc<Mutex<Vec<usize>>> = Arc::default();
        // What specialists report, journaled with their calls' results.
        let spent = UsageSink::new();
        let hooks = {
            let spent = spent.clone();
            let sink = writer.clone();
            let journal = self.journal.clone();
            let run = self.run_id.clone();
            let unknown = unknown.clone();
            let calls = calls.clone();
            // A durable run retries `safe` and `idempotent` calls that time out.
            RunHooks::new()
                .retry_timeouts(true)
                .on_start(move |i| {
                    // A call whose start was not in the batch commit: commit it now,
                    // before its handler runs.
                    if let Some(entry) = deferred_starts.get(&i)
                        && let Err(e) = journal.append(&run, std::slice::from_ref(entry), None)
                    {
                        tracing::error!(run = %run, error = %e, "journaling a call start failed");
                    }
                })
                .on_end(move |i, outcome| {
                    // A call that paused for a person runs again on resume: no result.
                    if settled.contains(&i) || outcome.paused.is_some() {
                        return;
                    }
                    if outcome.timed_out
                        && let Some(&policy) = policies.get(&i)
                        && let Recovery::Ask(_) = recovery::recover(
                            policy,
                            Unknown::TimedOut,
                            &calls[i].id,
                            &outcome.result.name,
                            &calls[i].arguments,
                        )
                    {
                        unknown.lock().unwrap_or_else(|e| e.into_inner()).push(i);
                        return;
                    }
                    sink.push(Entry::CallResult {
                        turn,
                        result: outcome.result.clone(),
                        timed_out: outcome.timed_out,
                        usage: spent.get(&outcome.result.call_id),
                    });
                })
        };
        let outcomes = spent.scope(agent.tools().run_planned(batch, ctx, &hooks)).await;
        drop(hooks);
        writer.flush().await?;
        let unknown = std::mem::take(&mut *unknown.lock().unwrap_or_else(|e| e.into_inner()));
        Ok(outcomes
            .into_iter()
            .enumerate()
            .map(|(i, o)| {
                let usage = spent.take(&o.result.call_id);
                Executed {
                    result: o.result,
                    unknown: unknown.contains(&i).then_some(Unknown::TimedOut),
                    paused: o.paused,
                    usage,
                }
            })
            .collect())
    }

    async fn pause(&mut self, _turn: u32, needs: &[NeedsInput]) -> Result<bool, DurableError> {
        if self.read_only {
            return Err(self.not_journaled("an answer it waited for"));
        }
        let entry = Entry::Paused { needs_input: serde_json::to_value(needs).expect("serialises") };
        self.commit(vec![entry], Some((RunStatus::NeedsInput, None)))?;
        Ok(false)
    }

    async fn limit_reached(
        &mut self,
        _turn: u32,
        limit: Limit,
        _limits: &RunLimits,
        usage: &Usage,
    ) -> Result<Option<RunLimits>, DurableError> {
        // Stops here; `resume` under a higher limit goes on from the journal.
        let entry = Entry::LimitReached { limit, usage: *usage };
        self.commit(vec![entry], Some((RunStatus::LimitReached, None)))?;
        Ok(None)
    }

    async fn finish(&mut self, output: &str) -> Result<(), DurableError> {
        let entry = Entry::Final { output: output.to_owned() };
        self.commit(vec![entry], Some((RunStatus::Completed, Some(output.to_owned()))))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::journal::RunRecord;
    use crate::memory::MemoryJournal;

    fn journal() -> Arc<dyn JournalStore> {
        let journal = MemoryJournal::new();
        journal
            .create_run(&RunRecord {
                run_id: "r".into(),
                prompt: "p".into(),
                prompt_parts: Default::default(),
                fingerprint: String::new(),
                fingerprint_summary: String::new(),
                status: RunStatus::Running,
                created_at_ms: 0,
                updated_at_ms: 0,
                output: None,
            })
            .unwrap();
        Arc::new(journal)
    }

    fn steps(journal: &Arc<dyn JournalStore>, entries: Vec<Entry>, read_only: bool) -> JournalSteps {
        let entries: Vec<JournalEntry> =
            entries.into_iter().zip(1..).map(|(entry, seq)| JournalEntry { seq, at_ms: 0, entry }).collect();
        let mut steps = JournalSteps::read_only("r", journal.clone(), &entries);
        steps.read_only = read_only;
        steps
    }

    fn start(call_id: &str) -> Entry {
        Entry::CallStart {
            turn: 1,
            call_id: call_id.into(),
            tool: "t".into(),
            replay: "manual".into(),
            idempotency_key: harnessx_agent::run::recovery::idempotency_key("r", call_id),
        }
    }

    fn committed(journal: &Arc<dyn JournalStore>) -> (RunStatus, Vec<Entry>) {
        let (run, entries) = journal.load_run("r").unwrap().unwrap();
        (run.status, entries.into_iter().map(|e| e.entry).collect())
    }

    #[test]
    fn a_result_beats_an_answer_and_an_answer_beats_a_bare_start() {
        let result = ToolResult::error("c1", "t", "failed");
        let journal = journal();
        let steps = steps(
            &journal,
            vec![
                start("c1"),
                Entry::CallResult {
                    turn: 1,
                    result: result.clone(),
                    timed_out: false,
                    usage: UsageByModel::new(),
                },
                start("c2"),
                Entry::Answer { call_id: "c2".into(), text: "it was sent".into() },
                start("c3"),
            ],
            false,
        );
        assert_eq!(steps.recorded("c1"), Recorded::Result(&result));
        assert_eq!(steps.recorded("c2"), Recorded::Answer("it was sent"));
        assert_eq!(steps.recorded("c3"), Recorded::Started);
        assert_eq!(steps.recorded("c4"), Recorded::Nothing);
    }

    #[test]
    fn a_recorded_decision_holds_only_for_the_arguments_it_was_made_on() {
        let arguments = r#"{"path":"a.txt"}"#;
        let journal = journal();
        let steps = steps(
            &journal,
            vec![
                Entry::Approval {
                    call_id: "c1".into(),
                    tool: "write".into(),
                    decision: ApprovalDecision::Approve,
                    arguments_hash: Some(arguments_hash(arguments)),
                },
                Entry::Approval {
                    call_id: "c2".into(),
                    tool: "write".into(),
                    decision: ApprovalDecision::Approve,
                    arguments_hash: None,
                },
            ],
            false,
        );
        assert_eq!(steps.recorded_decision("c1", arguments), Some(ApprovalDecision::Approve));
        assert_eq!(steps.recorded_decision("c1", r#"{"path":"b.txt"}"#), None, "other arguments");
        assert_eq!(steps.recorded_decision("c2", arguments), None, "bound to no arguments");
    }

    #[test]
    fn settled_results_go_in_the_next_commit_with_its_entries_and_status() {
        let journal = journal();
        let mut steps = steps(&journal, Vec::new(), false);
        let denied = ToolResult::error("c1", "t", "Permission denied");
        steps.record(1, &denied);
        assert!(committed(&journal).1.is_empty(), "nothing written before the commit");
        steps.commit(vec![start("c2")], Some((RunStatus::Running, None))).unwrap();
        let (status, entries) = committed(&journal);
        assert_eq!(status, RunStatus::Running);
        assert_eq!(
            entries,
            [
                Entry::CallResult { turn: 1, result: denied, timed_out: false, usage: UsageByModel::new() },
                start("c2")
            ]
        );
        // An empty commit with no status writes nothing.
        steps.commit(Vec::new(), None).unwrap();
        assert_eq!(committed(&journal).1.len(), 2);
    }

    #[tokio::test]
    async fn a_read_only_replay_writes_nothing_and_refuses_what_is_not_journaled() {
        let journal = journal();
        let mut steps = steps(&journal, Vec::new(), true);
        steps.record(1, &ToolResult::error("c1", "t", "no"));
        steps.commit(vec![start("c1")], Some((RunStatus::Completed, Some("x".into())))).unwrap();
        assert_eq!(committed(&journal), (RunStatus::Running, Vec::new()));
        let need = NeedsInput {
            kind: harnessx_agent::NeedsInputKind::Approval,
            call_id: "c1".into(),
            tool: "t".into(),
            arguments: "{}".into(),
            reason: "asks".into(),
            schema: None,
        };
        let error = steps.pause(1, &[need]).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"run "r" does not replay from its journal (an answer it waited for is not journaled)"#
        );
    }

    #[tokio::test]
    async fn a_pause_is_committed_with_what_it_waits_for_and_the_runs_status() {
        let journal = journal();
        let mut steps = steps(&journal, Vec::new(), false);
        let need = NeedsInput {
            kind: harnessx_agent::NeedsInputKind::Outcome,
            call_id: "c1".into(),
            tool: "t".into(),
            arguments: "{}".into(),
            reason: "unknown".into(),
            schema: None,
        };
        assert!(!steps.pause(1, std::slice::from_ref(&need)).await.unwrap(), "a journal's run stops");
        let (status, entries) = committed(&journal);
        assert_eq!(status, RunStatus::NeedsInput);
        assert_eq!(entries, [Entry::Paused { needs_input: json!([need]) }]);
    }
}
