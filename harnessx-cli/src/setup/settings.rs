//! Each agent setting declared once. [`settings!`] takes a clap argument struct whose
//! fields say, beside their flag, how a configuration file names them; from that one
//! declaration it makes
//!
//! - the clap struct itself (the flag, its help text, its parser);
//! - the struct of what a configuration file says of those settings, every value
//!   [`Spanned`](toml::Spanned) so `config show` and errors can name its line, with the routing that
//!   [`crate::config::file::FileConfig`] uses to deserialize the file's top-level keys;
//! - the merge of flag, files and default, each setting noted with its source
//!   ([`Declared::merge`], what `harnessx config show` prints);
//! - the flags as a command line gives them back ([`Declared::flags`], the `resume`
//!   command a paused run prints), named by clap's own long names;
//! - the list of declared flags ([`Declared::declared`]) the tests check against clap.
//!
//! Hand-written rather than taken from `figment`: figment's providers know which file a
//! value came from but not its line, and its errors name the key but not the line, while
//! `config show` and every error here say `FILE:LINE`; it would also add a parser
//! combinator crate to a binary that must shrink. What types do is said once, by the
//! traits below ([`FromFile`], [`Show`], [`FlagWords`]); a declaration says only what
//! differs (a check, how a default is shown).
//!
//! A field's declaration, after its clap attributes and type, is `=>` and one of:
//!
//! - `key "NAME"`: a top-level key of the files, merged here;
//! - `file "NAME"`: a top-level key, read here but merged by hand in
//!   [`crate::config::apply`] (the system prompt's two keys are one setting);
//! - `table "NAME"`: a key of a table that [`crate::config::apply`] reads by hand
//!   (`permissions.allow`, `mcp_servers`);
//! - `none "WHY"`: a flag no file sets, and why;
//! - `group`: a flattened struct declared with [`settings!`] too;
//! - `skip "WHY"`: not a flag (`#[arg(skip)]`).
//!
//! then, optionally and in this order: `; resume = limit` (a limit, not part of what the
//! agent is: the resume line gives it after the others and `--restate` takes it),
//! `; from_file = CLOSURE` (how the file's value becomes the field's, instead of
//! [`FromFile`]), `; check = FN` (a check of the file's value, as the flag's parser
//! checks the flag's), `; shown = CLOSURE` (how `config show` shows it, instead of
//! [`Show`]).

use std::ops::Range;
use std::path::PathBuf;

use clap::ValueEnum;
use harnessx::agent::ToolChoice;
use harnessx::agent::budget::ModelPrice;
use harnessx::agent::model::ReasoningEffort;
use serde::de::{DeserializeOwned, MapAccess};
use serde_json::{Value, json};

use super::agent_flags::Effort;
use super::flags::{Level, SandboxKind};
use crate::config::Source;
use crate::config::file::Loaded;
use crate::error::CliError;

/// Whether a flag says what the agent is (the journal's fingerprint and a cluster's
/// workers depend on it) or limits the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Agent,
    Limit,
}

/// How a flag is set from a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    /// By this key (`permissions.allow` for a key of a table).
    Named(&'static str),
    /// By none, for this reason.
    None(&'static str),
}

/// One declared flag: its clap id (the field's name), its key, its role.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(test), allow(dead_code))] // (`key` and `role` are read by the tests that keep them together)
pub(crate) struct Decl {
    pub(crate) id: &'static str,
    pub(crate) key: Key,
    pub(crate) role: Role,
}

/// One flag as a command line gives it: its long name and its value, if it takes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Given {
    pub(crate) name: String,
    pub(crate) value: Option<String>,
}

/// Where [`Declared::merge`] says each setting came from: `(key, shown value, source)`.
pub(crate) type Note<'a> = dyn FnMut(&'static str, Value, Source) + 'a;

/// A clap struct declared with [`settings!`].
pub(crate) trait Declared: Sized {
    /// What a file says of these settings.
    type File: FileKeys + Default + std::fmt::Debug;

