use harnessx::tool;

/// Multiply two numbers.
///
/// Args:
///     a: First number.
///     c: Second number.
#[tool]
fn calculate(a: i64, b: i64) -> i64 {
    a * b
}

fn main() {}
