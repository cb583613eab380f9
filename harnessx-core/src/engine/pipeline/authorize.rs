//! The permission stage, written once: a ready call put to an [`Authorizer`]
//! ([`ask_call`]) and the answer acted on ([`act`]): it runs, with a person's edited
//! arguments checked again, or it is refused. A call of a batch run here goes through
//! both as its turn comes; a planned batch goes through them before it runs
//! ([`PlannedCall::authorize`](super::PlannedCall::authorize)).

use std::borrow::Cow;

use super::prepare::ReadyCall;
use crate::engine::context::RunContext;
use crate::hooks::{PostToolUse, PreDecision, PreOutcome, PreToolUse, RunUsage, ToolHooks};
use crate::permission::ApprovalRequest;
use crate::permission::{AuthRequest, Authorization, Authorizer, Decision, DenyReason, PermissionManager};
use crate::permission::{PERMISSION_DENIED, ask, ask_by_name};
use crate::tool::call::ToolOutput;
use crate::tool::call::{ToolCall, ToolResult};

/// Puts one ready call to `authorizer`, failing closed ([`ask`]): by its tool and
/// permission alone while its arguments are still their text and the authorizer can
/// decide so ([`ask_by_name`]), else with the arguments (parsed then, once).
pub(super) fn ask_call<'a>(
    authorizer: &'a dyn Authorizer,
    ready: &'a mut ReadyCall,
    call: &'a ToolCall,
) -> Decision<'a> {
    if ready.args.is_none()
        && let Some(decided) = ask_by_name(authorizer, ready.tool.name(), ready.tool.definition().permission)
    {
        return Decision::Now(decided);
    }
    let (tool, arguments) = ready.with_value(call);
    let permission = tool.definition().permission;
    ask(authorizer, AuthRequest { tool: tool.name(), permission, call_id: &call.id, arguments })
}

/// A call the permission stage refused: its error result, and why (for the operator).
pub(super) struct Refusal {
    pub(super) result: ToolResult,
    #[allow(dead_code, reason = "kept for the log line; read in tests")]
    pub(super) reason: DenyReason,
}

/// Acts on the decision about a ready call: `None` when it runs (with the arguments a
/// person edited, once they pass the tool's schema and `recheck`'s deny rules, when they
/// gave some), else its refusal. A WAIT here is an ASK nobody can answer: refused with
/// [`PERMISSION_DENIED`].
pub(super) fn act(
    mut decided: Authorization,
    ready: &mut ReadyCall,
    call: &ToolCall,
    recheck: Option<&PermissionManager>,
) -> Option<Refusal> {
    if let Authorization::AllowEdited { arguments } = decided {
        decided = match ready.edit(arguments) {
            Err(message) => Authorization::Deny { reason: DenyReason::Rejected, message: message.into() },
            Ok(()) => match recheck {
                Some(manager) => {
                    let (tool, arguments) = ready.with_value(call);
                    manager.recheck_edited(tool.name(), tool.definition().permission, arguments)
                }
                None => Authorization::Allow,
            },
        };
    }
    let (reason, message): (DenyReason, Cow<'static, str>) = match decided {
        Authorization::Allow => return None,
        Authorization::Deny { reason, message } => (reason, message),
        // Nobody here to put the question to.
        _ => (DenyReason::NoApprover, PERMISSION_DENIED.into()),
    };
    let name = ready.tool.name();
    tracing::info!(tool = &**name, call_id = %call.id, ?reason, "tool call denied");
    Some(Refusal { result: ToolResult::error(&call.id, &**name, message), reason })
}

/// What the pre hooks decided about a ready call, a rewrite of its arguments already
/// applied (and checked against the schema).
pub(super) enum Hooked {
    /// No hook decided: the authorizer decides alone.
    Continue,
    /// Run it without asking a person; the authorizer's DENY still wins.
    Allow,
    /// Ask a person even if the authorizer allows it; its DENY still wins.
    Ask(String),
    /// Refused by a hook (or by the schema, on a rewrite).
    Refused(Refusal),
    /// Answered by hook `by` without running.
    Answered(ToolOutput),
}

/// What the pre hooks decide about a ready call, not yet applied (a runtime that records
/// each step records this first).
pub(super) async fn ask_pre(
    hooks: &ToolHooks,
    ready: &mut ReadyCall,
    call: &ToolCall,
    run_id: Option<&str>,
    usage: RunUsage,
) -> PreOutcome {
    let (tool, arguments) = ready.with_value(call);
    let name = tool.name().clone();
    hooks.pre_tool_use(PreToolUse { tool: &name, call_id: &call.id, arguments, run_id, usage }).await
}

