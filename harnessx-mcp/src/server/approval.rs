//! ASK over MCP: the session's [`Authorizer`], a layer over its permission manager.
//!
//! The manager's rules decide ALLOW and DENY, and a grant (the session's own: "allow
//! for this session", or the manager's) satisfies ASK. For an ASK without a grant, in
//! this order: the manager's own approval callback or store, when the application set
//! one; the client's user, through MCP elicitation (a form), when the client declared it
//! supports it; else a refusal that says why and how to allow the tool.
//!
//! The form offers what the terminal does: run it (for this session too), run it with
//! edited arguments (the `arguments` field holds the model's, as JSON, to change), or
//! refuse it with a reason the model reads (the `refuse` box and the `reason` field);
//! declining the form refuses it plainly.

use harnessx_core::{
    ApprovalDecision, AuthRequest, Authorization, Authorizer, Decision, DenyReason, PERMISSION_DENIED,
    PermissionManager,
};
use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use rmcp::service::{ElicitationMode, Peer};
use serde_json::Value;

/// The form's fields: whether later calls of the tool run without asking, the
/// arguments to run with, and a refusal with its reason.
const FOR_SESSION: &str = "allow_for_session";
const ARGUMENTS: &str = "arguments";
const REFUSE: &str = "refuse";
const REASON: &str = "reason";

/// Longest argument text shown in the approval message.
const SHOWN_ARGUMENTS: usize = 500;

/// The authorizer of one MCP session's calls: its manager (a
/// [`session`](PermissionManager::session) of the server's), asking through `peer`.
pub(super) struct Eliciting {
    pub(super) permissions: PermissionManager,
    pub(super) peer: Peer<RoleServer>,
}

impl Authorizer for Eliciting {
    fn authorize<'a>(&'a self, request: AuthRequest<'a>) -> Decision<'a> {
        match self.permissions.rules(request) {
            Authorization::Wait { .. } => Decision::Later(Box::pin(self.ask(request))),
            decided => Decision::Now(decided),
        }
    }
}

impl Eliciting {
    async fn ask(&self, request: AuthRequest<'_>) -> Authorization {
        let AuthRequest { tool, call_id, arguments, .. } = request;
        let can_elicit = self.peer.supported_elicitation_modes().contains(&ElicitationMode::Form);
        if self.permissions.can_decide() || !can_elicit {
            // The application's callback or store; else nobody.
            return match harnessx_core::Authorizer::authorize(&self.permissions, request).resolve().await {
                Authorization::Wait { .. } => deny(cannot_ask(tool)),
                decided => decided,
            };
        }
        let answer = self.peer.create_elicitation(form(tool, arguments)).await;
        match answer {
            Ok(ElicitResult { action: ElicitationAction::Accept, content, .. }) => {
                accepted(&self.permissions, tool, arguments, content.as_ref())
            }
            Ok(ElicitResult { action: ElicitationAction::Decline, .. }) => {
                deny(format!("{PERMISSION_DENIED}: the user declined to run {tool}"))
            }
            Ok(_) => deny(format!("{PERMISSION_DENIED}: the user dismissed the request to run {tool}")),
            Err(e) => {
                tracing::warn!(tool, call_id, error = %e, "asking the MCP client's user failed");
                deny(format!("{PERMISSION_DENIED}: asking the user to approve {tool} failed ({e})"))
            }
        }
    }
}

/// What an accepted form says: a refusal with a reason, edited arguments, a session grant.
fn accepted(
    permissions: &PermissionManager,
    tool: &str,
    arguments: &Value,
    content: Option<&Value>,
) -> Authorization {
    let field = |name: &str| content.and_then(|c| c.get(name));
    if field(REFUSE).and_then(Value::as_bool) == Some(true) {
        let reason = field(REASON).and_then(Value::as_str).map(str::trim).unwrap_or_default();
        return permissions.apply(tool, ApprovalDecision::DenyWithMessage { message: reason.to_owned() });
    }
    let for_session = field(FOR_SESSION).and_then(Value::as_bool) == Some(true);
    let edited = match field(ARGUMENTS).and_then(Value::as_str).map(str::trim) {
        None | Some("") => None,
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(value) if value == *arguments => None,
            Ok(value) => Some(value),
            Err(e) => {
                return deny(format!(
                    "{PERMISSION_DENIED}: the user edited the arguments of {tool}, and they are not valid JSON ({e}); the call did not run"
                ));
            }
        },
    };
    let decision = match (edited, for_session) {
        (Some(arguments), for_session) => ApprovalDecision::ApproveEdited { arguments, for_session },
        (None, true) => ApprovalDecision::ApproveForSession,
        (None, false) => ApprovalDecision::Approve,
    };
    permissions.apply(tool, decision)
}

fn deny(message: String) -> Authorization {
    Authorization::Deny { reason: DenyReason::Rejected, message: message.into() }
}

/// The refusal when nobody can approve: the client cannot ask its user.
fn cannot_ask(tool: &str) -> String {
    format!(
        "{PERMISSION_DENIED}: {tool} needs approval and this MCP client cannot ask its user (no elicitation support); allow it on the server (--allow {tool} or --default-permission allow)"
    )
}

/// The approval form: a message naming the tool and its arguments, and a checkbox.
fn form(tool: &str, arguments: &Value) -> ElicitRequestParams {
    let mut shown = serde_json::to_string_pretty(arguments).unwrap_or_else(|_| arguments.to_string());
    if shown.len() > SHOWN_ARGUMENTS {
        let mut cut = SHOWN_ARGUMENTS;
        while !shown.is_char_boundary(cut) {
            cut -= 1;
        }
        shown.truncate(cut);
        shown.push('…');
    }
    let message = format!("Allow the tool {tool} to run with these arguments?\n{shown}");
    let schema = ElicitationSchema::builder()
        .string_property(ARGUMENTS, |s| {
            s.title("Arguments (JSON)")
                .description(format!("Change them to run {tool} with yours instead of the model's"))
                .with_default(arguments.to_string())
        })
        .bool_property(REFUSE, |b| {
            b.title("Refuse this call")
                .description("Do not run it; the model reads your reason below")
                .with_default(false)
        })
        .string_property(REASON, |s| {
            s.title("Reason (when refusing)")
                .description("What the model is told instead of \"Permission denied\"")
        })
        .bool_property(FOR_SESSION, |b| {
            b.title("Allow for this session")
                .description(format!(
                    "Also run later calls of {tool} without asking, until this connection ends"
                ))
                .with_default(false)
        })
        .build()
        // Optional string and boolean properties: the builder has nothing to refuse.
        .unwrap_or_else(|_| ElicitationSchema::new(Default::default()));
    ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema }
}
