use harnessx::tool;

/// Multiply two numbers.
#[tool(replay_policy = "sometimes")]
fn calculate(a: i64, b: i64) -> i64 {
    a * b
}

fn main() {}
