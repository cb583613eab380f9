use harnessx::tool;

/// Look a word up.
#[tool(read_only, idempotent, destructive)]
fn lookup(word: String) -> String {
    word
}

fn main() {}