/// Applies what the pre hooks decided (now, or as recorded): a rewrite replaces the
/// arguments once they pass the schema; the decision becomes a [`Hooked`].
pub(super) fn apply_pre(outcome: PreOutcome, ready: &mut ReadyCall, call: &ToolCall) -> Hooked {
    let PreOutcome { decision, rewritten, by } = outcome;
    let by = by.unwrap_or_default();
    let name = ready.tool.name().clone();
    let refused = |message: String| {
        tracing::info!(tool = &*name, call_id = %call.id, hook = %by, "tool call refused by a hook");
        Hooked::Refused(Refusal {
            result: ToolResult::error(&call.id, &*name, message),
            reason: DenyReason::Hook,
        })
    };
    if let Some(arguments) = rewritten
        && let Err(message) = ready.rewrite(arguments, &by)
    {
        return refused(message);
    }
    match decision {
        PreDecision::Allow => Hooked::Allow,
        PreDecision::Ask => Hooked::Ask(format!("{name} needs approval: hook {by} asks a person")),
        PreDecision::Deny { message } => refused(message),
        PreDecision::Answer { result } => Hooked::Answered(result),
        _ => Hooked::Continue,
    }
}

/// The authorizer's decision with the hooks' over it: a DENY always stands; a hook's
/// ALLOW answers the question an ASK would put; a hook's ASK turns an ALLOW into a
/// question.
pub(super) fn with_hooks(hooked: &Hooked, decided: Authorization) -> Authorization {
    match (hooked, decided) {
        (_, denied @ Authorization::Deny { .. }) => denied,
        (Hooked::Allow, Authorization::Wait { .. }) => Authorization::Allow,
        (Hooked::Ask(question), Authorization::Allow) => Authorization::Wait { question: question.clone() },
        (_, decided) => decided,
    }
}

/// Where a call stands after the permission stage with hooks.
pub(super) enum Gate {
    /// It runs.
    Runs,
    /// It is refused.
    Refused(Refusal),
    /// A hook answered it: this is its output, and it does not run.
    Answered(ToolOutput),
}

/// The permission stage of a call when the context has hooks: the pre hooks first
/// ([`pre_hooks`]), then the authorizer, the hooks' decision over its answer
/// ([`with_hooks`]), then [`act`]. A hook's ASK is put to the manager's approval callback
/// or store (after the rules, whose DENY still wins), or refused when nobody can answer.
pub(super) async fn hooked_gate(
    hooks: &ToolHooks,
    ready: &mut ReadyCall,
    call: &ToolCall,
    ctx: &RunContext,
) -> Gate {
    let outcome = ask_pre(hooks, ready, call, ctx.run_id(), ctx.usage()).await;
    ctx.report_hooks(&call.id, &outcome);
    let hooked = match apply_pre(outcome, ready, call) {
        Hooked::Refused(refusal) => return Gate::Refused(refusal),
        Hooked::Answered(output) => return Gate::Answered(output),
        hooked => hooked,
    };
    // A hook that allowed the call or asks a person about it decides whether anyone is
    // asked: the manager's rules alone then (it would ask a person itself), the person
    // below.
    let decided = match (&hooked, ctx.permissions(), ctx.has_own_authorizer()) {
        (Hooked::Allow | Hooked::Ask(_), Some(manager), false) => {
            ask_call(&manager.rules_only(), ready, call).resolve().await
        }
        _ => ask_call(ctx.authorizer(), ready, call).resolve().await,
    };
    let mut decided = with_hooks(&hooked, decided);
    if let Authorization::Wait { .. } = decided
        && let Some(manager) = ctx.permissions()
        && manager.can_decide()
    {
        let (tool, arguments) = ready.with_value(call);
        let request = ApprovalRequest {
            tool_name: tool.name().to_string(),
            call_id: call.id.clone(),
            arguments: arguments.clone(),
        };
        if let Some(decision) = manager.decision(&request).await {
            decided = manager.apply(&request.tool_name, decision);
        }
    }
    match act(decided, ready, call, ctx.permissions()) {
        None => Gate::Runs,
        Some(refusal) => Gate::Refused(refusal),
    }
}

