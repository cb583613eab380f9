//! Built-in tool bundles (issue 4).
