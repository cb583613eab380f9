//! `harnessx config show`: the settings the agent commands would use here, merged from
//! the command line, the project's `harnessx.toml` and the user's `config.toml`, each
//! with where it came from.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::json;

use crate::config::Applied;
use crate::error::CliError;
use crate::output::Stdout;
use crate::setup::flags::AgentArgs;

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Print the merged settings and where each came from (the command line, a file and
    /// its line, or the default). Agent flags given here override the files, as on `run`.
    Show(ShowArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    /// Print one JSON object: {"files": [{"path", "scope"}], "settings": {KEY: {"value", "from"}}};
    /// the value of `hooks` lists each hook: {"event", "matcher", "command", "timeout_seconds", "from"}.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) agent: AgentArgs,
}

/// Prints what [`crate::config::apply`] merged.
pub(crate) fn show(args: &ShowArgs, applied: &Applied) -> Result<ExitCode, CliError> {
    let mut stdout = Stdout::default();
    if args.json {
        let files: Vec<_> = applied
            .files
            .iter()
            .map(|(path, scope)| json!({"path": path.display().to_string(), "scope": scope}))
            .collect();
        let mut settings = serde_json::Map::new();
        for s in &applied.settings {
            settings.insert(s.key.to_owned(), json!({"value": s.value, "from": s.source.to_string()}));
        }
        let object = json!({"files": files, "settings": settings});
        stdout.write(format_args!("{object}\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    if applied.files.is_empty() {
        stdout.write(format_args!(
            "# no configuration file: none named {} here or above, none at {}\n",
            crate::config::PROJECT_FILE,
            crate::config::user_file()
                .map_or_else(|| "$HOME/.config/harnessx/config.toml".into(), |p| p.display().to_string())
        ))?;
    }
    for (path, scope) in &applied.files {
        stdout.write(format_args!("# {scope} file: {}\n", path.display()))?;
    }
    let width = applied.settings.iter().map(|s| s.key.len()).max().unwrap_or(0);
    for s in &applied.settings {
        match (s.key, s.value.as_array()) {
            // One line a hook, in the order they run, each with its own source.
            ("hooks", Some(hooks)) if !hooks.is_empty() => {
                for hook in hooks {
                    let mut shown = hook.clone();
                    let from = shown.as_object_mut().and_then(|h| h.remove("from")).unwrap_or_default();
                    let from = from.as_str().unwrap_or_default();
                    stdout.write(format_args!("{:<width$} = {shown}    # {from}\n", s.key))?;
                }
            }
            _ => stdout.write(format_args!("{:<width$} = {}    # {}\n", s.key, s.value, s.source))?,
        }
    }
    Ok(ExitCode::SUCCESS)
}
