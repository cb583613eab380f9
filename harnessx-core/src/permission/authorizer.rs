//! [`Authorizer`]: the one permission decision of the pipeline.
//!
//! Every call that would run is put to one `Authorizer`, which answers
//! [`Authorization::Allow`], [`Authorization::Deny`] (with the text the model gets) or
//! [`Authorization::Wait`] (a question for a person). The [`PermissionManager`]'s levels,
//! overrides and session grants are one implementation
//! ([`PermissionManager::rules`](crate::PermissionManager::rules)); its approval callback and
//! store are a layer over those rules (its `Authorizer` impl); a durable run's journaled
//! decisions and the MCP server's elicitation are further layers, in their crates.
//!
//! The answer is a [`Decision`]: [`Decision::Now`] when nothing has to wait (ALLOW, DENY,
//! a grant: no allocation, no future), [`Decision::Later`] when someone or something is
//! asked.
//!
//! [`PermissionManager`]: crate::PermissionManager

use std::borrow::Cow;

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::permission::level::PermissionLevel;
use crate::permission::manager::DenyReason;

/// The text of every permission refusal that has no more specific one.
pub const PERMISSION_DENIED: &str = "Permission denied";

/// One call, as the authorisation stage sees it.
#[derive(Debug, Clone, Copy)]
pub struct AuthRequest<'a> {
    /// The registered (resolved) tool name.
    pub tool: &'a str,
    /// The tool's own permission; `None` when it was registered without one (the
    /// manager's default then applies).
    pub permission: Option<PermissionLevel>,
    /// The call id.
    pub call_id: &'a str,
    /// The validated arguments.
    pub arguments: &'a Value,
}

/// What an [`Authorizer`] answers for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Authorization {
    /// Run it.
    Allow,
    /// Run it with these arguments instead (a person edited them): validated against the
    /// tool's schema and the deny rules again before it runs, and its result says so.
    AllowEdited {
        /// The arguments the call runs with.
        arguments: Value,
    },
    /// Do not run it; the model gets `message` as the call's error result.
    Deny {
        /// Why, for the operator (logs, spans).
        reason: DenyReason,
        /// What the model reads.
        message: Cow<'static, str>,
    },
    /// A person has to decide (an ASK with no grant): `question` says what is asked, in
    /// a sentence. Where nobody can be asked, the call is denied with
    /// [`PERMISSION_DENIED`]; a durable run stops and waits for the answer.
    Wait {
        /// What the person is asked.
        question: String,
    },
}

impl Authorization {
    /// A denial with the plain [`PERMISSION_DENIED`] text.
    pub const fn denied(reason: DenyReason) -> Self {
        Self::Deny { reason, message: Cow::Borrowed(PERMISSION_DENIED) }
    }

    /// The question an ASK call puts to a person.
    pub fn ask(tool: &str) -> Self {
        Self::Wait { question: format!("{tool} needs approval (ASK) and no one was there to approve it") }
    }

    /// Whether the call may run.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Self::Allow | Self::AllowEdited { .. })
    }
}

/// An [`Authorization`] now, or one that has to be waited for.
pub enum Decision<'a> {
    /// Decided without waiting.
    Now(Authorization),
    /// Decided by something that is asked (an approval callback, a store, a client).
    Later(BoxFuture<'a, Authorization>),
}

impl std::fmt::Debug for Decision<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Now(a) => f.debug_tuple("Now").field(a).finish(),
            Self::Later(_) => f.write_str("Later(..)"),
        }
    }
}

impl Decision<'_> {
    /// Waits for the answer.
    pub async fn resolve(self) -> Authorization {
        match self {
            Self::Now(a) => a,
            Self::Later(f) => f.await,
        }
    }
}

/// Decides whether a call may run. See the [module docs](self).
pub trait Authorizer: Send + Sync {
    /// Decides on one call.
    fn authorize<'a>(&'a self, request: AuthRequest<'a>) -> Decision<'a>;

    /// Decides on a call by its tool and permission alone, when the answer cannot depend
    /// on the arguments and needs no waiting; `None` (the default) otherwise, and
    /// [`authorize`](Self::authorize) is asked with the arguments.
    ///
    /// The engine asks this first for calls whose arguments it checked straight from
    /// their text (a flat schema), so that deciding them costs no parse into a value. An
    /// answer here must be the one `authorize` would give.
    fn authorize_by_name(&self, tool: &str, permission: Option<PermissionLevel>) -> Option<Authorization> {
        let _ = (tool, permission);
        None
    }
}

