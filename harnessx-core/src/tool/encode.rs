//! Turning what a tool function returns into a handler result: the one conversion every
//! handler kind uses (`#[tool]` functions, `#[toolbox]` methods, the typed constructors
//! [`ToolHandler::typed_async`] and [`ToolHandler::typed_blocking`]).
//!
//! A value serializes (strings pass through as text, anything else as compact JSON kept as
//! structured content); an `Err` becomes a [`ToolError`] carrying its `Display` text, a
//! [`TransientToolError`] (also inside a boxed error) staying retryable.
//!
//! [`ToolHandler::typed_async`]: crate::ToolHandler::typed_async
//! [`ToolHandler::typed_blocking`]: crate::ToolHandler::typed_blocking

use std::any::Any;
use std::error::Error;
use std::fmt::Display;

use crate::content::IntoToolOutput;
use crate::error::{ToolError, TransientToolError};
use crate::tool::handler::HandlerResult;

/// A plain return value: strings pass through as text, anything else is serialized;
/// an [`Image`](crate::content::Image), [`File`](crate::content::File) or
/// [`Content`](crate::content::Content) gives media parts.
#[inline]
pub fn output<T: IntoToolOutput>(value: T) -> HandlerResult {
    value.into_tool_output()
}

/// A `Result` return value: `Ok` as [`output`], `Err` through [`tool_error`].
#[inline]
pub fn result_output<T: IntoToolOutput, E: Display + 'static>(result: Result<T, E>) -> HandlerResult {
    match result {
        Ok(value) => output(value),
        Err(e) => Err(tool_error(e)),
    }
}

/// The error a tool function returned, as the engine sees it: a [`ToolError`] as it is,
/// a [`TransientToolError`] (also inside a boxed error) as a retryable failure, anything
/// else as a permanent failure carrying its `Display` text.
pub fn tool_error<E: Display + 'static>(error: E) -> ToolError {
    let any: &dyn Any = &error;
    if let Some(e) = any.downcast_ref::<ToolError>() {
        return e.clone();
    }
    if let Some(e) = any.downcast_ref::<TransientToolError>() {
        return ToolError::Transient(e.clone());
    }
    let boxed: Option<&(dyn Error + 'static)> =
        if let Some(b) = any.downcast_ref::<Box<dyn Error + Send + Sync>>() {
            Some(&**b)
        } else if let Some(b) = any.downcast_ref::<Box<dyn Error + Send>>() {
            Some(&**b)
        } else {
            any.downcast_ref::<Box<dyn Error>>().map(|b| &**b)
        };
    if let Some(inner) = boxed {
        if let Some(e) = inner.downcast_ref::<TransientToolError>() {
            return ToolError::Transient(e.clone());
        }
        if let Some(e) = inner.downcast_ref::<ToolError>() {
            return e.clone();
        }
    }
    ToolError::new(error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_pass_through_and_values_serialize() {
        assert_eq!(output("hi").unwrap().content, "hi");
        let out = output(vec![1, 2]).unwrap();
        assert_eq!(out.content, "[1,2]");
        assert_eq!(out.structured_content, Some(serde_json::json!([1, 2])));
    }

    #[test]
    fn errors_keep_their_kind() {
        assert!(tool_error(TransientToolError::new("busy")).is_transient());
        assert!(tool_error(ToolError::transient("busy")).is_transient());
        let boxed: Box<dyn Error + Send + Sync> = Box::new(TransientToolError::new("later"));
        let e = tool_error(boxed);
        assert!(e.is_transient());
        assert_eq!(e.message(), "later");
        let e = tool_error(std::io::Error::other("disk full"));
        assert!(!e.is_transient());
        assert_eq!(e.message(), "disk full");
        let e = result_output::<i32, String>(Err("nope".into())).unwrap_err();
        assert_eq!(e, ToolError::new("nope"));
    }
}
