//! The planning tools `write_todos` and `read_todos`, the prompt line they add, and the
//! todo list attached to the newest message of each request.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::model::Message;
use harnessx_core::PermissionLevel;
use harnessx_core::ReplayPolicy;
use harnessx_core::ToolDefinition;
use harnessx_core::ToolHandler;
use harnessx_core::ToolOutput;

/// The fixed line added to the system prompt while the built-in `write_todos` is installed.
pub const PLANNING_PROMPT_LINE: &str = "Plan any task with three or more steps with write_todos, update the list in the same turn as the work, and when it is done, just answer.";

/// The statuses a todo item may have.
pub const TODO_STATUSES: [&str; 3] = ["pending", "in_progress", "completed"];

/// The current todo list of an agent. Items are kept as the model wrote them (extra keys
/// included).
#[derive(Debug, Default)]
pub struct PlanningState {
    todos: Mutex<Vec<Value>>,
}

impl PlanningState {
    /// The current items.
    pub fn todos(&self) -> Vec<Value> {
        self.todos.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Empties the list (at the start of a run).
    pub fn clear(&self) {
        self.todos.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    fn replace(&self, items: Vec<Value>) {
        *self.todos.lock().unwrap_or_else(|e| e.into_inner()) = items;
    }

    /// The list as the model sees it, or `None` when it is empty.
    pub fn render(&self) -> Option<String> {
        let todos = self.todos.lock().unwrap_or_else(|e| e.into_inner());
        if todos.is_empty() {
            return None;
        }
        let mut out = String::from("<todo_list>");
        for (i, item) in todos.iter().enumerate() {
            let status = item["status"].as_str().unwrap_or("pending");
            let content = item["content"].as_str().unwrap_or("");
            out.push_str(&format!("\n{}. [{status}] {content}", i + 1));
        }
        out.push_str("\n</todo_list>");
        Some(out)
    }

    /// Appends the current list to the newest message. Called once per request; the
    /// message keeps it, so earlier copies stay where they were first sent and every
    /// request's prefix is byte-identical to the previous request.
    pub(crate) fn attach(&self, messages: &mut [Message]) {
        if let (Some(list), Some(last)) = (self.render(), messages.last_mut()) {
            let content = last.content_mut();
            if !content.is_empty() {
                content.push_str("\n\n");
            }
            content.push_str(&list);
        }
    }
}

fn write_todos_schema() -> Value {
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

/// The built-in planning tools bound to one [`PlanningState`].
pub(crate) fn planning_tools(state: &Arc<PlanningState>) -> (ToolDefinition, ToolDefinition) {
    let s = state.clone();
    let write = ToolDefinition::new(
        "write_todos",
        "Replace the todo list with the given items. Pass the whole list every time; each item needs `content` and a `status` of pending, in_progress or completed.",
        write_todos_schema(),
        ToolHandler::from_blocking(move |mut args, _| {
            let items = match args.get_mut("todos").map(Value::take) {
                Some(Value::Array(items)) => items,
                _ => return Err("invalid arguments for write_todos: todos: expected an array".into()),
            };
            let count = |st: &str| items.iter().filter(|i| i["status"] == st).count();
            let summary = format!(
                "Todo list updated: {} items ({} completed, {} in progress, {} pending).",
                items.len(),
                count("completed"),
                count("in_progress"),
                count("pending")
            );
            s.replace(items);
            Ok(ToolOutput::text(summary))
        }),
    )
    .with_concurrent(false)
    .with_replay_policy(ReplayPolicy::Safe)
    .with_permission(PermissionLevel::Allow);
    let s = state.clone();
    let read = ToolDefinition::new(
        "read_todos",
        "Show the current todo list.",
        json!({"type": "object", "properties": {}}),
        ToolHandler::from_blocking(move |_, _| {
            Ok(ToolOutput::text(s.render().unwrap_or_else(|| "The todo list is empty.".into())))
        }),
    )
    .with_replay_policy(ReplayPolicy::Safe)
    .with_permission(PermissionLevel::Allow);
    (write, read)
}
