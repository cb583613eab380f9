//! [`ToolDefinition`]: a name, a description, an input schema, a handler, an execution
//! policy and annotations. Registration options ([`ToolOptions`]) override only what they
//! set.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::permission::PermissionLevel;
use crate::tool::annotations::ToolAnnotations;
use crate::tool::call::ToolOutput;
use crate::tool::handler::ToolHandler;
use crate::tool::policy::{ReplayPolicy, ToolRetry};

/// A predicate over a successful output that asks for another attempt (for `safe` and
/// `idempotent` tools only), e.g. "the job is still pending".
pub type RetryIfResult = Arc<dyn Fn(&ToolOutput) -> bool + Send + Sync>;

/// Everything the engine needs to expose and execute one tool.
///
/// `permission: None` means "inherit the permission manager's default"; an explicit level
/// is kept by every registration path.
#[derive(Clone)]
pub struct ToolDefinition {
    /// The name the model calls (`^[a-zA-Z0-9_-]{1,64}$`).
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub input_schema: Value,
    /// The code that runs.
    pub handler: ToolHandler,
    /// Explicit permission, or `None` to inherit the manager's default.
    pub permission: Option<PermissionLevel>,
    /// Whether calls may run together with others in a batch (default `true`).
    pub concurrent: bool,
    /// Whether a call may be repeated (default [`ReplayPolicy::Manual`]).
    pub replay_policy: ReplayPolicy,
    /// The tool's own timeout in seconds; `None` takes the registry's default.
    pub timeout_seconds: Option<f64>,
    /// The tool's own retry policy; `None` takes the registry's.
    pub retry: Option<ToolRetry>,
    /// Retry when a successful output matches (for `safe`/`idempotent` tools).
    pub retry_if_result: Option<RetryIfResult>,
    /// Hints about the tool's effects (read-only, destructive, ..); none set by default.
    pub annotations: ToolAnnotations,
}

impl fmt::Debug for ToolDefinition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDefinition")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("input_schema", &self.input_schema)
            .field("handler", &self.handler)
            .field("permission", &self.permission)
            .field("concurrent", &self.concurrent)
            .field("replay_policy", &self.replay_policy)
            .field("timeout_seconds", &self.timeout_seconds)
            .field("retry", &self.retry)
            .field("retry_if_result", &self.retry_if_result.as_ref().map(|_| ".."))
            .field("annotations", &self.annotations)
            .finish()
    }
}

impl ToolDefinition {
    /// A definition with the default policy: inherited permission, concurrent, `manual`,
    /// registry timeout and retry, no annotations.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: ToolHandler,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            handler,
            permission: None,
            concurrent: true,
            replay_policy: ReplayPolicy::Manual,
            timeout_seconds: None,
            retry: None,
            retry_if_result: None,
            annotations: ToolAnnotations::new(),
        }
    }

    /// Applies the options that are set, and each annotation hint that is set; leaves the
    /// rest as they are.
    pub fn apply(mut self, options: &ToolOptions) -> Self {
        if let Some(p) = options.permission {
            self.permission = Some(p);
        }
        if let Some(c) = options.concurrent {
            self.concurrent = c;
        }
        if let Some(r) = options.replay_policy {
            self.replay_policy = r;
        }
        if let Some(t) = options.timeout_seconds {
            self.timeout_seconds = Some(t);
        }
        if let Some(r) = options.retry {
            self.retry = Some(r);
        }
        if let Some(p) = &options.retry_if_result {
            self.retry_if_result = Some(p.clone());
        }
        self.annotations = options.annotations.or(self.annotations);
        self
    }

    /// Sets an explicit permission.
    pub fn with_permission(mut self, permission: PermissionLevel) -> Self {
        self.permission = Some(permission);
        self
    }

    /// Sets whether calls may run together with others.
    pub fn with_concurrent(mut self, concurrent: bool) -> Self {
        self.concurrent = concurrent;
        self
    }

    /// Sets the replay policy.
    pub fn with_replay_policy(mut self, replay_policy: ReplayPolicy) -> Self {
        self.replay_policy = replay_policy;
        self
    }

    /// Sets the tool's own timeout, which registry and agent policies never change.
    pub fn with_timeout_seconds(mut self, seconds: f64) -> Self {
        self.timeout_seconds = Some(seconds);
        self
    }

    /// Sets the tool's own retry policy.
    pub fn with_retry(mut self, retry: ToolRetry) -> Self {
        self.retry = Some(retry);
        self
    }

    /// Sets a predicate over successful outputs that asks for a retry.
    pub fn with_retry_if_result(
        mut self,
        predicate: impl Fn(&ToolOutput) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.retry_if_result = Some(Arc::new(predicate));
        self
    }

    /// Sets the annotations (all four hints, set or not).
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }
}

/// Keyword-style registration options (the spec's keyword-only parameters of
/// `register_tool` and `register_with_schema`). Each one that is set overrides the
/// definition's value; unset ones leave it alone.
#[derive(Clone)]
pub struct ToolOptions {
    /// Explicit permission.
    pub permission: Option<PermissionLevel>,
    /// Whether calls may run together with others.
    pub concurrent: Option<bool>,
    /// Replay policy.
    pub replay_policy: Option<ReplayPolicy>,
    /// Own timeout in seconds.
    pub timeout_seconds: Option<f64>,
    /// Own retry policy.
    pub retry: Option<ToolRetry>,
    /// Retry predicate over successful outputs.
    pub retry_if_result: Option<RetryIfResult>,
    /// Annotation hints; each one set overrides the definition's.
    pub annotations: ToolAnnotations,
    /// Replace an existing tool of the same name instead of failing.
    pub replace: bool,
}

