//! [`PermissionManager`]: a default level, per-name overrides, an approval callback,
//! session grants and an optional persistent approval store.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard};

use serde_json::Value;

use crate::permission::approval::{
    ApprovalDecision, ApprovalFn, ApprovalHandler, ApprovalRequest, ApprovalStore,
};
use crate::permission::authorizer::{AuthRequest, Authorization, Authorizer, Decision};
use crate::permission::level::PermissionLevel;
use crate::permission::rules::{PermissionRules, RuleError};

/// Why a call was not allowed to run. The reason is for the operator (logs, events);
/// the model reads the [`Authorization::Deny`] message.
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
    /// A hook refused it ([`crate::hooks`]), or failed and so refused it.
    Hook,
}

/// Decides whether tool calls may run.
///
/// Precedence: [rules](PermissionRules) on names and arguments first, deny rules (and a
/// DENY override) before ask rules before allow rules; then an override for the tool
/// name; then an explicit tool permission; then the manager default. DENY blocks
/// execution even against an earlier session grant, and a session grant satisfies ASK
/// without another prompt (but not an ask rule, which asks every time).
///
/// Cloning shares the manager (its overrides and grants).
#[derive(Clone)]
pub struct PermissionManager {
    inner: Arc<Inner>,
}

struct Inner {
    default: PermissionLevel,
    overrides: Sparse<HashMap<String, PermissionLevel>>,
    grants: RwLock<HashSet<String>>,
    /// Rules on names and arguments: shared with the managers
    /// [`fork_with_store`](PermissionManager::fork_with_store) makes (rules are
    /// configuration; a rule added during a run holds in it).
    rules: Arc<Sparse<Arc<PermissionRules>>>,
    approver: RwLock<Option<Arc<dyn ApprovalHandler>>>,
    store: RwLock<Option<Arc<dyn ApprovalStore>>>,
    /// The manager a [`session`](PermissionManager::session) belongs to: its overrides,
    /// grants, callback and store apply here too, under this one's own.
    parent: Option<PermissionManager>,
}

impl fmt::Debug for PermissionManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PermissionManager")
            .field("default", &self.inner.default)
            .field("overrides", &*self.inner.overrides.lock())
            .field("grants", &*read(&self.inner.grants))
            .field("rules", &*self.inner.rules.lock())
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

/// A value behind a lock that every call looks at and that is almost always empty (a
/// manager's rules, its overrides), with a flag saying whether it may hold anything: an
/// empty one is seen without taking the lock.
#[derive(Default)]
struct Sparse<T> {
    value: RwLock<T>,
    any: AtomicBool,
}

/// What a [`Sparse`] holds.
trait Emptiable {
    fn is_empty(&self) -> bool;
}

impl Emptiable for HashMap<String, PermissionLevel> {
    fn is_empty(&self) -> bool {
        HashMap::is_empty(self)
    }
}

impl Emptiable for Arc<PermissionRules> {
    fn is_empty(&self) -> bool {
        PermissionRules::is_empty(self)
    }
}

impl<T: Emptiable> Sparse<T> {
    fn new(value: T) -> Self {
        Self { any: AtomicBool::new(!value.is_empty()), value: RwLock::new(value) }
    }

    /// Whether it holds anything.
    fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// The value, when it holds anything (without the lock when it does not).
    fn read(&self) -> Option<RwLockReadGuard<'_, T>> {
        self.any().then(|| read(&self.value))
    }

    /// The value, empty or not.
    fn lock(&self) -> RwLockReadGuard<'_, T> {
        read(&self.value)
    }

    /// Changes the value under the lock, and the flag with it.
    fn update<R>(&self, change: impl FnOnce(&mut T) -> R) -> R {
        let mut value = write(&self.value);
        let changed = change(&mut value);
        self.any.store(!value.is_empty(), Ordering::Release);
        changed
    }
}

fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
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
                overrides: Sparse::default(),
                grants: RwLock::default(),
                rules: Arc::default(),
                approver: RwLock::new(None),
                store: RwLock::new(None),
                parent: None,
            }),
        }
    }

    /// A session of this manager: one run, or one client's connection. It follows this
    /// manager (its default, overrides, grants, callback and store, including later
    /// changes) and keeps its own session grants and overrides on top, so a grant made in
    /// the session stays in it. This is where session grants live, for every caller: a
    /// durable run's grants (rebuilt from its journal), an MCP session's.
    pub fn session(&self) -> Self {
        Self {
            inner: Arc::new(Inner {
                default: self.inner.default,
                overrides: Sparse::default(),
                grants: RwLock::default(),
                rules: Arc::default(),
                approver: RwLock::new(None),
                store: RwLock::new(None),
                parent: Some(self.clone()),
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
                overrides: Sparse::new(self.inner.overrides.lock().clone()),
                grants: RwLock::new(read(&self.inner.grants).clone()),
                rules: self.own_or_inherited_rules(),
                approver: RwLock::new(self.approver()),
                store: RwLock::new(Some(store)),
                parent: None,
            }),
        }
    }

    /// Adds rules on names and arguments (see [`PermissionRules`]); builder form of
    /// [`add_rules`](Self::add_rules).
    ///
    /// ```
    /// # use harnessx_core::{PermissionLevel, PermissionManager, PermissionRules};
    /// let manager = PermissionManager::new(PermissionLevel::Ask).with_rules(
    ///     PermissionRules::new()
    ///         .with(PermissionLevel::Allow, "read_file(path=src/**)")?
    ///         .with(PermissionLevel::Deny, "run_bash(rm *)")?,
    /// );
    /// # Ok::<(), harnessx_core::RuleError>(())
    /// ```
    pub fn with_rules(self, rules: PermissionRules) -> Self {
        self.add_rules(&rules);
        self
    }

    /// Adds rules; a session's rules add to its manager's.
    pub fn add_rules(&self, rules: &PermissionRules) {
        self.inner.rules.update(|own| {
            let mut merged = (**own).clone();
            merged.extend(rules);
            *own = Arc::new(merged);
        });
    }

    /// The rule cell a fork shares: this manager's, or (for a session) a new one holding
    /// the rules in force.
    fn own_or_inherited_rules(&self) -> Arc<Sparse<Arc<PermissionRules>>> {
        if self.inner.parent.is_none() {
            return self.inner.rules.clone();
        }
        Arc::new(Sparse::new(Arc::new(self.all_rules())))
    }

    /// Adds one rule to the `level` list (the terminal's "always" adds an allow rule).
    pub fn add_rule(&self, level: PermissionLevel, rule: &str) -> Result<(), RuleError> {
        let one = PermissionRules::new().with(level, rule)?;
        self.add_rules(&one);
        Ok(())
    }

    /// Whether this manager (or the one a session belongs to) has any rules.
    pub fn has_rules(&self) -> bool {
        self.inner.rules.any() || self.inner.parent.as_ref().is_some_and(|p| p.has_rules())
    }

    /// The rules in force: this manager's, and those of the manager a session belongs to.
    pub fn all_rules(&self) -> PermissionRules {
        let mut all = match &self.inner.parent {
            Some(parent) => parent.all_rules(),
            None => PermissionRules::new(),
        };
        // (The rules' `Arc` taken, so they are copied without the lock held.)
        if let Some(own) = self.inner.rules.read().map(|own| Arc::clone(&own)) {
            let mut mine = (*own).clone();
            mine.extend(&all);
            all = mine;
        }
        all
    }

    /// What the rules say of a call: deny, ask or allow, or `None` when none matches.
    /// Free (no lock, no allocation) for a manager without rules.
    pub fn rule_level(&self, tool: &str, arguments: &Value) -> Option<PermissionLevel> {
        let own = self.inner.rules.read().and_then(|rules| rules.decide(tool, arguments));
        let parent = match &self.inner.parent {
            Some(p) if own != Some(PermissionLevel::Deny) => p.rule_level(tool, arguments),
            _ => None,
        };
        strictest(own, parent)
    }

    /// Sets the persistent approval store.
    pub fn with_store(self, store: Arc<dyn ApprovalStore>) -> Self {
        *write(&self.inner.store) = Some(store);
        self
    }

    /// Overrides the level for one tool name; beats every other rule.
    pub fn set_override(&self, tool_name: impl Into<String>, level: PermissionLevel) {
        self.inner.overrides.update(|overrides| overrides.insert(tool_name.into(), level));
    }

    /// Removes an override.
    pub fn remove_override(&self, tool_name: &str) -> Option<PermissionLevel> {
        self.inner.overrides.update(|overrides| overrides.remove(tool_name))
    }

    /// The override for a tool name, if any (a session's own, else its manager's).
    pub fn override_for(&self, tool_name: &str) -> Option<PermissionLevel> {
        let own = self.inner.overrides.read().and_then(|overrides| overrides.get(tool_name).copied());
        own.or_else(|| self.inner.parent.as_ref()?.override_for(tool_name))
    }

    /// Replaces the approval callback.
    pub fn set_approval(&self, handler: impl ApprovalHandler + 'static) {
        *write(&self.inner.approver) = Some(Arc::new(handler));
    }

    /// Whether an approval callback is set.
    pub fn has_approval(&self) -> bool {
        self.approver().is_some()
    }

    /// Grants a tool for the session: later ASK calls run without asking. DENY still wins.
    pub fn grant_session(&self, tool_name: impl Into<String>) {
        write(&self.inner.grants).insert(tool_name.into());
    }

    /// Withdraws a session grant.
    pub fn revoke_session(&self, tool_name: &str) -> bool {
        write(&self.inner.grants).remove(tool_name)
    }

    /// Whether the tool has a session grant (in this session, or in its manager).
    pub fn has_session_grant(&self, tool_name: &str) -> bool {
        read(&self.inner.grants).contains(tool_name)
            || self.inner.parent.as_ref().is_some_and(|p| p.has_session_grant(tool_name))
    }

    /// The level that applies to a tool: override > explicit tool permission > default.
    pub fn effective_level(
        &self,
        tool_name: &str,
        tool_permission: Option<PermissionLevel>,
    ) -> PermissionLevel {
        self.override_for(tool_name).or(tool_permission).unwrap_or(self.inner.default)
    }

    /// The approval callback, if one is set (a session's own, else its manager's).
    pub fn approver(&self) -> Option<Arc<dyn ApprovalHandler>> {
        let own = read(&self.inner.approver).clone();
        own.or_else(|| self.inner.parent.as_ref()?.approver())
    }

    /// The approval store, if one is set (a session's own, else its manager's).
    fn store(&self) -> Option<Arc<dyn ApprovalStore>> {
        let own = read(&self.inner.store).clone();
        own.or_else(|| self.inner.parent.as_ref()?.store())
    }

    /// The manager's rules alone, without asking anyone: the effective level
    /// (override > explicit tool permission > default), then DENY wins, a session grant
    /// satisfies ASK, and an ASK without a grant is a question for a person
    /// ([`Authorization::Wait`]). Never waits and allocates nothing unless it asks.
    pub fn rules(&self, request: AuthRequest<'_>) -> Authorization {
        match self.rule_level(request.tool, request.arguments) {
            None => {}
            Some(PermissionLevel::Deny) => return Authorization::denied(DenyReason::Denied),
            // A DENY override is a deny rule on the name.
            Some(_) if self.override_for(request.tool) == Some(PermissionLevel::Deny) => {
                return Authorization::denied(DenyReason::Denied);
            }
            // An ask rule asks every time: a session grant does not answer it.
            Some(PermissionLevel::Ask) => return Authorization::ask(request.tool),
            Some(PermissionLevel::Allow) => return Authorization::Allow,
        }
        self.by_level(request.tool, request.permission)
    }

    /// The answer of the tool's effective level, when no rule on names and arguments
    /// matched: DENY wins, a session grant satisfies ASK.
    fn by_level(&self, tool: &str, permission: Option<PermissionLevel>) -> Authorization {
        match self.effective_level(tool, permission) {
            PermissionLevel::Allow => Authorization::Allow,
            PermissionLevel::Deny => Authorization::denied(DenyReason::Denied),
            PermissionLevel::Ask if self.has_session_grant(tool) => Authorization::Allow,
            PermissionLevel::Ask => Authorization::ask(tool),
        }
    }

    /// Applies a person's decision on an ASK call of `tool`: a session grant grants the
    /// tool for the rest of the session; the answer is what the call gets (edited
    /// arguments to run with, or the person's text for the model).
    pub fn apply(&self, tool: &str, decision: ApprovalDecision) -> Authorization {
        if decision.grants_session() {
            self.grant_session(tool.to_owned());
        }
        match decision {
            ApprovalDecision::Approve | ApprovalDecision::ApproveForSession => Authorization::Allow,
            ApprovalDecision::ApproveEdited { arguments, .. } => Authorization::AllowEdited { arguments },
            ApprovalDecision::Deny => Authorization::denied(DenyReason::Rejected),
            refused @ ApprovalDecision::DenyWithMessage { .. } => Authorization::Deny {
                reason: DenyReason::Rejected,
                message: Cow::Owned(refused.refusal().unwrap_or_default().to_owned()),
            },
        }
    }

    /// Edited arguments a person approved, checked against the rules before they run:
    /// a deny rule (or DENY) still refuses them; anything else runs, since the person
    /// saw exactly these.
    pub fn recheck_edited(
        &self,
        tool: &str,
        permission: Option<PermissionLevel>,
        arguments: &Value,
    ) -> Authorization {
        let request = AuthRequest { tool, permission, call_id: "", arguments };
        match self.rules(request) {
            denied @ Authorization::Deny { .. } => denied,
            _ => Authorization::Allow,
        }
    }

    /// A person's decision on an ASK call, from the approval store (a decision recorded
    /// earlier) or else the approval callback (saved in the store); `None` when neither
    /// is set. A failing store lookup denies (fail closed).
    pub async fn decision(&self, request: &ApprovalRequest) -> Option<ApprovalDecision> {
        let tool_name = request.tool_name.as_str();
        let call_id = request.call_id.as_str();
        let store = self.store();
        if let Some(store) = &store {
            match store.load(request).await {
                Ok(Some(decision)) => return Some(decision),
                Ok(None) => {}
                Err(e) => {
                    tracing::error!(tool = tool_name, call_id, error = %e, "approval store lookup failed; denying");
                    return Some(ApprovalDecision::Deny);
                }
            }
        }
        let approver = self.approver()?;
        let decision = approver.decide(request).await;
        if let Some(store) = &store
            && let Err(e) = store.save(request, decision.clone()).await
        {
            tracing::error!(tool = tool_name, call_id, error = %e, "approval store save failed");
        }
        Some(decision)
    }

    /// Whether an approval callback or store can answer ASK calls.
    pub fn can_decide(&self) -> bool {
        self.store().is_some() || self.approver().is_some()
    }

    /// ASK without a grant: [`decision`](Self::decision), applied.
    async fn ask(&self, request: ApprovalRequest) -> Authorization {
        match self.decision(&request).await {
            Some(decision) => self.apply(&request.tool_name, decision),
            None => Authorization::ask(&request.tool_name),
        }
    }
}

