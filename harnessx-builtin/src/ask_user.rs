//! `ask_user`: lets the model ask the person one focused question before doing the work.
//!
//! The tool does not know how to reach a person; your application does. Pass `ask`, an
//! async function that receives the question and a list of suggested answers (empty for
//! a free-text question), puts them in front of someone, and returns the answer, or
//! `None` when nobody can answer. The model is then told to proceed on the most likely
//! reading and to state that assumption at the start of its reply, rather than wait.

use std::future::Future;
use std::sync::Arc;

use harnessx_core::schemars::JsonSchema;
use harnessx_core::{
    BoxFuture, PermissionLevel, RegistryError, ToolDefinition, ToolOptions, ToolRegistry, Toolbox,
};
use harnessx_macros::toolbox;
use serde::Deserialize;

/// The tool's name.
pub const ASK_USER_TOOL: &str = "ask_user";

/// Its default timeout: one hour, since it waits on a person.
pub const ASK_USER_TIMEOUT_SECONDS: f64 = 3600.0;

/// What the model is told when nobody answers.
pub const NO_ANSWER: &str = "Nobody answered. Proceed on the most likely reading of the request, and state that assumption at the start of your reply.";

/// Options of [`register_ask_user_tool`]. Unset values keep the defaults: ALLOW, one-hour
/// timeout, no replacing.
#[derive(Debug, Clone, Default)]
pub struct AskUserOptions {
    /// Permission instead of ALLOW.
    pub permission: Option<PermissionLevel>,
    /// Timeout in seconds instead of one hour.
    pub timeout_seconds: Option<f64>,
    /// Replace an existing `ask_user` tool.
    pub replace: bool,
}

/// Registers `ask_user` with ALLOW, `concurrent = false`, a `safe` replay policy and a
/// one-hour timeout (`options` change the permission, timeout and replacement), annotated
/// read-only and open world (it changes nothing on the host, and reaches a person). It is
/// not part of any bundle.
///
/// ```
/// use harnessx_builtin::ask_user::{AskUserOptions, register_ask_user_tool};
/// use harnessx_core::ToolRegistry;
///
/// let registry = ToolRegistry::new();
/// register_ask_user_tool(&registry, |question: String, choices: Vec<String>| async move {
///     // Put the question in front of someone (a terminal, a web prompt, a chat message).
///     let _ = (question, choices);
///     None::<String>
/// }, AskUserOptions::default()).unwrap();
/// assert!(!registry.get_tool("ask_user").unwrap().concurrent);
/// ```
pub fn register_ask_user_tool<F, Fut>(
    registry: &ToolRegistry,
    ask: F,
    options: AskUserOptions,
) -> Result<ToolDefinition, RegistryError>
where
    F: Fn(String, Vec<String>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<String>> + Send + 'static,
{
    let ask = move |question, choices| -> BoxFuture<Option<String>> { Box::pin(ask(question, choices)) };
    let mut definitions = Arc::new(AskUser { ask: Box::new(ask) }).tool_definitions();
    let definition = definitions.pop().expect("the toolbox has one tool");
    let mut overrides = ToolOptions::new().replace(options.replace);
    if let Some(p) = options.permission {
        overrides = overrides.permission(p);
    }
    if let Some(t) = options.timeout_seconds {
        overrides = overrides.timeout_seconds(t);
    }
    registry.register_tool_with(definition, overrides)
}

/// The application's `ask`, type-erased.
type Ask = Box<dyn Fn(String, Vec<String>) -> BoxFuture<Option<String>> + Send + Sync>;

/// The application's `ask`, behind the tool.
struct AskUser {
    ask: Ask,
}

/// A question that is not empty.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "harnessx_core::schemars", transparent)]
struct Question(#[schemars(length(min = 1))] String);

// The tool is written with the crate's own macro, through `crate = ..` (this crate depends
// on `harnessx-core`, not on the `harnessx` facade).
#[toolbox(crate = ::harnessx_core)]
impl AskUser {
    /// Args:
    ///     question: One focused question.
    ///     choices: Suggested answers; empty for a free-text question.
    // Annotations: asking changes nothing on the host (`read_only`, so nothing to confirm
    // before it), but it reaches a person, outside the closed world of the workspace
    // (`open_world`). `destructive` and `idempotent` only describe tools that change
    // things, so they stay unset.
    #[tool(
        name = "ask_user",
        description = "Ask the user one focused question when the request is ambiguous, before doing the work. Offer likely answers in choices when there are a few; leave it empty for a free-text question.",
        permission = "allow",
        concurrent = false,
        replay_policy = "safe",
        timeout_seconds = 3600,
        read_only,
        open_world
    )]
    async fn ask_user(&self, question: Question, #[arg(default)] choices: Vec<String>) -> String {
        match (self.ask)(question.0, choices).await {
            Some(text) if !text.trim().is_empty() => format!("The user answered: {text}"),
            _ => NO_ANSWER.to_owned(),
        }
    }
}
