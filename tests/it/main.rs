//! The integration tests of the `harnessx` facade, one binary with a module per area (the
//! macros' trybuild cases are `harnessx-macros`' own, in its `tests/ui/`); `docs` checks
//! the README and `docs/` against `cargo metadata` and the guide's doctests, `layout` that
//! every crate's integration-test files are modules of its one binary.
//!
//! `macro_collect` owns the `#[tool(collect)]` collection, which is process-wide: no other
//! module may submit to it.

#[cfg(feature = "agent")]
mod agent_tools;
mod builtin_ask_user;
mod docs;
mod handler_decoding;
mod layout;
mod macro_collect;
mod macro_schema_rules;
mod macro_tool;
