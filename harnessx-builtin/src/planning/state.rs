//! [`PlanningState`]: the todo list the planning tools read and write.

use std::sync::Mutex;

use serde_json::Value;

/// The statuses a todo item may have.
pub const TODO_STATUSES: [&str; 3] = ["pending", "in_progress", "completed"];

/// The current todo list. Items are kept as the model wrote them (extra keys included).
/// The planning tools share one through an `Arc`; the agent reads it to show the model
/// the current list.
#[derive(Debug, Default)]
pub struct PlanningState {
    todos: Mutex<Vec<Value>>,
}

impl PlanningState {
    /// The current items.
    pub fn todos(&self) -> Vec<Value> {
        self.lock().clone()
    }

    /// Empties the list (at the start of a run).
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// Replaces the whole list.
    pub fn replace(&self, items: Vec<Value>) {
        *self.lock() = items;
    }

    /// The list as the model sees it, or `None` when it is empty:
    ///
    /// ```text
    /// <todo_list>
    /// 1. [completed] Read the config
    /// 2. [in_progress] Fix the parser
    /// </todo_list>
    /// ```
    pub fn render(&self) -> Option<String> {
        let todos = self.lock();
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

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Value>> {
        self.todos.lock().unwrap_or_else(|e| e.into_inner())
    }
}
