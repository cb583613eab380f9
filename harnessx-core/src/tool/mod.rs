//! The tool model: definitions, handlers, calls and results, policies, annotations, names.

pub mod annotations;
pub mod call;
pub mod decode;
pub mod definition;
pub mod encode;
pub mod handler;
pub mod name;
pub mod policy;
pub(crate) mod registered;
