//! Shared handlers for the common `#[tool]` shape: a sync free function whose parameters
//! are all required, `#[arg(default)]`, or the context taken by value.
//!
//! The generated code passes the function as a plain `fn` pointer and one [`Take`] per
//! parameter, so [`sync0`]..[`sync12`] are monomorphized once per *signature*, not once per
//! tool, and type-checked once, here: each tool expands to one call instead of a closure
//! of its own.

use std::fmt::Display;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::Args;
use crate::error::ToolError;
use crate::tool::handler::{HandlerResult, ToolContext, ToolHandler};

/// How one parameter is obtained: from the arguments by name, or from the context.
pub struct Take<T>(fn(&mut Args, &'static str, &ToolContext) -> Result<T, ToolError>);

impl<T> Clone for Take<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Take<T> {}

/// A parameter that must be present.
pub const fn required<T: DeserializeOwned>() -> Take<T> {
    Take(|args, name, _| args.required(name))
}

/// A parameter with `#[arg(default)]`: `Default::default()` when absent.
pub const fn or_default<T: DeserializeOwned + Default>() -> Take<T> {
    Take(|args, name, _| Ok(args.optional(name)?.unwrap_or_default()))
}

/// The injected `ToolContext`, by value.
pub const fn context() -> Take<ToolContext> {
    Take(|_, _, ctx| Ok(ctx.clone()))
}

/// How a return value becomes a handler result: [`Plain`] or [`Fallible`].
pub trait Returns<R> {
    /// Converts the function's return value.
    fn convert(value: R) -> HandlerResult;
}

/// A plain return value: strings pass through as text, anything else is serialized.
pub struct Plain;

/// A `Result` return value: `Ok` as [`Plain`], `Err` as the error text for the model.
pub struct Fallible;

impl<T: Serialize> Returns<T> for Plain {
    #[inline]
    fn convert(value: T) -> HandlerResult {
        super::output(value)
    }
}

impl<T: Serialize, E: Display + 'static> Returns<Result<T, E>> for Fallible {
    #[inline]
    fn convert(value: Result<T, E>) -> HandlerResult {
        super::result_output(value)
    }
}

/// A blocking handler calling `f`, which takes no parameters (the arguments are ignored).
pub fn sync0<R: 'static, O: Returns<R>>(f: fn() -> R) -> ToolHandler {
    ToolHandler::from_blocking(move |_: Value, _: &ToolContext| O::convert(f()))
}

macro_rules! sync_handlers {
    ($($name:ident($($T:ident $t:ident $i:tt),*);)*) => {$(
        /// A blocking handler calling `f` with its parameters, taken in order by the
        /// `Take`s, the `i`-th named `names[i]`.
        #[allow(clippy::too_many_arguments)]
        pub fn $name<$($T: 'static,)* R: 'static, O: Returns<R>>(
            names: &'static [&'static str],
            f: fn($($T),*) -> R,
            $($t: Take<$T>,)*
        ) -> ToolHandler {
            ToolHandler::from_blocking(move |args: Value, ctx: &ToolContext| {
                let mut args = Args::new(args)?;
                O::convert(f($(($t.0)(&mut args, names[$i], ctx)?),*))
            })
        }
    )*};
}

sync_handlers! {
    sync1(A a 0);
    sync2(A a 0, B b 1);
    sync3(A a 0, B b 1, C c 2);
    sync4(A a 0, B b 1, C c 2, D d 3);
    sync5(A a 0, B b 1, C c 2, D d 3, E e 4);
    sync6(A a 0, B b 1, C c 2, D d 3, E e 4, F f5 5);
    sync7(A a 0, B b 1, C c 2, D d 3, E e 4, F f5 5, G g 6);
    sync8(A a 0, B b 1, C c 2, D d 3, E e 4, F f5 5, G g 6, H h 7);
    sync9(A a 0, B b 1, C c 2, D d 3, E e 4, F f5 5, G g 6, H h 7, I i8 8);
    sync10(A a 0, B b 1, C c 2, D d 3, E e 4, F f5 5, G g 6, H h 7, I i8 8, J j 9);
    sync11(A a 0, B b 1, C c 2, D d 3, E e 4, F f5 5, G g 6, H h 7, I i8 8, J j 9, K k 10);
    sync12(A a 0, B b 1, C c 2, D d 3, E e 4, F f5 5, G g 6, H h 7, I i8 8, J j 9, K k 10, L l 11);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(handler: ToolHandler, args: Value) -> HandlerResult {
        let ToolHandler::Blocking(h) = handler else { panic!("expected a blocking handler") };
        h.call(args, &ToolContext::new("call-1", "t"))
    }

    fn join(a: i64, b: Vec<u32>, ctx: ToolContext) -> Result<String, String> {
        if a < 0 {
            return Err(format!("negative: {a}"));
        }
        Ok(format!("{a} {b:?} {}", ctx.call_id()))
    }

    #[test]
    fn takes_parameters_in_order_and_converts_the_result() {
        let h = || sync3::<_, _, _, _, Fallible>(&["a", "b", ""], join, required(), or_default(), context());
        assert_eq!(call(h(), json!({"a": 2, "b": [1]})).unwrap().content, "2 [1] call-1");
        assert_eq!(call(h(), json!({"a": 2})).unwrap().content, "2 [] call-1");
        assert_eq!(call(h(), json!({"a": -1})).unwrap_err().message(), "negative: -1");
        assert_eq!(call(h(), json!({})).unwrap_err().message(), "missing required argument `a`");
        assert!(call(h(), json!([1])).is_err());
        let none = sync0::<_, Plain>(|| 7);
        assert_eq!(call(none, json!("ignored")).unwrap().content, "7");
    }
}
