use harnessx::tool;

struct Notes;

impl Notes {
    /// Add a note.
    #[tool]
    fn add(&self, text: String) -> String {
        text
    }
}

fn main() {}
