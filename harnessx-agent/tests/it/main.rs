//! The integration tests of `harnessx-agent`, one binary with a module per area; `common`
//! holds what the provider tests share. An area that needs a feature is compiled with it
//! only.
//!
//! One process: content capture for spans is process-wide, so the `telemetry` tests that
//! set it take turns (its `CAPTURE` lock) and no other area sets it; the exporters are
//! installed per thread (`init_for_current_thread`), never globally.

mod agent_loop;
#[cfg(feature = "mcp")]
mod agent_mcp;
#[cfg(all(feature = "openai", feature = "anthropic"))]
mod agent_prompt_cache;
mod authorizer;
#[cfg(all(feature = "openai", feature = "anthropic"))]
mod budgets;
#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
mod common;
#[cfg(all(feature = "openai", feature = "anthropic"))]
mod context;
#[cfg(all(feature = "openai", feature = "anthropic"))]
mod fallback;
mod hooks;
mod knowledge;
#[cfg(all(feature = "openai", feature = "anthropic"))]
mod models_agent;
#[cfg(feature = "anthropic")]
mod models_anthropic;
#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
mod models_content;
#[cfg(feature = "gemini")]
mod models_gemini;
#[cfg(feature = "openai")]
mod models_openai;
#[cfg(all(feature = "openai", feature = "anthropic"))]
mod models_reasoning;
#[cfg(feature = "openai")]
mod models_responses;
mod output;
#[cfg(all(feature = "openai", feature = "anthropic"))]
mod output_providers;
mod run_hooks;
mod skills;
#[cfg(feature = "openai")]
mod skills_knowledge_openai;
#[cfg(feature = "otel")]
mod telemetry;
#[cfg(all(feature = "openai", feature = "anthropic"))]
mod tool_choice;
