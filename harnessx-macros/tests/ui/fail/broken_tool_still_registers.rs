use harnessx::{IntoToolDefinition, ToolRegistry, tool};

/// Multiply two numbers.
#[tool(permission = "alow")]
fn calculate(a: i64, b: i64) -> i64 {
    a * b
}

fn main() {
    // Only the attribute's error shows: `Calculate` still exists, with what registration
    // needs, so none of these lines adds an error. (rustc 1.95 happens to leave out
    // unresolved names after a macro error, so this case holds either way there;
    // `broken_toolbox_still_registers` is one rustc does report without the placeholder.)
    let registry = ToolRegistry::new();
    registry.register_tool(Calculate).unwrap();
    let _ = Calculate.into_tool_definition();
    assert_eq!(Calculate::NAME, "calculate");
    let _ = calculate(2, 3);
}
