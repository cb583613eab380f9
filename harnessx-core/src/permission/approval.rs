//! Approvals for ASK: the request, the decision, the callback that asks someone, and the
//! seam for a persistent approval store (used by the durable runtime).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Mutex;

use futures_util::future::BoxFuture;
use serde_json::Value;

/// What is being asked: one call of one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// The registered (resolved) tool name.
    pub tool_name: String,
    /// The provider's call id.
    pub call_id: String,
    /// The validated arguments.
    pub arguments: Value,
}

/// The answer to an [`ApprovalRequest`]. Serialised as `"approve"`,
/// `"approve_for_session"`, `"deny"`, `{"approve_edited": {"arguments": {..}}}` or
/// `{"deny_with_message": {"message": ".."}}` (a journal written before the last two
/// existed reads the same).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run this call.
    Approve,
    /// Run this call, and grant the tool for the rest of the session (later ASK calls
    /// of the same tool run without asking; an ask *rule* still asks).
    ApproveForSession,
    /// Do not run it; the model is told `Permission denied`.
    Deny,
    /// Run this call with these arguments instead of the model's. They are validated
    /// against the tool's schema again and checked against the deny rules; the model's
    /// next request shows them as the call's arguments, and its result says the user
    /// changed them.
    ApproveEdited {
        /// The arguments the call runs with (a JSON object).
        arguments: Value,
        /// Also grant the tool for the rest of the session, as
        /// [`ApproveForSession`](Self::ApproveForSession).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        for_session: bool,
    },
    /// Do not run it; the model gets `message` instead of `Permission denied`.
    DenyWithMessage {
        /// What the person said, for the model.
        message: String,
    },
}

impl ApprovalDecision {
    /// Whether the call may run.
    pub fn is_approved(&self) -> bool {
        !matches!(self, Self::Deny | Self::DenyWithMessage { .. })
    }

    /// Whether it grants the tool for the session.
    pub fn grants_session(&self) -> bool {
        matches!(self, Self::ApproveForSession | Self::ApproveEdited { for_session: true, .. })
    }

    /// The text the model gets when this refuses the call.
    pub fn refusal(&self) -> Option<&str> {
        match self {
            Self::Deny => Some(crate::permission::PERMISSION_DENIED),
            Self::DenyWithMessage { message } if !message.trim().is_empty() => Some(message),
            Self::DenyWithMessage { .. } => Some(crate::permission::PERMISSION_DENIED),
            _ => None,
        }
    }

    /// A short name: `approve`, `session`, `deny`, `edit`, `deny with a message`.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::ApproveForSession => "session",
            Self::Deny => "deny",
            Self::ApproveEdited { .. } => "approve with edited arguments",
            Self::DenyWithMessage { .. } => "deny with a message",
        }
    }
}

/// Asks someone (a terminal, a web prompt, a chat message) whether an ASK call may run.
pub trait ApprovalHandler: Send + Sync {
    /// Decides on one request.
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision>;
}

/// An [`ApprovalHandler`] made from an async closure; see
/// [`PermissionManager::with_approval_fn`](crate::PermissionManager::with_approval_fn).
pub struct ApprovalFn<F>(pub F);

impl<F, Fut> ApprovalHandler for ApprovalFn<F>
where
    F: Fn(ApprovalRequest) -> Fut + Send + Sync,
    Fut: Future<Output = ApprovalDecision> + Send + 'static,
{
    fn decide<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        Box::pin((self.0)(request.clone()))
    }
}

/// A failure of an [`ApprovalStore`]. Treated as "no approval" (fail closed) and logged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("approval store error: {0}")]
pub struct ApprovalStoreError(pub String);

/// Durable approvals: decisions that outlive the process, so a recovered run does not ask
/// twice for the same call. Looked up before the approval callback is asked; every
/// decision the callback makes is saved.
pub trait ApprovalStore: Send + Sync {
    /// A decision recorded earlier for this request, if any.
    fn load<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<Option<ApprovalDecision>, ApprovalStoreError>>;

    /// Records a decision.
    fn save<'a>(
        &'a self,
        request: &'a ApprovalRequest,
        decision: ApprovalDecision,
    ) -> BoxFuture<'a, Result<(), ApprovalStoreError>>;
}

/// An [`ApprovalStore`] in memory, keyed by tool name and call id. Useful for tests and
/// for a process that wants per-call approvals remembered for its lifetime.
#[derive(Default)]
pub struct MemoryApprovalStore {
    decisions: Mutex<HashMap<(String, String), ApprovalDecision>>,
}

impl fmt::Debug for MemoryApprovalStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryApprovalStore").field("len", &self.len()).finish()
    }
}

impl MemoryApprovalStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of recorded decisions.
    pub fn len(&self) -> usize {
        self.decisions.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records a decision directly (as a previous process would have).
    pub fn insert(&self, tool_name: &str, call_id: &str, decision: ApprovalDecision) {
        self.decisions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((tool_name.to_owned(), call_id.to_owned()), decision);
    }
}

impl ApprovalStore for MemoryApprovalStore {
    fn load<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<Option<ApprovalDecision>, ApprovalStoreError>> {
        let key = (request.tool_name.clone(), request.call_id.clone());
        let found = self.decisions.lock().unwrap_or_else(|e| e.into_inner()).get(&key).cloned();
        Box::pin(std::future::ready(Ok(found)))
    }

    fn save<'a>(
        &'a self,
        request: &'a ApprovalRequest,
        decision: ApprovalDecision,
    ) -> BoxFuture<'a, Result<(), ApprovalStoreError>> {
        self.insert(&request.tool_name, &request.call_id, decision);
        Box::pin(std::future::ready(Ok(())))
    }
}