/// Puts a result to the post hooks ([`ToolHooks::post_tool_use`]): the output a hook
/// replaced it with, if one did.
pub(super) async fn post_hooks(
    hooks: &ToolHooks,
    ctx: &RunContext,
    ready: &ReadyCall,
    call: &ToolCall,
    arguments: &serde_json::Value,
    output: &ToolOutput,
    is_error: bool,
) -> Option<ToolOutput> {
    let asked = PostToolUse {
        tool: ready.tool.name(),
        call_id: &call.id,
        arguments,
        run_id: ctx.run_id(),
        usage: ctx.usage(),
        content: &output.content,
        is_error,
    };
    let (output, by) = hooks.post_tool_use(asked).await?;
    ctx.emit(crate::engine::events::ToolEvent::Hook { call_id: &call.id, hook: &by, decision: "replace" });
    Some(output)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::engine::context::RunContext;
    use crate::engine::pipeline::prepare::{Prepared, prepare};
    use crate::{PermissionLevel, ToolHandler, ToolOptions, ToolRegistry};

    /// A registry with `ask` (ASK, one required string `path`) and `free` (no permission).
    fn registry() -> ToolRegistry {
        let registry = ToolRegistry::new();
        let schema =
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
        let ok = ToolHandler::from_async(|_, _| async { Ok("ran".into()) });
        let ask = ToolOptions::new().permission(PermissionLevel::Ask);
        registry.register_with_schema("ask", "d", schema.clone(), ok.clone(), ask).unwrap();
        registry.register_with_schema("free", "d", schema, ok, ToolOptions::new()).unwrap();
        registry
    }

    fn ready(registry: &ToolRegistry, call: &ToolCall, from_text: bool) -> ReadyCall {
        match prepare(registry.read().target(&call.name), call, from_text) {
            Prepared::Ready(r) => r,
            Prepared::Done(r, ..) => panic!("not ready: {r:?}"),
        }
    }

    #[test]
    fn a_call_still_in_its_text_is_decided_by_name_without_a_parse() {
        let registry = registry();
        let call = ToolCall::new("1", "free", r#"{"path": "a"}"#);
        let mut ready = ready(&registry, &call, true);
        // As a call of a tool whose handler decodes its text is left (a flat schema).
        ready.args = None;
        let manager = PermissionManager::default();
        let Decision::Now(decided) = ask_call(&manager, &mut ready, &call) else { panic!("waits") };
        assert_eq!(decided, Authorization::Allow);
        assert!(ready.args.is_none(), "decided by name: never parsed");
    }

    #[test]
    fn an_edit_is_checked_against_the_schema_and_the_deny_rules_again() {
        let registry = registry();
        let call = ToolCall::new("1", "ask", r#"{"path": "a"}"#);
        let manager = PermissionManager::default();
        manager.add_rule(PermissionLevel::Deny, "ask(path=secret*)").unwrap();

        let mut ok = ready(&registry, &call, false);
        let edited = Authorization::AllowEdited { arguments: json!({"path": "b"}) };
        assert!(act(edited, &mut ok, &call, Some(&manager)).is_none());
        assert!(ok.edited && ok.args.as_deref() == Some(&json!({"path": "b"})));

        let mut bad = ready(&registry, &call, false);
        let edited = Authorization::AllowEdited { arguments: json!({"path": 7}) };
        let refusal = act(edited, &mut bad, &call, Some(&manager)).expect("refused");
        assert!(
            refusal
                .result
                .content
                .starts_with("the user changed the arguments of this ask call, and the new ones are invalid"),
            "{}",
            refusal.result.content
        );
        assert_eq!(refusal.reason, DenyReason::Rejected);

        let mut denied = ready(&registry, &call, false);
        let edited = Authorization::AllowEdited { arguments: json!({"path": "secret.txt"}) };
        let refusal = act(edited, &mut denied, &call, Some(&manager)).expect("refused");
        assert!(refusal.result.is_error && refusal.result.name == "ask");
    }

    #[test]
    fn a_question_nobody_can_answer_is_a_plain_refusal() {
        let registry = registry();
        let call = ToolCall::new("1", "ask", r#"{"path": "a"}"#);
        let mut ready = ready(&registry, &call, false);
        let refusal = act(Authorization::ask("ask"), &mut ready, &call, None).expect("refused");
        assert_eq!(refusal.result.content, PERMISSION_DENIED);
        assert_eq!(refusal.reason, DenyReason::NoApprover);
    }

    #[tokio::test]
    async fn a_panicking_approval_callback_denies_and_the_batch_goes_on() {
        let registry = registry();
        let manager =
            PermissionManager::default().with_approval_fn(|_| async { panic!("approval UI crashed") });
        let ctx = RunContext::new().with_permissions(manager);
        let calls =
            [ToolCall::new("1", "ask", r#"{"path": "a"}"#), ToolCall::new("2", "free", r#"{"path": "a"}"#)];
        let results = registry.execute_batch(&calls, &ctx).await;
        assert_eq!(results[0].content, PERMISSION_DENIED);
        assert_eq!(results[1].content, "ran");
    }
}
