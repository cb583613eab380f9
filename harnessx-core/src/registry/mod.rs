//! [`ToolRegistry`]: the tools an agent can call, their policy, and the entry points of
//! the execution engine.

mod loading;
pub mod resolve;
mod source;

use std::fmt;
use std::future::Future;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde::Serialize;
use serde_json::Value;

use crate::engine::context::RunContext;
use crate::engine::pipeline::{self, CallOutcome, CallTarget, PlannedBatch, RunHooks};
use crate::engine::serial::SerialQueue;
use crate::error::RegistryError;
use crate::hooks::ToolHooks;
use crate::permission::PermissionManager;
use crate::sandbox::Sandbox;
use crate::schema::canonical_schema;
use crate::tool::call::{ToolCall, ToolResult};
use crate::tool::definition::{IntoToolDefinition, ToolDefinition, ToolOptions};
use crate::tool::handler::ToolHandler;
use crate::tool::name::repair_key;
use crate::tool::policy::{EffectivePolicy, ToolPolicy};
use crate::tool::registered::RegisteredTool;

pub use resolve::NameResolution;
pub use source::ToolSource;

/// What a registry holds. Only `registry/` sees it; the engine gets [`CallTarget`]s.
pub(crate) struct State {
    tools: resolve::Tools,
    /// Formatting-insensitive key -> registered names with that key.
    keys: resolve::Keys,
    explicit: ToolPolicy,
    inherited: ToolPolicy,
    effective: EffectivePolicy,
    serial: SerialQueue,
    sandbox: Option<Arc<dyn Sandbox>>,
    /// The hooks of the direct entry points ([`ToolRegistry::set_hooks`]), as the options
    /// those runs take; `None` without hooks (shared, so a call clones a pointer).
    hooks: Option<Arc<RunHooks>>,
    /// Bumped by every registration and removal (see [`ToolRegistry::revision`]).
    revision: u64,
}

impl State {
    /// What the engine needs to run a call of `name`: the tool it resolves to (or the
    /// error text for the model), the policy and the serial queue.
    pub(crate) fn target(&self, name: &str) -> CallTarget {
        let tool = resolve::resolve(&self.tools, &self.keys, name).map_err(|unknown| unknown.to_string());
        CallTarget::new(tool, self.effective, &self.serial)
    }
}

/// The registered tools, shared: cloning a registry gives another handle to the same
/// tools (like an `Arc`), which is how an agent attaches an existing registry.
///
/// ```
/// use harnessx_core::{ToolCall, ToolHandler, ToolOptions, ToolRegistry};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let registry = ToolRegistry::new();
/// registry.register_with_schema(
///     "label",
///     "Uppercase a short label.",
///     json!({"type": "object", "properties": {"value": {"type": "string", "maxLength": 40}},
///            "required": ["value"], "additionalProperties": false}),
///     ToolHandler::from_async(|args, _ctx| async move {
///         Ok(args["value"].as_str().unwrap_or_default().to_uppercase().into())
///     }),
///     ToolOptions::new(),
/// ).unwrap();
/// let result = registry.execute(&ToolCall::new("c1", "label", r#"{"value":"ok"}"#), None).await;
/// assert_eq!(result.content, "OK");
/// # }
/// ```
#[derive(Clone)]
pub struct ToolRegistry {
    inner: Arc<RwLock<State>>,
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.read();
        f.debug_struct("ToolRegistry")
            .field("tools", &state.tools.keys().collect::<Vec<_>>())
            .field("policy", &state.effective)
            .field("sandbox", &state.sandbox.as_ref().map(|s| s.name().to_owned()))
            .finish()
    }
}

/// A [`ToolRegistry`] handle that does not keep it alive ([`ToolRegistry::downgrade`]).
#[derive(Clone, Debug)]
pub struct WeakToolRegistry {
    inner: std::sync::Weak<RwLock<State>>,
}

impl WeakToolRegistry {
    /// The registry, while some [`ToolRegistry`] handle to it is alive.
    pub fn upgrade(&self) -> Option<ToolRegistry> {
        self.inner.upgrade().map(|inner| ToolRegistry { inner })
    }
}

/// A tool as providers need it: canonical, provider-neutral, without the handler.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// The tool name.
    pub name: String,
    /// The description.
    pub description: String,
    /// The canonical input schema (see [`crate::canonical_schema`]).
    pub input_schema: Value,
}

impl ToolRegistry {
    /// An empty registry with the built-in policy defaults.
    pub fn new() -> Self {
        Self::with_policy(ToolPolicy::default())
    }