    /// Sets each setting the command line did not give (`given(id)`) from the first of
    /// `files` (highest precedence first) that sets it, and notes where each came from.
    fn merge(
        &mut self,
        files: &[(&Loaded, &Self::File)],
        given: &dyn Fn(&str) -> bool,
        note: &mut Note<'_>,
    ) -> Result<(), CliError>;

    /// The flags of `role` that differ from `defaults`, or that `typed` names (the ids the
    /// command line gave), in declaration order. `command` is this struct's clap command,
    /// for the flags' long names.
    fn flags(
        &self,
        defaults: &Self,
        command: &clap::Command,
        role: Role,
        typed: &[String],
        out: &mut Vec<Given>,
    );

    /// Every flag, in declaration order.
    fn declared(out: &mut Vec<Decl>);
}

/// The keys of a file part made by [`settings!`].
pub(crate) trait FileKeys {
    /// Deserializes the value of `key` when it is one of these; `false` when not.
    fn take<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error>;

    /// The keys, in declaration order.
    fn keys(out: &mut Vec<&'static str>);
}

/// The values of a struct no flag is given to: what each flag defaults to.
pub(crate) fn defaults<T: clap::Args + clap::FromArgMatches>() -> (T, clap::Command) {
    let command = T::augment_args(clap::Command::new("harnessx"));
    let matches = command.clone().try_get_matches_from(["harnessx"]);
    let value = matches
        .and_then(|m| T::from_arg_matches(&m))
        .unwrap_or_else(|e| unreachable!("no agent flag is required, so none is parsed in vain: {e}"));
    (value, command)
}

/// Pushes flag `id`'s words: one flag per word, or one with the words joined when the
/// flag splits its value (`--tools a,b`).
pub(crate) fn push_words(
    command: &clap::Command,
    id: &str,
    words: Vec<Option<String>>,
    out: &mut Vec<Given>,
) {
    let arg = command.get_arguments().find(|a| a.get_id() == id);
    let name = format!("--{}", arg.and_then(|a| a.get_long()).unwrap_or(id));
    match arg.and_then(|a| a.get_value_delimiter()) {
        Some(delimiter) if !words.is_empty() && words.iter().all(Option::is_some) => {
            let joined: Vec<String> = words.into_iter().flatten().collect();
            out.push(Given { name, value: Some(joined.join(&delimiter.to_string())) });
        }
        _ => out.extend(words.into_iter().map(|value| Given { name: name.clone(), value })),
    }
}

/// An error about a file's value at `span`: `FILE:LINE: message`.
pub(crate) fn at(file: &Loaded, span: Range<usize>, e: CliError) -> CliError {
    match e {
        CliError::Usage(m) => file.error(span, m),
        other => other,
    }
}

/// A field type a file can set: what the file holds, and how it becomes the field's.
pub(crate) trait FromFile: Sized {
    /// The file's value.
    type File: DeserializeOwned + std::fmt::Debug;
    /// The field's value; paths are relative to `file`'s folder.
    fn from_file(file: &Loaded, value: &Self::File) -> Result<Self, CliError>;
}

macro_rules! from_file_as_is {
    ($($ty:ty),*) => {$(
        impl FromFile for $ty {
            type File = $ty;
            fn from_file(_: &Loaded, value: &$ty) -> Result<Self, CliError> {
                Ok(value.clone())
            }
        }
    )*};
}

from_file_as_is!(String, u32, u64, usize, f64, bool, SandboxKind, Level);

impl FromFile for PathBuf {
    type File = PathBuf;
    fn from_file(file: &Loaded, value: &PathBuf) -> Result<Self, CliError> {
        Ok(file.resolve(value))
    }
}

impl FromFile for ToolChoice {
    type File = String;
    fn from_file(_: &Loaded, value: &String) -> Result<Self, CliError> {
        value.parse().map_err(CliError::usage)
    }
}

impl FromFile for ModelPrice {
    type File = String;
    fn from_file(_: &Loaded, value: &String) -> Result<Self, CliError> {
        // The error names the price it read.
        value.parse().map_err(CliError::usage)
    }
}

impl FromFile for Effort {
    type File = ReasoningEffort;
    fn from_file(_: &Loaded, value: &ReasoningEffort) -> Result<Self, CliError> {
        Ok((*value).into())
    }
}

impl<T: FromFile> FromFile for Option<T> {
    type File = T::File;
    fn from_file(file: &Loaded, value: &T::File) -> Result<Self, CliError> {
        T::from_file(file, value).map(Some)
    }
}

impl<T: FromFile> FromFile for Vec<T> {
    type File = Vec<T::File>;
    fn from_file(file: &Loaded, value: &Vec<T::File>) -> Result<Self, CliError> {
        value.iter().map(|v| T::from_file(file, v)).collect()
    }
}

/// How `config show` shows a value.
pub(crate) trait Show {
    fn shown(&self) -> Value;
}

macro_rules! show_as_json {
    ($($ty:ty),*) => {$(
        impl Show for $ty {
            fn shown(&self) -> Value {
                json!(self)
            }
        }
    )*};
}

show_as_json!(String, u32, u64, usize, f64, bool);

impl Show for PathBuf {
    fn shown(&self) -> Value {
        json!(self.display().to_string())
    }
}

impl Show for ToolChoice {
    fn shown(&self) -> Value {
        json!(self.to_string())
    }
}

impl Show for ModelPrice {
    fn shown(&self) -> Value {
        json!(self.to_string())
    }
}

impl<T: Show> Show for Option<T> {
    fn shown(&self) -> Value {
        self.as_ref().map_or(Value::Null, T::shown)
    }
}

impl<T: Show> Show for Vec<T> {
    fn shown(&self) -> Value {
        Value::Array(self.iter().map(T::shown).collect())
    }
}

/// A value as a flag's argument.
pub(crate) trait FlagText {
    fn text(&self) -> String;
}

macro_rules! text_by_display {
    ($($ty:ty),*) => {$(
        impl FlagText for $ty {
            fn text(&self) -> String {
                self.to_string()
            }
        }
    )*};
}

text_by_display!(String, u32, u64, usize, f64, bool, ToolChoice);

impl FlagText for PathBuf {
    fn text(&self) -> String {
        self.display().to_string()
    }
}

impl FlagText for ModelPrice {
    /// `IN,OUT,CACHED_IN`, as `--price` reads it.
    fn text(&self) -> String {
        format!("{},{},{}", self.input, self.output, self.cached_input)
    }
}

/// A field's value as a command line's words after its flag: none for a switch that is
/// off, `[None]` for one that is on, one per value of a repeatable flag.
pub(crate) trait FlagWords {
    fn words(&self) -> Vec<Option<String>>;
}

impl FlagWords for bool {
    fn words(&self) -> Vec<Option<String>> {
        if *self { vec![None] } else { Vec::new() }
    }
}

macro_rules! one_word {
    ($($ty:ty),*) => {$(
        impl FlagWords for $ty {
            fn words(&self) -> Vec<Option<String>> {
                vec![Some(self.text())]
            }
        }
    )*};
}

one_word!(String, u32, usize, ToolChoice);

impl<T: FlagText> FlagWords for Option<T> {
    fn words(&self) -> Vec<Option<String>> {
        self.iter().map(|v| Some(v.text())).collect()
    }
}

impl<T: FlagText> FlagWords for Vec<T> {
    fn words(&self) -> Vec<Option<String>> {
        self.iter().map(|v| Some(v.text())).collect()
    }
}

/// The flag enums: a file spells them as the flag does, and so do `config show` and the
/// resume line.
macro_rules! value_enum {
    ($($ty:ty),*) => {$(
        impl Show for $ty {
            fn shown(&self) -> Value {
                json!(value_name(*self))
            }
        }
        impl FlagText for $ty {
            fn text(&self) -> String {
                value_name(*self)
            }
        }
    )*};
}

value_enum!(Effort, SandboxKind, Level);

/// A flag value as clap spells it.
pub(crate) fn value_name(value: impl ValueEnum) -> String {
    value.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default()
}

/// Declares a clap struct of settings: see the module's documentation.
macro_rules! settings {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident in $file:ident {
            $(
                $(#[$fmeta:meta])*
                $fvis:vis $field:ident : $ty:ty => $how:ident $($what:literal)?
                    $(; resume = $role:ident)?
                    $(; from_file = $conv:expr)?
                    $(; check = $check:expr)?
                    $(; shown = $shown:expr)?
                ,
            )*
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[$fmeta])* $fvis $field: $ty, )*
        }

