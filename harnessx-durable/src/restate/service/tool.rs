//! `HarnessxTool`: the object that runs one call, journaling its start, then its
//! execution.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use restate_sdk::prelude::*;

use harnessx_agent::budget::{UsageByModel, UsageSink};
use harnessx_agent::run::recovery;
use harnessx_agent::{Recovery, Unknown};
use harnessx_core::{RunContext, RunHooks, ToolResult};

use super::Shared;
use super::wire::{Executed, Invocation};

/// The object that runs one call.
pub struct HarnessxTool(pub(super) Arc<Shared>);

#[restate_sdk::object]
impl HarnessxTool {
    #[handler]
    async fn execute(
        &self,
        ctx: ObjectContext<'_>,
        invocation: Json<Invocation>,
    ) -> Result<Json<Executed>, HandlerError> {
        let Invocation { call, config, edited } = invocation.into_inner();
        let key = ctx.key().to_owned();
        let run_id = key.rsplit_once('/').map_or(key.as_str(), |(run, _)| run).to_owned();
        self.0.config.refuse(&run_id, &config)?;
        let fresh = Arc::new(AtomicBool::new(false));
        let started = fresh.clone();
        ctx.run(|| async move {
            started.store(true, Ordering::SeqCst);
            Ok(())
        })
        .name("start")
        .await?;
        let agent = self.0.agent.clone();
        let executed: Json<Executed> = ctx
            .run(|| async move {
                let mut batch = agent.tools().plan_batch(std::slice::from_ref(&call));
                let policy = batch.replay_policy(0).unwrap_or_default();
                let tool = batch.tool(0).unwrap_or(&call.name).to_owned();
                // Started by an earlier attempt whose worker died: the recovery rules.
                if !fresh.load(Ordering::SeqCst)
                    && let Recovery::Ask(_) =
                        recovery::recover(policy, Unknown::Interrupted, &call.id, &tool, &call.arguments)
                {
                    let result = ToolResult::error(&call.id, &tool, "outcome unknown");
                    return Ok(Json(Executed {
                        result,
                        unknown: Some(Unknown::Interrupted),
                        usage: UsageByModel::new(),
                    }));
                }
                // Stable across attempts and workers: the same for every re-run.
                batch.set_idempotency_key(0, key);
                // Approved with the arguments a person gave (checked by the workflow).
                if let Some(arguments) = edited
                    && batch.edit(0, arguments).is_err()
                {
                    let result = batch.result(0).cloned().unwrap_or_else(|| {
                        ToolResult::error(
                            &call.id,
                            &tool,
                            "the edited arguments are invalid; the call did not run",
                        )
                    });
                    return Ok(Json(Executed { result, unknown: None, usage: UsageByModel::new() }));
                }
                batch.authorize(0);
                let ctx = RunContext::new().with_permissions(agent.permissions().clone());
                let hooks = RunHooks::new().retry_timeouts(recovery::retry_timeouts(true));
                let spent = UsageSink::new();
                let outcome = spent
                    .scope(agent.tools().run_planned(batch, &ctx, &hooks))
                    .await
                    .pop()
                    .expect("one call");
                let unknown = (outcome.timed_out
                    && matches!(
                        recovery::recover(policy, Unknown::TimedOut, &call.id, &tool, &call.arguments),
                        Recovery::Ask(_)
                    ))
                .then_some(Unknown::TimedOut);
                let usage = spent.take(&call.id);
                Ok(Json(Executed { result: outcome.result, unknown, usage }))
            })
            .name("exec")
            .await?;
        Ok(executed)
    }
}
