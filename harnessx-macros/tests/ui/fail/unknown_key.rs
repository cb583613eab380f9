use harnessx::tool;

/// Multiply two numbers.
#[tool(permision = "allow", replay = "safe")]
fn calculate(a: i64, b: i64) -> i64 {
    a * b
}

fn main() {}