    /// An empty registry with its own policy values, which take precedence over an agent's
    /// `ToolPolicy` adopted later (see [`adopt_policy`](Self::adopt_policy)).
    pub fn with_policy(policy: ToolPolicy) -> Self {
        let effective = policy.effective();
        Self {
            inner: Arc::new(RwLock::new(State {
                tools: resolve::Tools::default(),
                keys: resolve::Keys::default(),
                explicit: policy,
                inherited: ToolPolicy::default(),
                effective,
                serial: SerialQueue::new(),
                sandbox: None,
                hooks: None,
                revision: 0,
            })),
        }
    }

    pub(crate) fn read(&self) -> RwLockReadGuard<'_, State> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether two handles share one registry.
    pub fn same_registry(&self, other: &ToolRegistry) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Adopts an agent's `ToolPolicy` (`AgentConfig::tools`): it fills the values this
    /// registry's own policy leaves unset. Adopting again replaces the earlier agent policy.
    pub fn adopt_policy(&self, agent_policy: &ToolPolicy) {
        let mut state = self.write();
        state.inherited = agent_policy.clone();
        state.effective = state.explicit.or(&state.inherited).effective();
    }

    /// The effective policy values (registry's own > agent's > built-in defaults).
    pub fn policy(&self) -> EffectivePolicy {
        self.read().effective
    }

    /// The queue this registry's serial tools take turns on.
    pub fn serial_queue(&self) -> SerialQueue {
        self.read().serial.clone()
    }

    /// Makes this registry's serial tools take turns on `queue` (shared with other
    /// registries, e.g. an agent's and its specialists').
    pub fn set_serial_queue(&self, queue: SerialQueue) {
        self.write().serial = queue;
    }

    /// Binds `sandbox` as where this registry's shell commands run (the `bash` built-in)
    /// and, when it owns a filesystem, where its file tools act. Tools read the binding
    /// when they are registered, so bind before loading `bash` or the file tools; a later
    /// bind replaces the binding for tools registered after it.
    pub fn bind_sandbox(&self, sandbox: Arc<dyn Sandbox>) {
        self.write().sandbox = Some(sandbox);
    }

    /// The bound sandbox (`agent.tools().sandbox()`), if any.
    pub fn sandbox(&self) -> Option<Arc<dyn Sandbox>> {
        self.read().sandbox.clone()
    }

    /// Puts the calls made directly through this registry ([`execute`](Self::execute),
    /// [`execute_in`](Self::execute_in), [`execute_batch`](Self::execute_batch)) through
    /// `hooks` (see [`crate::hooks`]): what a server of these tools (`mcp serve`) or a
    /// command that calls one tool applies to every call. Replaces the hooks set before;
    /// empty hooks remove them.
    ///
    /// A context's own hooks ([`RunContext::with_hooks`]) win: a call whose context has
    /// hooks goes through those alone. A runtime that plans its batches
    /// ([`run_planned`](Self::run_planned): the agent loop, a durable run) applies its own
    /// hooks, so it can record what they decided; an agent is given hooks on its builder.
    ///
    /// ```
    /// use futures_util::future::BoxFuture;
    /// use harnessx_core::hooks::{HookError, PreDecision, PreToolUse, ToolHook, ToolHooks};
    /// use harnessx_core::{ToolCall, ToolRegistry};
    ///
    /// struct NoAbsolutePaths;
    ///
    /// impl ToolHook for NoAbsolutePaths {
    ///     fn name(&self) -> &str {
    ///         "no-absolute-paths"
    ///     }
    ///     fn pre_tool_use<'a>(&'a self, call: PreToolUse<'a>) -> BoxFuture<'a, Result<PreDecision, HookError>> {
    ///         let absolute = call.arguments["path"].as_str().is_some_and(|p| p.starts_with('/'));
    ///         Box::pin(async move {
    ///             Ok(if absolute {
    ///                 PreDecision::Deny { message: "give a relative path".into() }
    ///             } else {
    ///                 PreDecision::Continue
    ///             })
    ///         })
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let registry = ToolRegistry::new();
    /// # registry.register_with_schema("read", "Read.", serde_json::json!({"type": "object"}),
    /// #     harnessx_core::ToolHandler::from_async(|_, _| async { Ok("text".into()) }),
    /// #     harnessx_core::ToolOptions::new()).unwrap();
    /// registry.set_hooks(ToolHooks::new().with(NoAbsolutePaths));
    /// let result = registry.execute(&ToolCall::new("c1", "read", r#"{"path": "/etc/passwd"}"#), None).await;
    /// assert_eq!((result.is_error, result.content.as_str()), (true, "give a relative path"));
    /// # }
    /// ```
    pub fn set_hooks(&self, hooks: ToolHooks) {
        self.write().hooks = (!hooks.is_empty()).then(|| Arc::new(RunHooks::of_registry(hooks)));
    }