        #[doc = concat!("What a configuration file says of the settings of [`", stringify!($name), "`].")]
        #[derive(Debug, Default)]
        #[allow(dead_code)] // (the unit fields of flags no file sets)
        pub(crate) struct $file {
            $( pub(crate) $field: $crate::setup::settings::settings!(@file_ty $how $ty), )*
        }

        #[allow(unused_variables)] // (a struct whose flags no file sets uses none)
        impl $crate::setup::settings::FileKeys for $file {
            fn take<'de, A: serde::de::MapAccess<'de>>(
                &mut self,
                key: &str,
                map: &mut A,
            ) -> Result<bool, A::Error> {
                $( $crate::setup::settings::settings!(@take self key map $how $field [$($what)?] $ty); )*
                Ok(false)
            }

            fn keys(out: &mut Vec<&'static str>) {
                $( $crate::setup::settings::settings!(@keys out $how [$($what)?] $ty); )*
            }
        }

        #[allow(unused_variables)] // (a struct whose flags no file sets uses none)
        impl $crate::setup::settings::Declared for $name {
            type File = $file;

            fn merge(
                &mut self,
                files: &[(&$crate::config::file::Loaded, &$file)],
                given: &dyn Fn(&str) -> bool,
                note: &mut $crate::setup::settings::Note<'_>,
            ) -> Result<(), $crate::error::CliError> {
                $(
                    $crate::setup::settings::settings!(
                        @merge self files given note $how $field [$($what)?] $ty;
                        [$($conv)?] [$($check)?] [$($shown)?]
                    );
                )*
                Ok(())
            }

