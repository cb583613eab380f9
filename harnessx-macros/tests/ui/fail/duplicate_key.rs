use harnessx::tool;

/// Multiply two numbers.
#[tool(name = "multiply", name = "product")]
fn calculate(a: i64, b: i64) -> i64 {
    a * b
}

fn main() {}