    /// The hooks of the direct entry points ([`set_hooks`](Self::set_hooks)); empty
    /// without any.
    pub fn hooks(&self) -> ToolHooks {
        self.read().hooks.as_ref().and_then(|h| h.registry.clone()).unwrap_or_default()
    }

    /// Registers a tool (a `#[tool]` struct or a [`ToolDefinition`]) with its own metadata.
    pub fn register_tool(&self, tool: impl IntoToolDefinition) -> Result<ToolDefinition, RegistryError> {
        // Generic only in the conversion (compiled per tool type); the rest is shared.
        self.register_definition(tool.into_tool_definition(), ToolOptions::default())
    }

    /// Registers a tool, overriding only the metadata `options` sets. An explicit
    /// permission or replay policy on the definition is kept unless `options` sets one.
    pub fn register_tool_with(
        &self,
        tool: impl IntoToolDefinition,
        options: ToolOptions,
    ) -> Result<ToolDefinition, RegistryError> {
        self.register_definition(tool.into_tool_definition(), options)
    }

    fn register_definition(
        &self,
        def: ToolDefinition,
        options: ToolOptions,
    ) -> Result<ToolDefinition, RegistryError> {
        let def = def.apply(&options);
        self.insert(def, options.replace)
    }

    /// Registers a handler under an explicit schema: the spec's four positional
    /// parameters, with the keyword-only ones in `options`.
    pub fn register_with_schema(
        &self,
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: ToolHandler,
        options: ToolOptions,
    ) -> Result<ToolDefinition, RegistryError> {
        self.register_tool_with(ToolDefinition::new(name, description, input_schema, handler), options)
    }

    fn insert(&self, def: ToolDefinition, replace: bool) -> Result<ToolDefinition, RegistryError> {
        let tool = Arc::new(RegisteredTool::new(def.clone())?);
        let name = tool.name().clone();
        let mut state = self.write();
        if state.tools.contains_key(&def.name) {
            if !replace {
                return Err(RegistryError::DuplicateTool { name: def.name });
            }
        } else {
            state.keys.entry(repair_key(&def.name)).or_default().push(name);
        }
        state.tools.insert(def.name.clone(), tool);
        state.revision += 1;
        Ok(def)
    }

    /// Fails with [`RegistryError::DuplicateTool`] for the first of `names` already
    /// registered. Bundles check every name before registering any, so that a clash
    /// leaves nothing half-registered.
    pub fn ensure_free(&self, names: &[&str]) -> Result<(), RegistryError> {
        let state = self.read();
        match names.iter().find(|n| state.tools.contains_key(**n)) {
            Some(taken) => Err(RegistryError::DuplicateTool { name: (*taken).to_owned() }),
            None => Ok(()),
        }
    }

    /// Removes a tool; returns its definition if it was registered.
    pub fn remove_tool(&self, name: &str) -> Option<ToolDefinition> {
        let mut state = self.write();
        let removed = state.tools.shift_remove(name)?;
        state.revision += 1;
        let key = repair_key(name);
        if let Some(names) = state.keys.get_mut(&key) {
            names.retain(|n| &**n != name);
            if names.is_empty() {
                state.keys.remove(&key);
            }
        }
        Some(removed.definition().clone())
    }

    /// The definition registered under exactly this name.
    pub fn get_tool(&self, name: &str) -> Option<ToolDefinition> {
        self.read().tools.get(name).map(|t| t.definition().clone())
    }

    /// A number that changes whenever a tool is registered or removed: a loop that sent
    /// the model [`get_tool_params`](Self::get_tool_params) checks it between turns to
    /// send the new set (the tools of an MCP server that announced a change, say).
    pub fn revision(&self) -> u64 {
        self.read().revision
    }

    /// A handle that does not keep the registry alive (for a background task that
    /// updates it, such as an MCP server's tool-list refresh).
    pub fn downgrade(&self) -> WeakToolRegistry {
        WeakToolRegistry { inner: Arc::downgrade(&self.inner) }
    }

