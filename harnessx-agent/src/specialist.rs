//! Specialists: sub-agents exposed to the model as tools.

use std::fmt;
use std::sync::Arc;

use serde_json::json;

use crate::model::Model;
use crate::{Agent, AgentConfig, AgentError};
use harnessx_core::PermissionManager;
use harnessx_core::SerialQueue;
use harnessx_core::ToolHandler;
use harnessx_core::ToolOutput;
use harnessx_core::ToolRegistry;
use harnessx_core::{IntoToolDefinition, ToolDefinition};

/// Default timeout of a specialist call, in seconds.
pub const DEFAULT_SUBAGENT_TIMEOUT_SECONDS: f64 = 300.0;

/// A specialist: a sub-agent the model calls as a tool with a `task`.
///
/// Each call runs in a fresh registry holding copies of the declared tools' schemas and
/// metadata, under the parent's permission manager, and its serial tools take turns on
/// the parent's [`SerialQueue`], so serial tools never overlap across an agent and its
/// specialists.
pub struct SubAgent {
    name: String,
    description: String,
    system_prompt: Option<String>,
    tools: Vec<ToolDefinition>,
    model: Option<Arc<dyn Model>>,
    timeout_seconds: f64,
    config: AgentConfig,
}

impl fmt::Debug for SubAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubAgent")
            .field("name", &self.name)
            .field("tools", &self.tools.iter().map(|t| &t.name).collect::<Vec<_>>())
            .field("timeout_seconds", &self.timeout_seconds)
            .finish_non_exhaustive()
    }
}

impl SubAgent {
    /// A specialist with a tool name and a description for the model.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            system_prompt: None,
            tools: Vec::new(),
            model: None,
            timeout_seconds: DEFAULT_SUBAGENT_TIMEOUT_SECONDS,
            config: AgentConfig { planning: false, ..AgentConfig::default() },
        }
    }

    /// Its system prompt.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Declares a tool it may use (copied into each run's fresh registry).
    pub fn tool(mut self, tool: impl IntoToolDefinition) -> Self {
        self.tools.push(tool.into_tool_definition());
        self
    }

    /// Its own model (default: the parent's).
    pub fn model(mut self, model: impl Model + 'static) -> Self {
        self.model = Some(Arc::new(model));
        self
    }

    /// Timeout of one call, in seconds (default 300).
    pub fn timeout_seconds(mut self, seconds: f64) -> Self {
        self.timeout_seconds = seconds;
        self
    }

    /// Its settings (planning is off by default for specialists).
    pub fn config(mut self, config: AgentConfig) -> Self {
        self.config = config;
        self
    }

    pub(crate) fn into_definition(
        self,
        parent_model: Option<Arc<dyn Model>>,
        permissions: PermissionManager,
        serial: SerialQueue,
    ) -> ToolDefinition {
        let SubAgent { name, description, system_prompt, tools, model, timeout_seconds, config } = self;
        let model = model.or(parent_model);
        let shared = Arc::new((tools, system_prompt, config, name.clone()));
        let handler = ToolHandler::from_async(move |args, ctx: harnessx_core::ToolContext| {
            let shared = shared.clone();
            let model = model.clone();
            let permissions = permissions.clone();
            let serial = serial.clone();
            async move {
                let (tools, system_prompt, config, name) = &*shared;
                let task = args["task"].as_str().unwrap_or_default().to_owned();
                let registry = ToolRegistry::new();
                registry.set_serial_queue(serial);
                for def in tools {
                    registry.register_tool(def.clone()).map_err(|e| e.to_string())?;
                }
                let mut builder = Agent::builder()
                    .name(name.clone())
                    .registry(registry)
                    .permissions(permissions)
                    .config(config.clone());
                if let Some(model) = model {
                    builder = builder.model_arc(model);
                }
                if let Some(p) = system_prompt {
                    builder = builder.system_prompt(p.clone());
                }
                let agent = builder.build().map_err(|e| e.to_string())?;
                let result = agent.run(task).await.map_err(|e| match e {
                    // The operator's text keeps the provider's whole answer; the model gets one line.
                    AgentError::Model(e) => format!("the specialist failed: {}", e.for_model()),
                    e => format!("the specialist failed: {e}"),
                })?;
                // Its usage is its parent's too.
                crate::budget::report(ctx.call_id(), &result.usage_by_model);
                if let Some(limit) = result.limit {
                    let limits = agent.config().run_limits();
                    return Err(format!(
                        "the specialist stopped at {} before it answered",
                        limit.describe(&limits)
                    )
                    .into());
                }
                Ok(ToolOutput::text(result.output))
            }
        });
        ToolDefinition::new(
            name,
            description,
            json!({
                "type": "object",
                "properties": {"task": {"type": "string", "description": "What the specialist should do, with all the context it needs."}},
                "required": ["task"]
            }),
            handler,
        )
        .with_timeout_seconds(timeout_seconds)
    }
}