impl<A: Authorizer + ?Sized> Authorizer for std::sync::Arc<A> {
    fn authorize<'a>(&'a self, request: AuthRequest<'a>) -> Decision<'a> {
        (**self).authorize(request)
    }

    fn authorize_by_name(&self, tool: &str, permission: Option<PermissionLevel>) -> Option<Authorization> {
        (**self).authorize_by_name(tool, permission)
    }
}

/// Puts `request` to `authorizer`, failing closed: an authorizer (or the approval
/// callback or store under it) that panics, as it is asked or while it is waited on,
/// denies the call ([`DenyReason::Rejected`], the plain [`PERMISSION_DENIED`] text), and
/// the panic is logged for the operator. The one way a call is put to an authorizer: the
/// pipeline's stage and an agent run's batch both ask through it.
pub fn ask<'a>(authorizer: &'a dyn Authorizer, request: AuthRequest<'a>) -> Decision<'a> {
    use futures_util::FutureExt;
    use std::panic::AssertUnwindSafe;
    let tool = request.tool;
    let rejected = move |payload: Box<dyn std::any::Any + Send>| {
        log_panic(tool, &*payload);
        Authorization::denied(DenyReason::Rejected)
    };
    match std::panic::catch_unwind(AssertUnwindSafe(|| authorizer.authorize(request))) {
        Ok(Decision::Now(decided)) => Decision::Now(decided),
        Ok(Decision::Later(later)) => Decision::Later(Box::pin(
            AssertUnwindSafe(later).catch_unwind().map(move |r| r.unwrap_or_else(rejected)),
        )),
        Err(payload) => Decision::Now(rejected(payload)),
    }
}

/// [`Authorizer::authorize_by_name`], failing closed as [`ask`] does.
pub fn ask_by_name(
    authorizer: &dyn Authorizer,
    tool: &str,
    permission: Option<PermissionLevel>,
) -> Option<Authorization> {
    let asked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        authorizer.authorize_by_name(tool, permission)
    }));
    asked.unwrap_or_else(|payload| {
        log_panic(tool, &*payload);
        Some(Authorization::denied(DenyReason::Rejected))
    })
}

fn log_panic(tool: &str, payload: &(dyn std::any::Any + Send)) {
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("<non-string panic payload>");
    tracing::error!(tool, panic = message, "the authorizer panicked; the call is denied");
}

/// The rule when no authorizer is given: omitted permissions are ALLOW; explicit ASK
/// (with nothing to approve it) and explicit DENY are denied.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoManager;

impl Authorizer for NoManager {
    fn authorize<'a>(&'a self, request: AuthRequest<'a>) -> Decision<'a> {
        Decision::Now(no_manager(request.permission))
    }

    fn authorize_by_name(&self, _tool: &str, permission: Option<PermissionLevel>) -> Option<Authorization> {
        Some(no_manager(permission))
    }
}

fn no_manager(permission: Option<PermissionLevel>) -> Authorization {
    match permission {
        None | Some(PermissionLevel::Allow) => Authorization::Allow,
        Some(PermissionLevel::Ask) => Authorization::denied(DenyReason::NoApprover),
        Some(PermissionLevel::Deny) => Authorization::denied(DenyReason::Denied),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::{PermissionLevel, PermissionManager};

    // The decision every allowed call takes on its way through the engine allocates
    // nothing: a tool without a permission of its own under the manager's default, a
    // tool's own ALLOW, and an override that allows.
    #[test]
    fn an_allow_decision_allocates_nothing() {
        let manager = PermissionManager::default().with_override("grep", PermissionLevel::Allow);
        let arguments = serde_json::json!({"pattern": "x"});
        let requests = [
            AuthRequest { tool: "add", permission: None, call_id: "c1", arguments: &arguments },
            AuthRequest {
                tool: "add",
                permission: Some(PermissionLevel::Allow),
                call_id: "c1",
                arguments: &arguments,
            },
            AuthRequest {
                tool: "grep",
                permission: Some(PermissionLevel::Ask),
                call_id: "c1",
                arguments: &arguments,
            },
        ];
        for request in requests {
            let mut decided = None;
            let info =
                allocation_counter::measure(|| decided = Some(Authorizer::authorize(&manager, request)));
            assert!(matches!(decided, Some(Decision::Now(Authorization::Allow))), "{request:?}: {decided:?}");
            assert_eq!(info.count_total, 0, "{request:?}: {info:?}");
        }
    }
}