            fn flags(
                &self,
                defaults: &Self,
                command: &clap::Command,
                role: $crate::setup::settings::Role,
                typed: &[String],
                out: &mut Vec<$crate::setup::settings::Given>,
            ) {
                $(
                    $crate::setup::settings::settings!(
                        @flags self defaults command role typed out $how $field $ty [$($role)?]
                    );
                )*
            }

            fn declared(out: &mut Vec<$crate::setup::settings::Decl>) {
                $(
                    $crate::setup::settings::settings!(@decl out $how $field [$($what)?] $ty [$($role)?]);
                )*
            }
        }
    };

    // What a file holds of a field.
    (@file_ty key $ty:ty) => { Option<toml::Spanned<<$ty as $crate::setup::settings::FromFile>::File>> };
    (@file_ty file $ty:ty) => { Option<toml::Spanned<<$ty as $crate::setup::settings::FromFile>::File>> };
    (@file_ty group $ty:ty) => { <$ty as $crate::setup::settings::Declared>::File };
    (@file_ty $other:ident $ty:ty) => { () };

    // Deserializes a top-level key of a file.
    (@take $self:ident $key:ident $map:ident group $field:ident [] $ty:ty) => {
        if $crate::setup::settings::FileKeys::take(&mut $self.$field, $key, $map)? {
            return Ok(true);
        }
    };
    (@take $self:ident $key:ident $map:ident key $field:ident [$what:literal] $ty:ty) => {
        $crate::setup::settings::settings!(@take $self $key $map file $field [$what] $ty)
    };
    (@take $self:ident $key:ident $map:ident file $field:ident [$what:literal] $ty:ty) => {
        if $key == $what {
            if $self.$field.is_some() {
                return Err(<A::Error as serde::de::Error>::duplicate_field($what));
            }
            $self.$field = Some($map.next_value()?);
            return Ok(true);
        }
    };
    (@take $self:ident $key:ident $map:ident $other:ident $field:ident [$($what:literal)?] $ty:ty) => {};

    (@keys $out:ident group [] $ty:ty) => {
        <<$ty as $crate::setup::settings::Declared>::File as $crate::setup::settings::FileKeys>::keys($out)
    };
    (@keys $out:ident key [$what:literal] $ty:ty) => { $out.push($what) };
    (@keys $out:ident file [$what:literal] $ty:ty) => { $out.push($what) };
    (@keys $out:ident $other:ident [$($what:literal)?] $ty:ty) => {};

    // The merge of one setting.
    (@merge $self:ident $files:ident $given:ident $note:ident group $field:ident [] $ty:ty; [] [] []) => {{
        let files: Vec<(&$crate::config::file::Loaded, &<$ty as $crate::setup::settings::Declared>::File)> =
            $files.iter().map(|(loaded, part)| (*loaded, &part.$field)).collect();
        $crate::setup::settings::Declared::merge(&mut $self.$field, &files, $given, $note)?;
    }};
    (@merge $self:ident $files:ident $given:ident $note:ident key $field:ident [$what:literal] $ty:ty;
        [$($conv:expr)?] [$($check:expr)?] [$($shown:expr)?]) => {{
        use $crate::config::Source;
        let source = if $given(stringify!($field)) {
            Source::Flag
        } else if let Some((file, value)) =
            $files.iter().find_map(|(loaded, part)| part.$field.as_ref().map(|v| (*loaded, v)))
        {
            let span = value.span();
            let at = |e| $crate::setup::settings::at(file, span.clone(), e);
            let value = value.get_ref();
            $( let checked = ($check)(value.clone()).map_err(at)?; let value = &checked; )?
            $self.$field = $crate::setup::settings::settings!(
                @or [$($conv)?] <$ty as $crate::setup::settings::FromFile>::from_file
            )(file, value).map_err(at)?;
            Source::File(file.place(span))
        } else {
            Source::Default
        };
        let shown = $crate::setup::settings::settings!(
            @or [$($shown)?] <$ty as $crate::setup::settings::Show>::shown
        )(&$self.$field);
        $note($what, shown, source);
    }};
    (@merge $self:ident $files:ident $given:ident $note:ident $other:ident $field:ident [$($what:literal)?] $ty:ty;
        [] [] []) => {};

    (@or [$given:expr] $($default:tt)*) => { ($given) };
    (@or [] $($default:tt)*) => { ($($default)*) };

    // The flag as a command line gives it back.
    (@flags $self:ident $defaults:ident $command:ident $role:ident $typed:ident $out:ident
        group $field:ident $ty:ty []) => {
        $crate::setup::settings::Declared::flags(
            &$self.$field, &$defaults.$field, $command, $role, $typed, $out,
        )
    };
    (@flags $self:ident $defaults:ident $command:ident $role:ident $typed:ident $out:ident
        skip $field:ident $ty:ty []) => {};
    (@flags $self:ident $defaults:ident $command:ident $role:ident $typed:ident $out:ident
        $how:ident $field:ident $ty:ty [$($declared:ident)?]) => {
        if $crate::setup::settings::settings!(@role $($declared)?) == $role
            && ($self.$field != $defaults.$field || $typed.iter().any(|id| id == stringify!($field)))
        {
            $crate::setup::settings::push_words(
                $command,
                stringify!($field),
                $crate::setup::settings::FlagWords::words(&$self.$field),
                $out,
            );
        }
    };

    (@role) => { $crate::setup::settings::Role::Agent };
    (@role limit) => { $crate::setup::settings::Role::Limit };

    (@decl $out:ident group $field:ident [] $ty:ty []) => {
        <$ty as $crate::setup::settings::Declared>::declared($out)
    };
    (@decl $out:ident skip $field:ident [$why:literal] $ty:ty []) => {};
    (@decl $out:ident none $field:ident [$why:literal] $ty:ty [$($role:ident)?]) => {
        $out.push($crate::setup::settings::Decl {
            id: stringify!($field),
            key: $crate::setup::settings::Key::None($why),
            role: $crate::setup::settings::settings!(@role $($role)?),
        })
    };
    (@decl $out:ident $how:ident $field:ident [$what:literal] $ty:ty [$($role:ident)?]) => {
        $out.push($crate::setup::settings::Decl {
            id: stringify!($field),
            key: $crate::setup::settings::Key::Named($what),
            role: $crate::setup::settings::settings!(@role $($role)?),
        })
    };
}

pub(crate) use settings;