/// A [`PermissionManager`]'s rules as an [`Authorizer`], without its approval store and
/// callback: an ASK without a grant stays a question ([`Authorization::Wait`]) for the
/// caller to put to someone. What a runtime that records each decision asks first
/// ([`PermissionManager::rules_only`]).
#[derive(Debug, Clone, Copy)]
pub struct ManagerRules<'a>(pub &'a PermissionManager);

impl Authorizer for ManagerRules<'_> {
    fn authorize<'a>(&'a self, request: AuthRequest<'a>) -> Decision<'a> {
        Decision::Now(self.0.rules(request))
    }

    fn authorize_by_name(&self, tool: &str, permission: Option<PermissionLevel>) -> Option<Authorization> {
        self.0.authorize_by_name(tool, permission)
    }
}

impl PermissionManager {
    /// These rules as an [`Authorizer`] that never asks anyone ([`ManagerRules`]).
    pub fn rules_only(&self) -> ManagerRules<'_> {
        ManagerRules(self)
    }
}

/// The stricter of two rule answers: deny over ask over allow over none.
fn strictest(a: Option<PermissionLevel>, b: Option<PermissionLevel>) -> Option<PermissionLevel> {
    let rank = |l: Option<PermissionLevel>| match l {
        Some(PermissionLevel::Deny) => 3,
        Some(PermissionLevel::Ask) => 2,
        Some(PermissionLevel::Allow) => 1,
        None => 0,
    };
    if rank(b) > rank(a) { b } else { a }
}

/// The manager's rules, with its approval store and callback as the layer that answers
/// the questions the rules raise. Without either, an ASK stays a question
/// ([`Authorization::Wait`]) for the caller to put to someone, or to deny.
impl Authorizer for PermissionManager {
    fn authorize<'a>(&'a self, request: AuthRequest<'a>) -> Decision<'a> {
        match self.rules(request) {
            Authorization::Wait { .. } if self.can_decide() => {
                let request = ApprovalRequest {
                    tool_name: request.tool.to_owned(),
                    call_id: request.call_id.to_owned(),
                    arguments: request.arguments.clone(),
                };
                Decision::Later(Box::pin(self.ask(request)))
            }
            decided => Decision::Now(decided),
        }
    }

    /// Without rules on names and arguments, an ALLOW, a DENY, and an ASK the session
    /// granted are decided by name: [`rules`](Self::rules) without its first step. An ASK
    /// to put to a person, or any rule, needs the arguments.
    fn authorize_by_name(&self, tool: &str, permission: Option<PermissionLevel>) -> Option<Authorization> {
        if self.has_rules() {
            return None;
        }
        match self.by_level(tool, permission) {
            Authorization::Wait { .. } => None,
            decided => Some(decided),
        }
    }
}
