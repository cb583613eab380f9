//! The execution engine: one pipeline for every call, and batch scheduling.

pub(crate) mod blocking;
pub mod cap;
mod clock;
pub mod context;
pub mod events;
pub(crate) mod pipeline;
pub mod serial;
pub(crate) mod span;
