//! The permission stage, written once: a ready call put to an [`Authorizer`]
//! ([`ask_call`]) and the answer acted on ([`act`]): it runs, with a person's edited
//! arguments checked again, or it is refused. A call of a batch run here goes through
//! both as its turn comes; a planned batch goes through them before it runs
//! ([`PlannedCall::authorize`](super::PlannedCall::authorize)).

use std::borrow::Cow;

use super::prepare::ReadyCall;
use crate::permission::{AuthRequest, Authorization, Authorizer, Decision, DenyReason, PermissionManager};
use crate::permission::{PERMISSION_DENIED, ask, ask_by_name};
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
