use harnessx::toolbox;

struct Notes;

#[toolbox]
impl Notes {
    /// Make a note.
    #[tool(collect)]
    fn make(text: String) -> String {
        text
    }
}

fn main() {}