impl fmt::Debug for ToolOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolOptions")
            .field("permission", &self.permission)
            .field("concurrent", &self.concurrent)
            .field("replay_policy", &self.replay_policy)
            .field("timeout_seconds", &self.timeout_seconds)
            .field("retry", &self.retry)
            .field("retry_if_result", &self.retry_if_result.as_ref().map(|_| ".."))
            .field("annotations", &self.annotations)
            .field("replace", &self.replace)
            .finish()
    }
}

impl Default for ToolOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolOptions {
    /// No overrides (a `const fn`: `#[tool(..)]` keeps its options in a constant).
    pub const fn new() -> Self {
        Self {
            permission: None,
            concurrent: None,
            replay_policy: None,
            timeout_seconds: None,
            retry: None,
            retry_if_result: None,
            annotations: ToolAnnotations::new(),
            replace: false,
        }
    }

    /// Sets an explicit permission.
    pub const fn permission(mut self, permission: PermissionLevel) -> Self {
        self.permission = Some(permission);
        self
    }

    /// Sets whether calls may run together with others.
    pub const fn concurrent(mut self, concurrent: bool) -> Self {
        self.concurrent = Some(concurrent);
        self
    }

    /// Sets the replay policy.
    pub const fn replay_policy(mut self, replay_policy: ReplayPolicy) -> Self {
        self.replay_policy = Some(replay_policy);
        self
    }

    /// Sets the tool's own timeout.
    pub const fn timeout_seconds(mut self, seconds: f64) -> Self {
        self.timeout_seconds = Some(seconds);
        self
    }

    /// Sets the tool's own retry policy.
    pub const fn retry(mut self, retry: ToolRetry) -> Self {
        self.retry = Some(retry);
        self
    }

    /// Sets the annotation hints; when applied, only the hints set here override the
    /// definition's.
    pub const fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// Sets the `read_only` hint (see [`ToolAnnotations`]).
    pub const fn read_only(mut self, read_only: bool) -> Self {
        self.annotations = self.annotations.read_only(read_only);
        self
    }

    /// Sets the `destructive` hint (see [`ToolAnnotations`]).
    pub const fn destructive(mut self, destructive: bool) -> Self {
        self.annotations = self.annotations.destructive(destructive);
        self
    }

    /// Sets the `idempotent` hint (see [`ToolAnnotations`]).
    pub const fn idempotent(mut self, idempotent: bool) -> Self {
        self.annotations = self.annotations.idempotent(idempotent);
        self
    }

    /// Sets the `open_world` hint (see [`ToolAnnotations`]).
    pub const fn open_world(mut self, open_world: bool) -> Self {
        self.annotations = self.annotations.open_world(open_world);
        self
    }

    /// Sets a retry predicate over successful outputs.
    pub fn retry_if_result(
        mut self,
        predicate: impl Fn(&ToolOutput) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.retry_if_result = Some(Arc::new(predicate));
        self
    }

    /// Replaces an existing tool of the same name.
    pub fn replace(mut self, replace: bool) -> Self {
        self.replace = replace;
        self
    }
}

/// Anything that can be registered as a tool: a [`ToolDefinition`], or the unit struct
/// the `#[tool]` macro generates for a function (through a blanket impl over the macro's
/// hidden `GeneratedTool` trait: the definition is a constant, built when converted).
pub trait IntoToolDefinition {
    /// Produces the definition.
    fn into_tool_definition(self) -> ToolDefinition;
}

impl IntoToolDefinition for ToolDefinition {
    fn into_tool_definition(self) -> ToolDefinition {
        self
    }
}

impl IntoToolDefinition for &ToolDefinition {
    fn into_tool_definition(self) -> ToolDefinition {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn definition() -> ToolDefinition {
        let handler = ToolHandler::from_blocking(|_, _| Ok(ToolOutput::text("")));
        ToolDefinition::new("t", "d", json!({"type": "object"}), handler)
    }

    #[test]
    fn new_definitions_carry_no_annotations() {
        assert!(definition().annotations.is_empty());
        assert!(definition().apply(&ToolOptions::new()).annotations.is_empty());
    }

    #[test]
    fn apply_overrides_only_the_hints_that_are_set() {
        let own = ToolAnnotations::new().read_only(true).idempotent(true).open_world(false);
        let def = definition().with_annotations(own);
        // Unset hints in the options leave the definition's alone.
        assert_eq!(def.clone().apply(&ToolOptions::new().permission(PermissionLevel::Ask)).annotations, own);
        // A set hint overrides, whichever way it points; the others are kept.
        let applied = def.apply(&ToolOptions::new().read_only(false).destructive(true));
        assert_eq!(
            applied.annotations,
            ToolAnnotations::new().read_only(false).destructive(true).idempotent(true).open_world(false)
        );
        assert!(applied.annotations.may_modify());
    }

    #[test]
    fn option_setters_compose_in_a_constant() {
        const OPTIONS: ToolOptions = ToolOptions::new()
            .read_only(true)
            .open_world(true)
            .annotations(ToolAnnotations::new().idempotent(true));
        // `annotations(..)` sets all four hints at once, so it replaces the earlier setters'.
        assert_eq!(OPTIONS.annotations, ToolAnnotations::new().idempotent(true));
        const HINTS: ToolOptions = ToolOptions::new().read_only(true).destructive(false).idempotent(true);
        assert_eq!(
            HINTS.annotations,
            ToolAnnotations::new().read_only(true).destructive(false).idempotent(true)
        );
        assert!(!definition().apply(&HINTS).annotations.may_modify());
    }
}
