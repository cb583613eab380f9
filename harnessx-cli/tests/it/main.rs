//! The integration tests of the `harnessx` command, one binary with a module per area.
//! Every test runs the built binary (`CARGO_BIN_EXE_harnessx`) in processes of its own,
//! so nothing a command does touches this process.

mod cli;
mod cli_attach;
mod cli_bash;
mod cli_budgets;
mod cli_chat;
mod cli_config;
mod cli_context;
mod cli_durable;
mod cli_eval;
mod cli_fork;
mod cli_hook_config;
mod cli_hooks;
mod cli_mcp;
mod cli_mcp_auth;
mod cli_mcp_elicit;
mod cli_mcp_serve;
mod cli_output;
mod cli_providers;
mod cli_reasoning;
mod cli_replay;
mod cli_restate;
mod cli_rules;
mod cli_serve;
mod cli_skills_knowledge;
mod cli_tool_choice;
mod cli_trace;
mod cli_web;
