//! ASK over MCP: whom to ask, and the one-line texts of refusals.
//!
//! The manager decides ALLOW and DENY. For ASK, in this order: a grant this session's
//! user gave ("allow for this session"); the manager's own approval callback or store,
//! when the application set one; the client's user, through MCP elicitation (a form),
//! when the client declared it supports it; else a refusal that says why and how to
//! allow the tool.

use harnessx_core::{DenyReason, PERMISSION_DENIED, PermissionLevel};
use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use rmcp::service::{ElicitationMode, Peer};
use serde_json::Value;

use super::session::Session;

/// The form's one field: whether later calls of the tool run without asking.
const FOR_SESSION: &str = "allow_for_session";

/// Longest argument text shown in the approval message.
const SHOWN_ARGUMENTS: usize = 500;

/// Whether the call may run; the error is the text the client's model reads.
pub(super) async fn authorize(
    session: &Session,
    tool: &str,
    permission: Option<PermissionLevel>,
    call_id: &str,
    arguments: &Value,
    peer: &Peer<RoleServer>,
) -> Result<(), String> {
    let manager = &session.shared.permissions;
    if manager.effective_level(tool, permission) != PermissionLevel::Ask {
        return manager
            .authorize(tool, permission, call_id, arguments)
            .await
            .map_err(|_| PERMISSION_DENIED.to_owned());
    }
    if session.grants.lock().unwrap_or_else(|e| e.into_inner()).contains(tool) {
        return Ok(());
    }
    let can_elicit = peer.supported_elicitation_modes().contains(&ElicitationMode::Form);
    if manager.has_approval() || !can_elicit {
        // The application's callback or store, a grant in the manager; else nobody.
        return manager.authorize(tool, permission, call_id, arguments).await.map_err(
            |reason| match reason {
                DenyReason::NoApprover => cannot_ask(tool),
                _ => PERMISSION_DENIED.to_owned(),
            },
        );
    }
    let answer = peer.create_elicitation(form(tool, arguments)).await;
    match answer {
        Ok(ElicitResult { action: ElicitationAction::Accept, content, .. }) => {
            let for_session = content.as_ref().and_then(|c| c.get(FOR_SESSION)).and_then(Value::as_bool);
            if for_session == Some(true) {
                session.grants.lock().unwrap_or_else(|e| e.into_inner()).insert(tool.to_owned());
            }
            Ok(())
        }
        Ok(ElicitResult { action: ElicitationAction::Decline, .. }) => {
            Err(format!("{PERMISSION_DENIED}: the user declined to run {tool}"))
        }
        Ok(_) => Err(format!("{PERMISSION_DENIED}: the user dismissed the request to run {tool}")),
        Err(e) => {
            tracing::warn!(tool, call_id, error = %e, "asking the MCP client's user failed");
            Err(format!("{PERMISSION_DENIED}: asking the user to approve {tool} failed ({e})"))
        }
    }
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
        .bool_property(FOR_SESSION, |b| {
            b.title("Allow for this session")
                .description(format!(
                    "Also run later calls of {tool} without asking, until this connection ends"
                ))
                .with_default(false)
        })
        .build()
        // One optional boolean property: the builder has nothing to refuse.
        .unwrap_or_else(|_| ElicitationSchema::new(Default::default()));
    ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema }
}
