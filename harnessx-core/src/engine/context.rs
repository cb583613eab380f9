//! [`RunContext`]: what one run shares across its calls (permissions, events, dedupe).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use crate::engine::cap::ResultDir;
use crate::engine::events::{ToolEvent, ToolEventSink};
use crate::engine::pipeline::Invoked;
use crate::hooks::{RunUsage, ToolHooks};
use crate::permission::{Authorizer, NoManager, PermissionManager};

type DedupeSlot = Arc<OnceCell<Invoked>>;
type DedupeMap = HashMap<(Arc<str>, String), DedupeSlot>;

/// The state one run shares across its tool calls: the [`Authorizer`] that decides
/// permissions (usually a [`PermissionManager`]), the event sink, and, when the registry
/// deduplicates, the results of earlier identical calls.
///
/// Create one per agent run (or per logical unit of work) and pass it to
/// [`ToolRegistry::execute_batch`](crate::ToolRegistry::execute_batch).
#[derive(Default)]
pub struct RunContext {
    permissions: Option<PermissionManager>,
    /// Another authorizer than the manager (the manager itself is used without one, so
    /// a context costs no allocation for it).
    authorizer: Option<Arc<dyn Authorizer>>,
    events: Option<Arc<dyn ToolEventSink>>,
    /// Made on the first deduplicated call (a context is made for every direct call).
    dedupe: Mutex<Option<DedupeMap>>,
    /// Where the whole text of a capped result is saved.
    result_dir: Option<Arc<ResultDir>>,
    /// The hooks every call goes through ([`crate::hooks`]); `None` costs nothing.
    hooks: Option<ToolHooks>,
    /// The durable run's id, as hooks see it.
    run_id: Option<Arc<str>>,
    /// What the run used so far, as hooks see it (the run sets it before each batch).
    usage: Mutex<RunUsage>,
}

impl fmt::Debug for RunContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunContext")
            .field("permissions", &self.permissions)
            .field("events", &self.events.is_some())
            .finish_non_exhaustive()
    }
}

impl RunContext {
    /// A context with no manager (omitted permissions are ALLOW; explicit ASK and DENY are
    /// denied) and no event sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses a permission manager: its rules, approval callback and store decide.
    pub fn with_permissions(mut self, permissions: PermissionManager) -> Self {
        self.permissions = Some(permissions);
        self
    }

    /// Uses another [`Authorizer`] (a layer over a manager, such as the MCP server's
    /// elicitation). [`permissions`](Self::permissions) keeps the manager given to
    /// [`with_permissions`](Self::with_permissions), if any.
    pub fn with_authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    /// The authorizer calls are put to: the one given, else the manager, else the rule
    /// with no manager (omitted permissions ALLOW; explicit ASK and DENY denied).
    pub fn authorizer(&self) -> &dyn Authorizer {
        match (&self.authorizer, &self.permissions) {
            (Some(a), _) => &**a,
            (None, Some(manager)) => manager,
            (None, None) => &NoManager,
        }
    }

    /// Whether an authorizer other than the manager was given.
    pub(crate) fn has_own_authorizer(&self) -> bool {
        self.authorizer.is_some()
    }

    /// Sends engine events to a sink.
    pub fn with_events(mut self, sink: Arc<dyn ToolEventSink>) -> Self {
        self.events = Some(sink);
        self
    }

    /// The sink of the engine's events, if any (a handler's progress goes there).
    pub(crate) fn event_sink(&self) -> Option<&Arc<dyn ToolEventSink>> {
        self.events.as_ref()
    }

    /// The permission manager, if any.
    pub fn permissions(&self) -> Option<&PermissionManager> {
        self.permissions.as_ref()
    }

    /// Puts every call through these hooks: the pre hooks before its permission is
    /// decided, the post hooks on its result ([`crate::hooks`]).
    pub fn with_hooks(mut self, hooks: ToolHooks) -> Self {
        self.hooks = (!hooks.is_empty()).then_some(hooks);
        self
    }

    /// The hooks, if any.
    pub fn hooks(&self) -> Option<&ToolHooks> {
        self.hooks.as_ref()
    }

    /// The run the calls belong to, as hooks see it (`run_id`).
    pub fn with_run_id(mut self, run_id: impl Into<Arc<str>>) -> Self {
        self.run_id = Some(run_id.into());
        self
    }

    /// The run's id, if one was given.
    pub fn run_id(&self) -> Option<&str> {
        self.run_id.as_deref()
    }

    /// Sets what the run used so far, as the hooks of the calls after this see it.
    pub fn set_usage(&self, usage: RunUsage) {
        *self.usage.lock().unwrap_or_else(|e| e.into_inner()) = usage;
    }

    /// What the run used so far, as last set (zero outside a run).
    pub fn usage(&self) -> RunUsage {
        *self.usage.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Saves the whole text of a result longer than the cap
    /// ([`ToolPolicy::max_result_chars`](crate::ToolPolicy::max_result_chars)) in `dir`,
    /// and names the file in the marker the model reads.
    pub fn with_result_dir(mut self, dir: ResultDir) -> Self {
        self.result_dir = Some(Arc::new(dir));
        self
    }

    /// Where capped results are saved, if anywhere.
    pub fn result_dir(&self) -> Option<&ResultDir> {
        self.result_dir.as_deref()
    }

    /// Reports what the pre hooks decided about call `call_id` as a
    /// [`ToolEvent::Hook`], when they decided anything.
    pub fn report_hooks(&self, call_id: &str, outcome: &crate::hooks::PreOutcome) {
        if let Some(decision) = outcome.decision_name() {
            let hook = outcome.by.as_deref().unwrap_or_default();
            self.emit(ToolEvent::Hook { call_id, hook, decision });
        }
    }

    /// Hands `event` to the context's sink, if it has one (what the engine does with
    /// every event; a runtime that runs a stage itself, such as the hooks of a planned
    /// batch, reports it here too).
    pub fn emit(&self, event: ToolEvent<'_>) {
        if let Some(sink) = &self.events {
            sink.on_event(&event);
        }
    }

    /// The shared slot for an identical call; the first caller fills it.
    pub(crate) fn dedupe_slot(&self, tool: &Arc<str>, canonical_args: String) -> DedupeSlot {
        let mut map = self.dedupe.lock().unwrap_or_else(|e| e.into_inner());
        map.get_or_insert_default().entry((tool.clone(), canonical_args)).or_default().clone()
    }
}
