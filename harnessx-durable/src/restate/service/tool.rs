//! `HarnessxTool`: the object that runs one call, journaling its start, then its
//! execution.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use restate_sdk::prelude::*;

use harnessx_agent::budget::UsageSink;
use harnessx_agent::run::recovery;
use harnessx_agent::{Agent, Recovery, Unknown};
use harnessx_core::{Authorization, Permit, RunContext, RunHooks, ToolCall, ToolResult};

use super::blobs::externalize;
use super::wire::{Executed, Invocation};
use super::{Shared, terminal};

/// The object that runs one call.
pub struct HarnessxTool(pub(super) Arc<Shared>);

#[restate_sdk::object]
impl HarnessxTool {
    #[handler]
    async fn execute(
        &self,
        ctx: ObjectContext<'_>,
        invocation: Json<Invocation>,
    ) -> Result<Json<serde_json::Value>, HandlerError> {
        let Invocation { call, config, edited, rewritten } = invocation.into_inner();
        let key = ctx.key().to_owned();
        self.0.config.refuse(run_of(&key), &config)?;
        let fresh = Arc::new(AtomicBool::new(false));
        let started = fresh.clone();
        ctx.run(|| async move {
            started.store(true, Ordering::SeqCst);
            Ok(())
        })
        .name("start")
        .await?;
        let (agent, blobs) = (self.0.agent.clone(), self.0.blobs.clone());
        // Journaled with its large media in the blob store, put there before the entry
        // is committed (`blobs`); the workflow reads them back.
        let executed: Json<serde_json::Value> = ctx
            .run(|| async move {
                let changed = Changed { edited, rewritten };
                let executed = run_call(&agent, call, key, changed, fresh.load(Ordering::SeqCst)).await;
                let what = format!("the result of call {}", executed.result.call_id);
                Ok(Json(externalize(blobs.as_ref(), &executed, &what).map_err(terminal)?))
            })
            .name("exec")
            .await?;
        Ok(executed)
    }
}

/// The run of a `HarnessxTool` key: the call's idempotency key,
/// [`recovery::idempotency_key`] (`"{run}/{call}"`; a run id may itself hold `/`).
fn run_of(key: &str) -> &str {
    key.rsplit_once('/').map_or(key, |(run, _)| run)
}

/// The arguments a call runs with in place of the model's, as the workflow decided.
#[derive(Debug, Default)]
struct Changed {
    /// The arguments a person approved it with.
    edited: Option<serde_json::Value>,
    /// The arguments a hook rewrote it to.
    rewritten: Option<serde_json::Value>,
}

