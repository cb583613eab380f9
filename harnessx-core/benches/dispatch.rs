//! Dispatch benchmark (filled in below).

fn main() {}
