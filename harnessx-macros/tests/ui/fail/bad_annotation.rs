use harnessx::tool;

/// Look a word up.
#[tool(read_only = "yes", open_world(true))]
fn lookup(word: String) -> String {
    word
}

fn main() {}