    /// Whether a tool of exactly this name is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.read().tools.contains_key(name)
    }

    /// All definitions, in registration order.
    pub fn list_tools(&self) -> Vec<ToolDefinition> {
        self.read().tools.values().map(|t| t.definition().clone()).collect()
    }

    /// All tool names, in registration order.
    pub fn tool_names(&self) -> Vec<String> {
        self.read().tools.keys().cloned().collect()
    }

    /// Number of registered tools.
    pub fn len(&self) -> usize {
        self.read().tools.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.read().tools.is_empty()
    }

    /// The canonical, provider-neutral schemas of all tools, in registration order.
    pub fn get_tool_params(&self) -> Vec<ToolSpec> {
        self.read()
            .tools
            .values()
            .map(|t| {
                let def = t.definition();
                ToolSpec {
                    name: def.name.clone(),
                    description: def.description.clone(),
                    input_schema: canonical_schema(&def.input_schema),
                }
            })
            .collect()
    }

    /// The timeout a tool's calls run under, in seconds: its own, else the registry's.
    pub fn effective_timeout_seconds(&self, name: &str) -> Option<f64> {
        let state = self.read();
        let tool = state.tools.get(name)?;
        Some(tool.definition().timeout_seconds.unwrap_or(state.effective.default_timeout_seconds))
    }

    /// Resolves a name as the model wrote it: exact match, else a formatting-only repair
    /// when exactly one tool matches (see [`crate::tool::name`]).
    pub fn resolve_name(&self, requested: &str) -> NameResolution {
        let state = self.read();
        resolve::resolve(&state.tools, &state.keys, requested).map(|t| t.name().to_string())
    }

    /// Executes one call through the whole pipeline: name resolution, argument parsing,
    /// schema validation, permission, timeout and retry. Without a manager, omitted
    /// permissions are ALLOW, and explicit ASK and DENY return `Permission denied`.
    // (These two return `async move` blocks rather than being `async fn`s: an `async fn`
    // keeps its arguments twice in its future, and a call's future is moved whole into
    // whatever awaits it.)
    #[allow(clippy::manual_async_fn, reason = "an async fn keeps its arguments twice in its future")]
    pub fn execute<'a>(
        &'a self,
        call: &'a ToolCall,
        permissions: Option<&'a PermissionManager>,
    ) -> impl Future<Output = ToolResult> + Send + 'a {
        async move {
            let ctx = match permissions {
                Some(p) => RunContext::new().with_permissions(p.clone()),
                None => RunContext::new(),
            };
            let (target, hooks) = self.direct(&call.name);
            pipeline::execute_one(target, call, &ctx, hooks).await
        }
    }

    /// Executes one call within a run (sharing its permissions, events and dedupe).
    #[allow(clippy::manual_async_fn, reason = "an async fn keeps its arguments twice in its future")]
    pub fn execute_in<'a>(
        &'a self,
        call: &'a ToolCall,
        ctx: &'a RunContext,
    ) -> impl Future<Output = ToolResult> + Send + 'a {
        async move {
            let (target, hooks) = self.direct(&call.name);
            pipeline::execute_one(target, call, ctx, hooks).await
        }
    }

    /// Executes the calls of one model turn: concurrent tools run together, the others one
    /// at a time in call order alongside them. Results come back in call order;
    /// `CallStart` events are emitted in call order; a failure cancels nothing.
    pub async fn execute_batch(&self, calls: &[ToolCall], ctx: &RunContext) -> Vec<ToolResult> {
        let (targets, hooks): (Vec<CallTarget>, _) = {
            let state = self.read();
            (calls.iter().map(|c| state.target(&c.name)).collect(), state.hooks.clone())
        };
        pipeline::execute_batch(targets, calls, ctx, hooks.as_deref()).await
    }

    /// What a direct call of `name` runs: its target, and the registry's hooks.
    fn direct(&self, name: &str) -> (CallTarget, Option<Arc<RunHooks>>) {
        let state = self.read();
        (state.target(name), state.hooks.clone())
    }

    /// Resolves and checks the calls of one model turn without running them, for a
    /// runtime that records each step before acting on it; run them with
    /// [`run_planned`](Self::run_planned). `execute_batch` is `plan_batch` then
    /// `run_planned` with no hooks (but the registry's, [`set_hooks`](Self::set_hooks)).
    pub fn plan_batch(&self, calls: &[ToolCall]) -> PlannedBatch {
        let targets: Vec<CallTarget> = {
            let state = self.read();
            calls.iter().map(|c| state.target(&c.name)).collect()
        };
        PlannedBatch::new(targets, calls)
    }

    /// Runs a [`PlannedBatch`] like [`execute_batch`](Self::execute_batch) (same
    /// scheduling, permissions for calls not [`authorize`](PlannedBatch::authorize)d,
    /// timeouts, retries, dedupe, events), calling `hooks` as handlers start and calls
    /// finish. Outcomes come back in call order. The registry's own hooks
    /// ([`set_hooks`](Self::set_hooks)) are not asked: the runtime gives its context
    /// the hooks it records.
    pub async fn run_planned(
        &self,
        batch: PlannedBatch,
        ctx: &RunContext,
        hooks: &RunHooks,
    ) -> Vec<CallOutcome> {
        pipeline::run_planned(batch, ctx, hooks).await
    }
}