/// Runs `call` on `agent`'s tools, as the journaled step of `HarnessxTool/execute`:
/// `key` is its idempotency key, `changed` the arguments it runs with in place of the
/// model's, if any, and
/// `fresh` says no earlier attempt journaled its start (else it was interrupted, and the
/// recovery rules decide whether it runs again).
async fn run_call(agent: &Agent, call: ToolCall, key: String, changed: Changed, fresh: bool) -> Executed {
    let mut batch = agent.tools().plan_batch(std::slice::from_ref(&call));
    let Some(mut planned) = batch.iter_mut().next() else {
        let result = ToolResult::error(&call.id, &call.name, "nothing to run");
        return Executed::new(result);
    };
    let policy = planned.replay_policy().unwrap_or_default();
    let tool = planned.tool().unwrap_or(&call.name).to_owned();
    // Started by an earlier attempt whose worker died: the recovery rules.
    if !fresh
        && let Recovery::Ask(_) =
            recovery::recover(policy, Unknown::Interrupted, &call.id, &tool, &call.arguments)
    {
        let result = ToolResult::error(&call.id, &tool, "outcome unknown");
        return Executed { unknown: Some(Unknown::Interrupted), ..Executed::new(result) };
    }
    // Stable across attempts and workers: the same for every re-run.
    planned.set_idempotency_key(key);
    // Rewritten by a hook in the workflow, which checked the rules on the new arguments:
    // the schema is checked again here.
    if let Some(arguments) = changed.rewritten {
        let outcome = harnessx_core::hooks::PreOutcome {
            decision: harnessx_core::hooks::PreDecision::Continue,
            rewritten: Some(arguments),
            by: Some("(the workflow's)".into()),
        };
        if planned.apply_hooks(outcome) == Permit::Settled {
            return Executed::new(planned.result().cloned().unwrap_or_else(|| {
                ToolResult::error(
                    &call.id,
                    &tool,
                    "the rewritten arguments are invalid; the call did not run",
                )
            }));
        }
    }
    // Approved by the workflow (with the arguments a person gave, which it checked
    // against the deny rules): only the schema is checked again here.
    let decided = match changed.edited {
        Some(arguments) => Authorization::AllowEdited { arguments },
        None => Authorization::Allow,
    };
    if planned.decide(decided, None) == Permit::Settled {
        let result = planned.result().cloned().unwrap_or_else(|| {
            ToolResult::error(&call.id, &tool, "the edited arguments are invalid; the call did not run")
        });
        return Executed::new(result);
    }
    // The agent's post hooks see the result here, where the call ran.
    let run =
        RunContext::new().with_permissions(agent.permissions().clone()).with_hooks(agent.hooks().clone());
    // A durable run retries `safe` and `idempotent` calls that time out.
    let hooks = RunHooks::new().retry_timeouts(true);
    let spent = UsageSink::new();
    let outcome = spent.scope(agent.tools().run_planned(batch, &run, &hooks)).await.pop().expect("one call");
    let unknown = (outcome.timed_out
        && matches!(
            recovery::recover(policy, Unknown::TimedOut, &call.id, &tool, &call.arguments),
            Recovery::Ask(_)
        ))
    .then_some(Unknown::TimedOut);
    let usage = spent.take(&call.id);
    // (A worker's call cannot pause for a person: its run context has no run id.)
    Executed { result: outcome.result, unknown, paused: None, usage }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use harnessx_core::{ReplayPolicy, ToolDefinition, ToolHandler};
    use serde_json::{Value, json};

    use super::*;

    /// The runs of a tool: (arguments, idempotency key) each.
    type Ran = Arc<Mutex<Vec<(Value, String)>>>;

    /// An agent with one tool `t` of `policy` taking `{"n": integer}`; every run it makes
    /// is logged as (arguments, idempotency key).
    fn agent_with(policy: ReplayPolicy) -> (Agent, Ran) {
        let ran: Ran = Arc::default();
        let log = ran.clone();
        let tool = ToolDefinition::new(
            "t",
            "A tool.",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
            ToolHandler::from_async(move |args, ctx| {
                let key = ctx.idempotency_key().unwrap_or("-").to_owned();
                log.lock().unwrap().push((args, key));
                async { Ok("ran".to_owned().into()) }
            }),
        )
        .with_replay_policy(policy);
        (Agent::builder().tool(tool).build().unwrap(), ran)
    }

    fn call() -> ToolCall {
        ToolCall::new("c1", "t", r#"{"n": 1}"#)
    }

    #[test]
    fn a_key_names_its_run_even_when_the_run_id_holds_a_slash() {
        assert_eq!(run_of("r1/c1"), "r1");
        assert_eq!(run_of("team/r1/c1"), "team/r1");
        assert_eq!(run_of("no-slash"), "no-slash");
        assert_eq!(
            run_of(&recovery::idempotency_key("team/r1", "c1")),
            "team/r1",
            "the key the workflow gives"
        );
    }

    #[tokio::test]
    async fn a_first_attempt_runs_the_call_with_the_objects_key() {
        let (agent, ran) = agent_with(ReplayPolicy::Manual);
        let executed = run_call(&agent, call(), "r1/c1".into(), Changed::default(), true).await;
        assert_eq!((executed.result.is_error, executed.unknown), (false, None), "{executed:?}");
        assert_eq!(*ran.lock().unwrap(), [(json!({"n": 1}), "r1/c1".to_owned())]);
    }

    #[tokio::test]
    async fn an_interrupted_manual_call_is_not_run_again_and_its_outcome_is_unknown() {
        let (agent, ran) = agent_with(ReplayPolicy::Manual);
        let executed = run_call(&agent, call(), "r1/c1".into(), Changed::default(), false).await;
        assert_eq!(executed.unknown, Some(Unknown::Interrupted));
        assert!(
            executed.result.is_error && executed.result.content.contains("outcome unknown"),
            "{executed:?}"
        );
        assert!(ran.lock().unwrap().is_empty(), "not run again");
    }

    #[tokio::test]
    async fn an_interrupted_idempotent_call_runs_again_with_the_same_key() {
        let (agent, ran) = agent_with(ReplayPolicy::Idempotent);
        let executed = run_call(&agent, call(), "r1/c1".into(), Changed::default(), false).await;
        assert_eq!(executed.unknown, None);
        assert_eq!(*ran.lock().unwrap(), [(json!({"n": 1}), "r1/c1".to_owned())]);
    }

    #[tokio::test]
    async fn edited_arguments_run_in_place_of_the_models_once_they_fit_the_schema() {
        let (agent, ran) = agent_with(ReplayPolicy::Manual);
        let executed = run_call(
            &agent,
            call(),
            "r1/c1".into(),
            Changed { edited: Some(json!({"n": 2})), rewritten: None },
            true,
        )
        .await;
        assert!(!executed.result.is_error, "{executed:?}");
        assert_eq!(ran.lock().unwrap()[0].0, json!({"n": 2}));

        let (agent, ran) = agent_with(ReplayPolicy::Manual);
        let executed = run_call(
            &agent,
            call(),
            "r1/c1".into(),
            Changed { edited: Some(json!({"n": "two"})), rewritten: None },
            true,
        )
        .await;
        assert!(executed.result.is_error, "{executed:?}");
        assert!(ran.lock().unwrap().is_empty(), "arguments that do not fit never run");
    }
}
