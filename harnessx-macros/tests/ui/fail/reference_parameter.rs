use harnessx::tool;

/// Shout.
#[tool]
fn shout(text: &str) -> String {
    text.to_uppercase()
}

fn main() {}
