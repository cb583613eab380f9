//! ASK over MCP: the session's [`Authorizer`], a layer over its permission manager.
//!
//! The manager's rules decide ALLOW and DENY, and a grant (the session's own: "allow
//! for this session", or the manager's) satisfies ASK. For an ASK without a grant, in
//! this order: the manager's own approval callback or store, when the application set
//! one; the client's user, through MCP elicitation (a form), when the client declared it
//! supports it; else a refusal that says why and how to allow the tool.
//!
//! The form offers what the terminal does, as one choice (`decision`) whose default
//! approves: approve, approve for this session, or refuse with a reason the model reads
//! (the `reason` field, read only on a refusal). The `arguments` field holds the model's
//! arguments, as JSON, to change before they run. Declining the form refuses plainly.
//!
//! Accepting the form approves unless the user chose to refuse: a client that fills in
//! every field with its default or a value of its own still approves, since no checkbox
//! can refuse. A decision that is none of the three refuses, saying what came back.

use harnessx_core::{
    ApprovalDecision, AuthRequest, Authorization, Authorizer, Decision, DenyReason, PERMISSION_DENIED,
    PermissionManager,
};
use rmcp::RoleServer;
use rmcp::model::{
    ConstTitle, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, EnumSchema,
    SingleSelectEnumSchema, TitledSingleSelectEnumSchema,
};
use rmcp::service::{ElicitationMode, Peer};
use serde_json::Value;

/// The form's fields: the decision, the arguments to run with, the reason for a refusal.
const DECISION: &str = "decision";
const ARGUMENTS: &str = "arguments";
const REASON: &str = "reason";

/// The decision's values, the first the default.
const APPROVE: &str = "approve";
const APPROVE_FOR_SESSION: &str = "approve_for_session";
const REFUSE: &str = "refuse";

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

/// What the user chose in an accepted form.
#[derive(Debug, PartialEq, Eq)]
enum Choice {
    Approve,
    ApproveForSession,
    Refuse,
}

impl Choice {
    /// The `decision` field: absent (or null) is its default, approve; anything but one
    /// of the three values is refused with what came back.
    fn of(tool: &str, decision: Option<&Value>) -> Result<Self, String> {
        match decision {
            None | Some(Value::Null) => Ok(Self::Approve),
            Some(Value::String(s)) if s == APPROVE => Ok(Self::Approve),
            Some(Value::String(s)) if s == APPROVE_FOR_SESSION => Ok(Self::ApproveForSession),
            Some(Value::String(s)) if s == REFUSE => Ok(Self::Refuse),
            Some(other) => Err(format!(
                "{PERMISSION_DENIED}: the approval form for {tool} came back with the decision {other}, not one of {APPROVE}, {APPROVE_FOR_SESSION} or {REFUSE}; the call did not run"
            )),
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
    let content = match content {
        None | Some(Value::Null) => None,
        Some(Value::Object(fields)) => Some(fields),
        Some(other) => {
            return deny(format!(
                "{PERMISSION_DENIED}: the approval form for {tool} came back as {other}, not as the form's fields; the call did not run"
            ));
        }
    };
    let field = |name: &str| content.and_then(|c| c.get(name));
    let for_session = match Choice::of(tool, field(DECISION)) {
        Err(message) => return deny(message),
        Ok(Choice::Refuse) => {
            let reason = field(REASON).and_then(Value::as_str).map(str::trim).unwrap_or_default();
            return permissions.apply(tool, ApprovalDecision::DenyWithMessage { message: reason.to_owned() });
        }
        Ok(Choice::Approve) => false,
        Ok(Choice::ApproveForSession) => true,
    };
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

/// The approval form: a message naming the tool and its arguments, the decision (one
/// choice, approve by default), the arguments to edit, and the reason for a refusal.
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
        .optional_enum_schema(DECISION, decision(tool))
        .string_property(ARGUMENTS, |s| {
            s.title("Arguments (JSON)")
                .description(format!("Change them to run {tool} with yours instead of the model's"))
                .with_default(arguments.to_string())
        })
        .string_property(REASON, |s| {
            s.title("Reason (when refusing)").description(
                "What the model is told instead of \"Permission denied\"; read only when you refuse",
            )
        })
        .build()
        // Optional properties only: the builder has nothing to refuse.
        .unwrap_or_else(|_| ElicitationSchema::new(Default::default()));
    ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema }
}

/// The decision field: a titled single-select (`oneOf` of `const` and `title`, the
/// current schema's form; `enumNames` is the deprecated one), approve by default.
fn decision(tool: &str) -> EnumSchema {
    let mut choice = TitledSingleSelectEnumSchema::new(vec![
        ConstTitle::new(APPROVE, "Approve this call"),
        ConstTitle::new(
            APPROVE_FOR_SESSION,
            format!("Approve, and run later calls of {tool} without asking until this connection ends"),
        ),
        ConstTitle::new(REFUSE, "Refuse (the model reads your reason)"),
    ]);
    choice.title = Some("Decision".into());
    choice.description = Some(format!("Whether {tool} runs").into());
    choice.default = Some(APPROVE.to_owned());
    EnumSchema::Single(SingleSelectEnumSchema::Titled(choice))
}
