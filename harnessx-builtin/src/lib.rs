//! Built-in tool bundles.
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]
#![deny(unsafe_code)]

pub mod bash;
pub mod fs;
pub mod fts;
pub mod media;
pub mod memory;
pub mod planning;
pub mod sandbox;
#[cfg(feature = "web")]
pub mod web;

pub use bash::{BashOptions, register_bash_tools};
pub use fs::{FilesystemOptions, register_filesystem_tools};
pub use memory::{MemoryOptions, register_memory_tools};
pub use planning::{PlanningOptions, register_planning_tools};
#[cfg(feature = "web")]
pub use web::{FetchUrl, WebOptions, register_web_tools};

/// Makes sure this crate's bundles are linked into the program, so that
/// `ToolRegistry::load_builtin` can find them by name.
///
/// The bundles register themselves in `harnessx_core::catalog` from this crate's object
/// code. A binary that never refers to anything in `harnessx-builtin` may have it dropped
/// by the linker, and then `load_builtin("filesystem", ..)` fails with "no built-in bundle
/// is linked". Calling `link()` once (or using anything else from this crate, or the
/// `harnessx` facade, which does this for you) keeps them.
///
/// ```
/// harnessx_builtin::link();
/// assert!(harnessx_core::catalog::known_names().contains(&"read_file"));
/// ```
#[inline(never)]
pub fn link() {
    // Referring to a bundle's submission keeps its object code in the link.
    std::hint::black_box((
        &fs::FILESYSTEM_TOOLS,
        &planning::PLANNING_TOOLS,
        &bash::BASH_TOOLS,
        &memory::MEMORY_TOOLS,
    ));
    #[cfg(feature = "web")]
    std::hint::black_box(&web::WEB_TOOLS);
}

pub mod ask_user;
pub use ask_user::{AskUserOptions, register_ask_user_tool};
