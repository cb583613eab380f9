//! The integration tests of `harnessx-mcp`, one binary with a module per area. The
//! reference servers come from the npm registry and the official Python client from PyPI,
//! installed on demand by `harnessx-test-support` (a missing `npm` or `python3` skips a
//! test locally and fails it under `CI`).

mod auth;
mod list_changed;
mod serve_hooks;
mod serve_rmcp;
mod server_everything;
mod server_filesystem;
mod trust_hints;
