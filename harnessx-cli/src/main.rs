//! The `harnessx` command.

fn main() {}
