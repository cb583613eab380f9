//! Planning as agent behaviour: the prompt line added while the built-in `write_todos` is
//! installed, and the todo list attached to the newest message of each request. The tools
//! themselves are the `planning` bundle of `harnessx-builtin`.

use crate::model::Message;

pub use harnessx_builtin::planning::{PlanningState, TODO_STATUSES};

/// The fixed line added to the system prompt while the built-in `write_todos` is installed.
pub const PLANNING_PROMPT_LINE: &str = "Plan any task with three or more steps with write_todos, update the list in the same turn as the work, and when it is done, just answer.";

/// Appends the current list to the newest message. Called once per request; the message
/// keeps it, so earlier copies stay where they were first sent and every request's prefix
/// is byte-identical to the previous request's.
pub(crate) fn attach(state: &PlanningState, messages: &mut [Message]) {
    if let (Some(list), Some(last)) = (state.render(), messages.last_mut()) {
        let content = last.content_mut();
        if !content.is_empty() {
            content.push_str("\n\n");
        }
        content.push_str(&list);
    }
}
