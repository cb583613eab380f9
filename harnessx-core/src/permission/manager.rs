//! [`PermissionManager`]: a default level, per-name overrides, an approval callback,
//! session grants and an optional persistent approval store.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::permission::approval::{
    ApprovalDecision, ApprovalFn, ApprovalHandler, ApprovalRequest, ApprovalStore,
};
use crate::permission::level::PermissionLevel;

/// Why a call was not allowed to run. The model only ever sees `Permission denied`; the
/// reason is for the operator (logs, events).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DenyReason {
    /// The effective level is DENY.
    Denied,
    /// The effective level is ASK and nothing can approve it (no callback, no grant, no
    /// stored approval).
    NoApprover,
    /// The approval callback (or a stored decision) said no.
    Rejected,
}

/// Decides whether tool calls may run.
///
/// Precedence: an override for the tool name beats everything; otherwise an explicit tool
/// permission beats the manager default. Then DENY blocks execution even against an
/// earlier session grant, and a session grant satisfies ASK without another prompt.
///
/// Cloning shares the manager (its overrides and grants).
#[derive(Clone)]
pub struct PermissionManager {
    inner: Arc<Inner>,
}

struct Inner {
    default: PermissionLevel,
    overrides: RwLock<HashMap<String, PermissionLevel>>,
    grants: RwLock<HashSet<String>>,
    approver: RwLock<Option<Arc<dyn ApprovalHandler>>>,
    store: RwLock<Option<Arc<dyn ApprovalStore>>>,
}

impl fmt::Debug for PermissionManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PermissionManager")
            .field("default", &self.inner.default)
            .field("overrides", &*read(&self.inner.overrides))
            .field("grants", &*read(&self.inner.grants))
            .field("approver", &read(&self.inner.approver).is_some())
            .field("store", &read(&self.inner.store).is_some())
            .finish()
    }
}

