//! The `planning` bundle: `write_todos` and `read_todos` over one [`PlanningState`].
//!
//! An agent installs this bundle by default (`AgentConfig::planning`) and adds what is
//! agent behaviour: the prompt line, and the list attached to the newest message of each
//! request. Loaded by name (`load_builtin("planning")`, `.tool("planning")`) or through
//! [`register_planning_tools`], the tools are the same; [`planning_state`] finds the list
//! behind a registered built-in `write_todos`.
//!
//! Both tools are `safe` to replay (they only touch the list), `write_todos` is serial
//! (one list, written whole) and `read_todos` concurrent; they change nothing outside the
//! agent, so they are annotated read-only and never asked about.

mod state;
mod tools;

use std::sync::Arc;

use harnessx_core::catalog::{BuiltinBundle, BundleOptions, CommonOptions, select_tools};
use harnessx_core::{
    RegistryError, ReplayPolicy, ToolAnnotations, ToolDefinition, ToolHandler, ToolRegistry,
};
use serde::Deserialize;

pub use state::{PlanningState, TODO_STATUSES};
use tools::{ReadTodos, WriteTodos};

/// The bundle name.
pub const BUNDLE: &str = "planning";

/// The planning tools, in registration order.
pub const PLANNING_TOOLS: [&str; 2] = ["write_todos", "read_todos"];

/// Both tools change nothing outside the agent (the list is the agent's own state), so
/// they are read-only for the environment — `harnessx run` never asks about them;
/// writing the same list twice leaves the same list (idempotent); they reach nothing
/// outside the process (not open-world).
const ANNOTATIONS: ToolAnnotations =
    ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false);

/// Options of [`register_planning_tools`] and of `load_builtin("planning", ..)`.
///
/// ```
/// use std::sync::Arc;
/// use harnessx_builtin::planning::{PlanningOptions, PlanningState, register_planning_tools};
/// use harnessx_core::ToolRegistry;
///
/// let registry = ToolRegistry::new();
/// let state = Arc::new(PlanningState::default());
/// let options = PlanningOptions { state: Some(state.clone()), ..Default::default() };
/// assert_eq!(register_planning_tools(&registry, options).unwrap(), ["write_todos", "read_todos"]);
/// assert!(state.todos().is_empty());
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlanningOptions {
    /// `include`, `exclude`, `permission`, `replace` (decoded by the catalog).
    #[serde(skip)]
    pub common: CommonOptions,
    /// The list the tools share; a new, empty one when `None`. Not an option by name:
    /// the agent passes its own.
    #[serde(skip)]
    pub state: Option<Arc<PlanningState>>,
}

impl BundleOptions for PlanningOptions {
    fn set_common(&mut self, common: CommonOptions) {
        self.common = common;
    }

    fn register(self, registry: &ToolRegistry) -> Result<Vec<String>, RegistryError> {
        register_planning_tools(registry, self)
    }
}

inventory::submit! {
    BuiltinBundle::new::<PlanningOptions>(BUNDLE, &PLANNING_TOOLS)
}

/// The definition of one planning tool over `state`.
fn definition(name: &str, state: &Arc<PlanningState>) -> Option<ToolDefinition> {
    let def = match name {
        "write_todos" => ToolDefinition::new(
            "write_todos",
            tools::WRITE_TODOS_DESCRIPTION,
            tools::write_todos_schema(),
            ToolHandler::Blocking(Arc::new(WriteTodos { state: state.clone() })),
        )
        .with_concurrent(false),
        "read_todos" => ToolDefinition::new(
            "read_todos",
            tools::READ_TODOS_DESCRIPTION,
            tools::read_todos_schema(),
            ToolHandler::Blocking(Arc::new(ReadTodos { state: state.clone() })),
        ),
        _ => return None,
    };
    Some(def.with_replay_policy(ReplayPolicy::Safe).with_annotations(ANNOTATIONS))
}

