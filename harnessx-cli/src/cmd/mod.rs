//! The commands, one file each (`resume`, `approve` and `answer` together): each parses
//! its flags and puts together [`setup`](crate::setup), [`backend`](crate::backend) and
//! [`report`](crate::report).

pub(crate) mod chat;
pub(crate) mod config;
pub(crate) mod durable;
pub(crate) mod eval;
pub(crate) mod fork;
pub(crate) mod mcp;
pub(crate) mod run;
pub(crate) mod runs;
pub(crate) mod serve;
pub(crate) mod tools;
pub(crate) mod worker;