impl Default for PermissionManager {
    /// The ordinary agent's manager: default ALLOW, no callback.
    fn default() -> Self {
        Self::new(PermissionLevel::Allow)
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

impl PermissionManager {
    /// A manager whose default level applies to tools registered without a permission.
    pub fn new(default: PermissionLevel) -> Self {
        Self {
            inner: Arc::new(Inner {
                default,
                overrides: RwLock::default(),
                grants: RwLock::default(),
                approver: RwLock::new(None),
                store: RwLock::new(None),
            }),
        }
    }

    /// The default level.
    pub fn default_level(&self) -> PermissionLevel {
        self.inner.default
    }

    /// Adds an override for one tool name (builder form of [`set_override`](Self::set_override)).
    pub fn with_override(self, tool_name: impl Into<String>, level: PermissionLevel) -> Self {
        self.set_override(tool_name, level);
        self
    }

    /// Sets the approval callback (builder form of [`set_approval`](Self::set_approval)).
    pub fn with_approval(self, handler: impl ApprovalHandler + 'static) -> Self {
        self.set_approval(handler);
        self
    }

    /// Sets an async closure as the approval callback.
    ///
    /// ```
    /// # use harnessx_core::{PermissionLevel, PermissionManager, ApprovalDecision};
    /// let manager = PermissionManager::new(PermissionLevel::Ask)
    ///     .with_approval_fn(|request| async move {
    ///         if request.tool_name == "read_file" { ApprovalDecision::Approve } else { ApprovalDecision::Deny }
    ///     });
    /// ```
    pub fn with_approval_fn<F, Fut>(self, f: F) -> Self
    where
        F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ApprovalDecision> + Send + 'static,
    {
        self.with_approval(ApprovalFn(f))
    }

    /// A separate manager for one run: the same default, overrides, session grants and
    /// approval callback as this one now, but with `store` as its approval store and
    /// its own overrides and grants from here on (a grant in the run does not leak into
    /// the agent's manager). The durable runtime gives each run one, backed by the
    /// run's journal.
    pub fn fork_with_store(&self, store: Arc<dyn ApprovalStore>) -> Self {
        Self {
            inner: Arc::new(Inner {
                default: self.inner.default,
                overrides: RwLock::new(read(&self.inner.overrides).clone()),
                grants: RwLock::new(read(&self.inner.grants).clone()),
                approver: RwLock::new(read(&self.inner.approver).clone()),
                store: RwLock::new(Some(store)),
            }),
        }
    }

    /// Sets the persistent approval store.
    pub fn with_store(self, store: Arc<dyn ApprovalStore>) -> Self {
        *write(&self.inner.store) = Some(store);
        self
    }

    /// Overrides the level for one tool name; beats every other rule.
    pub fn set_override(&self, tool_name: impl Into<String>, level: PermissionLevel) {
        write(&self.inner.overrides).insert(tool_name.into(), level);
    }

    /// Removes an override.
    pub fn remove_override(&self, tool_name: &str) -> Option<PermissionLevel> {
        write(&self.inner.overrides).remove(tool_name)
    }

    /// The override for a tool name, if any.
    pub fn override_for(&self, tool_name: &str) -> Option<PermissionLevel> {
        read(&self.inner.overrides).get(tool_name).copied()
    }

    /// Replaces the approval callback.
    pub fn set_approval(&self, handler: impl ApprovalHandler + 'static) {
        *write(&self.inner.approver) = Some(Arc::new(handler));
    }

    /// Whether an approval callback is set.
    pub fn has_approval(&self) -> bool {
        read(&self.inner.approver).is_some()
    }

    /// Grants a tool for the session: later ASK calls run without asking. DENY still wins.
    pub fn grant_session(&self, tool_name: impl Into<String>) {
        write(&self.inner.grants).insert(tool_name.into());
    }

    /// Withdraws a session grant.
    pub fn revoke_session(&self, tool_name: &str) -> bool {
        write(&self.inner.grants).remove(tool_name)
    }

    /// Whether the tool has a session grant.
    pub fn has_session_grant(&self, tool_name: &str) -> bool {
        read(&self.inner.grants).contains(tool_name)
    }

    /// The level that applies to a tool: override > explicit tool permission > default.
    pub fn effective_level(
        &self,
        tool_name: &str,
        tool_permission: Option<PermissionLevel>,
    ) -> PermissionLevel {
        self.override_for(tool_name).or(tool_permission).unwrap_or(self.inner.default)
    }

    /// Decides whether a call may run, asking the store and then the callback for ASK.
    pub async fn authorize(
        &self,
        tool_name: &str,
        tool_permission: Option<PermissionLevel>,
        call_id: &str,
        arguments: &Value,
    ) -> Result<(), DenyReason> {
        match self.effective_level(tool_name, tool_permission) {
            PermissionLevel::Allow => Ok(()),
            PermissionLevel::Deny => Err(DenyReason::Denied),
            PermissionLevel::Ask => self.ask(tool_name, call_id, arguments).await,
        }
    }

    async fn ask(&self, tool_name: &str, call_id: &str, arguments: &Value) -> Result<(), DenyReason> {
        if self.has_session_grant(tool_name) {
            return Ok(());
        }
        let store = read(&self.inner.store).clone();
        let approver = read(&self.inner.approver).clone();
        if store.is_none() && approver.is_none() {
            return Err(DenyReason::NoApprover);
        }
        let request = ApprovalRequest {
            tool_name: tool_name.to_owned(),
            call_id: call_id.to_owned(),
            arguments: arguments.clone(),
        };
        if let Some(store) = &store {
            match store.load(&request).await {
                Ok(Some(decision)) => return self.apply(&request, decision),
                Ok(None) => {}
                Err(e) => {
                    tracing::error!(tool = tool_name, call_id, error = %e, "approval store lookup failed; denying");
                    return Err(DenyReason::Rejected);
                }
            }
        }
        let Some(approver) = approver else {
            return Err(DenyReason::NoApprover);
        };
        let decision = approver.decide(&request).await;
        if let Some(store) = &store
            && let Err(e) = store.save(&request, decision).await
        {
            tracing::error!(tool = tool_name, call_id, error = %e, "approval store save failed");
        }
        self.apply(&request, decision)
    }

    fn apply(&self, request: &ApprovalRequest, decision: ApprovalDecision) -> Result<(), DenyReason> {
        match decision {
            ApprovalDecision::Approve => Ok(()),
            ApprovalDecision::ApproveForSession => {
                self.grant_session(request.tool_name.clone());
                Ok(())
            }
            ApprovalDecision::Deny => Err(DenyReason::Rejected),
        }
    }
}

/// The rule when no manager is given: omitted permissions are ALLOW; explicit ASK (with
/// nothing to approve it) and explicit DENY are denied.
pub(crate) fn authorize_without_manager(tool_permission: Option<PermissionLevel>) -> Result<(), DenyReason> {
    match tool_permission {
        None | Some(PermissionLevel::Allow) => Ok(()),
        Some(PermissionLevel::Ask) => Err(DenyReason::NoApprover),
        Some(PermissionLevel::Deny) => Err(DenyReason::Denied),
    }
}
