//! The two planning tools as handler types of their own, so that the agent can tell the
//! built-in `write_todos` (and reach its list) from one a user registered under that name.

use std::sync::Arc;

use harnessx_core::tool::decode::decode_args;
use harnessx_core::{BlockingToolHandler, HandlerResult, ToolContext, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use super::state::{PlanningState, TODO_STATUSES};

/// `write_todos`: replaces the whole list.
pub(super) struct WriteTodos {
    pub(super) state: Arc<PlanningState>,
}

/// The arguments of `write_todos`; the input schema has already checked each item.
#[derive(Deserialize)]
struct WriteArgs {
    todos: Vec<Value>,
}

impl BlockingToolHandler for WriteTodos {
    fn call(&self, args: Value, ctx: &ToolContext) -> HandlerResult {
        let WriteArgs { todos: items } = decode_args(args, ctx)?;
        let count = |status: &str| items.iter().filter(|i| i["status"] == status).count();
        let summary = format!(
            "Todo list updated: {} items ({} completed, {} in progress, {} pending).",
            items.len(),
            count("completed"),
            count("in_progress"),
            count("pending")
        );
        self.state.replace(items);
        Ok(ToolOutput::text(summary))
    }
}

/// `read_todos`: shows the list.
pub(super) struct ReadTodos {
    pub(super) state: Arc<PlanningState>,
}

impl BlockingToolHandler for ReadTodos {
    fn call(&self, _args: Value, _ctx: &ToolContext) -> HandlerResult {
        Ok(ToolOutput::text(self.state.render().unwrap_or_else(|| "The todo list is empty.".into())))
    }
}

pub(super) const WRITE_TODOS_DESCRIPTION: &str = "Replace the todo list with the given items. Pass the whole list every time; each item needs `content` and a `status` of pending, in_progress or completed.";

pub(super) const READ_TODOS_DESCRIPTION: &str = "Show the current todo list.";

/// The input schema of `write_todos`: the whole list, each item with `content` and a
/// `status`; extra keys on an item are fine.
pub(super) fn write_todos_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "description": "The whole list, every time: each step with its status.",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string", "minLength": 1, "description": "A short description of the step."},
                        "status": {"type": "string", "enum": TODO_STATUSES}
                    },
                    "required": ["content", "status"]
                }
            }
        },
        "required": ["todos"]
    })
}

/// The input schema of `read_todos`: no arguments.
pub(super) fn read_todos_schema() -> Value {
    json!({"type": "object", "properties": {}})
}
