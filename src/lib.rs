//! harnessx: safe, fast and predictable tools for LLM agents.
//!
//! This facade re-exports [`harnessx_core`]; see the guide in `docs/`.
#![forbid(unsafe_code)]

/// The built-in bundles (filesystem, ...): `harnessx::builtin::fs::register_filesystem_tools`.
pub use harnessx_builtin as builtin;
pub use harnessx_core::*;
pub use harnessx_macros::{tool, toolbox};

pub mod guide;
