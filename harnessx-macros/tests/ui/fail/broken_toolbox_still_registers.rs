use std::sync::Arc;

use harnessx::{ToolRegistry, toolbox};

struct Notes;

#[toolbox]
impl Notes {
    /// Add a note.
    #[tool(replay_policy = "sometimes")]
    fn add(&self, text: String) -> String {
        text
    }
}

fn main() {
    // Only the attribute's error shows: `Notes` still implements `Toolbox` (without it,
    // this line adds "the trait bound `Notes: Toolbox` is not satisfied").
    let registry = ToolRegistry::new();
    registry.register_toolbox(Arc::new(Notes)).unwrap();
    let _ = Notes.add("x".into());
}
