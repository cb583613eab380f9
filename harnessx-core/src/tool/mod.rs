//! The tool model: definitions, handlers, calls and results, policies, names.

pub mod call;
pub mod decode;
pub mod definition;
pub mod encode;
pub mod handler;
pub mod name;
pub mod policy;