/// Registers the selected planning tools over one list; returns their names.
///
/// Permission omitted follows the registry's manager, like every bundle, and so does the
/// agent's own installation (an ASK or DENY manager governs planning too).
pub fn register_planning_tools(
    registry: &ToolRegistry,
    options: PlanningOptions,
) -> Result<Vec<String>, RegistryError> {
    let common = &options.common;
    let selected =
        select_tools("planning tool", &PLANNING_TOOLS, common.include.as_deref(), &common.exclude)?;
    if !common.replace {
        registry.ensure_free(&selected)?;
    }
    let state = options.state.clone().unwrap_or_default();
    let registration = common.tool_options();
    let mut names = Vec::with_capacity(selected.len());
    for name in selected {
        let def = definition(name, &state).expect("selected from PLANNING_TOOLS");
        names.push(registry.register_tool_with(def, registration.clone())?.name);
    }
    Ok(names)
}

/// The list behind `def` when it is the built-in `write_todos` (from this bundle, however
/// it was registered); `None` for any other tool, including a user's own `write_todos`.
pub fn planning_state(def: &ToolDefinition) -> Option<Arc<PlanningState>> {
    def.handler.as_any().downcast_ref::<WriteTodos>().map(|w| w.state.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use harnessx_core::{PermissionLevel, ToolCall};
    use serde_json::json;

    #[tokio::test]
    async fn the_list_is_written_whole_and_read_back() {
        let registry = ToolRegistry::new();
        register_planning_tools(&registry, PlanningOptions::default()).unwrap();
        let state = planning_state(&registry.get_tool("write_todos").unwrap()).expect("built-in write_todos");
        let args = json!({"todos": [{"content": "a", "status": "completed", "owner": "me"}, {"content": "b", "status": "pending"}]});
        let result = registry.execute(&ToolCall::new("1", "write_todos", args.to_string()), None).await;
        assert_eq!(result.content, "Todo list updated: 2 items (1 completed, 0 in progress, 1 pending).");
        assert_eq!(state.todos()[0]["owner"], "me", "extra keys are kept");
        let result = registry.execute(&ToolCall::new("2", "read_todos", "{}"), None).await;
        assert_eq!(result.content, "<todo_list>\n1. [completed] a\n2. [pending] b\n</todo_list>");
    }

    #[tokio::test]
    async fn a_list_of_the_wrong_shape_is_a_one_line_error_and_changes_nothing() {
        let registry = ToolRegistry::new();
        let state = Arc::new(PlanningState::default());
        state.replace(vec![json!({"content": "keep", "status": "pending"})]);
        register_planning_tools(
            &registry,
            PlanningOptions { state: Some(state.clone()), ..Default::default() },
        )
        .unwrap();
        for bad in [
            json!({"todos": [{"content": "x", "status": "done"}]}),
            json!({"todos": [{"status": "pending"}]}),
        ] {
            let result = registry.execute(&ToolCall::new("1", "write_todos", bad.to_string()), None).await;
            assert!(result.is_error, "{bad}");
            assert!(!result.content.contains('\n'), "{}", result.content);
            assert!(
                result.content.starts_with("invalid arguments for write_todos: todos[0]"),
                "{}",
                result.content
            );
        }
        assert_eq!(state.todos(), [json!({"content": "keep", "status": "pending"})]);
    }

    #[test]
    fn loading_by_name_takes_the_common_options_and_nothing_else() {
        let registry = ToolRegistry::new();
        let names =
            registry.load_builtin("planning", json!({"exclude": ["read_todos"], "permission": "ask"}));
        assert_eq!(names.unwrap(), ["write_todos"]);
        let def = registry.get_tool("write_todos").unwrap();
        assert_eq!(def.permission, Some(PermissionLevel::Ask));
        assert!(!def.concurrent);
        assert_eq!(def.replay_policy, ReplayPolicy::Safe);
        assert!(!def.annotations.may_modify(), "the list is the agent's own: never asked about");
        let err = registry.load_builtin("read_todos", json!({"base_path": "."})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown option `base_path` for built-in \"read_todos\"; valid options: permission, replace"
        );
    }

    #[test]
    fn a_user_write_todos_is_not_the_built_in() {
        let mine = ToolDefinition::new(
            "write_todos",
            "mine",
            json!({"type": "object"}),
            ToolHandler::from_blocking(|_, _| Ok("ok".into())),
        );
        assert!(planning_state(&mine).is_none());
    }
}
