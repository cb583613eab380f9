//! The integration tests of `harnessx-builtin`, one binary with a module per area;
//! `common` holds the filesystem set-up, `sandbox_cases` the cases both sandboxes share.
//!
//! One process, with three exceptions that need a process of their own and get it by
//! running this binary again: `memory_sqlite` (processes sharing one SQLite file, one of
//! them killed), `fs_tools::generate_file_falls_back_to_agent_output_dir` (an environment
//! variable, which a multi-threaded process cannot set safely) and `bash_fork_bomb` (its
//! tests move the whole process into a capped pids cgroup).

mod bash_bubblewrap;
mod bash_fork_bomb;
mod bash_local;
mod common;
mod fs_containment;
mod fs_media;
mod fs_tools;
mod memory_sqlite;
mod memory_stores;
mod registration;
mod sandbox_cases;
#[cfg(feature = "web")]
mod web;
#[cfg(feature = "web")]
mod web_images;
