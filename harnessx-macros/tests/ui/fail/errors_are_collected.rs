use harnessx::tool;

/// All of these are reported at once, and `calculate` itself still exists.
#[tool(name = "", permission = "never", timeout_seconds = -1)]
fn calculate(a: i64, #[arg(colour = "red")] b: i64) -> i64 {
    a * b
}

fn main() {
    // No error here: the function is emitted even when the attribute is wrong.
    let _ = calculate(1, 2);
}
