//! Shared handlers for the common `#[tool]` shape: a sync free function whose parameters
//! are all required, `#[arg(default)]`, or the context taken by value.
//!
//! The generated code builds, in a `const` block, one [`Shared`] value holding the function
//! as a plain `fn` pointer and one [`Take`] per parameter, and passes a `'static` reference
//! to it to the non-generic [`shared`]. The only code generic over the signature is
//! `Shared`'s `call` (monomorphized once per *signature*, not once per tool, and
//! type-checked once, here): no per-signature closure, `Arc` or constructor function.

use std::fmt::Display;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ToolError;
use crate::tool::decode::{Args, decode_value, missing_argument};
use crate::tool::handler::{BlockingToolHandler, HandlerResult, ToolContext, ToolHandler};

/// How one parameter is obtained: from the arguments by name, or from the context; from
/// the arguments' value, or from the text of its own value in checked argument text
/// (`None` there when it does not decode: the call then takes the value path, whose error
/// the model reads).
pub struct Take<T> {
    args: fn(&mut Args<'_>, &'static str) -> Result<T, ToolError>,
    text: fn(Option<&str>, &ToolContext) -> Option<T>,
}

impl<T> Clone for Take<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Take<T> {}

/// A parameter that must be present.
pub const fn required<T: DeserializeOwned>() -> Take<T> {
    Take { args: take_required::<T>, text: text_required::<T> }
}

/// A parameter with `#[arg(default)]`: `Default::default()` when absent.
pub const fn or_default<T: DeserializeOwned + Default>() -> Take<T> {
    Take { args: take_or_default::<T>, text: text_or_default::<T> }
}

// One small function per parameter type, plus `decode_value` (the one decoder every
// handler kind shares): taking the value out and the error texts are non-generic, and
// `match` instead of `?`/`map_err` instantiates no `Try`/closure code.
fn take_required<T: DeserializeOwned>(args: &mut Args<'_>, name: &'static str) -> Result<T, ToolError> {
    match args.take(name) {
        Some(value) => decode_value(args.context(), name, value),
        None => Err(missing_argument(args.context(), name)),
    }
}

fn take_or_default<T: DeserializeOwned + Default>(
    args: &mut Args<'_>,
    name: &'static str,
) -> Result<T, ToolError> {
    match args.take(name) {
        Some(value) => decode_value(args.context(), name, value),
        None => Ok(T::default()),
    }
}

fn text_required<T: DeserializeOwned>(value: Option<&str>, _: &ToolContext) -> Option<T> {
    match value {
        Some(text) => decode_text(text),
        None => None,
    }
}

fn text_or_default<T: DeserializeOwned + Default>(value: Option<&str>, _: &ToolContext) -> Option<T> {
    match value {
        Some(text) => decode_text(text),
        None => Some(T::default()),
    }
}

/// One argument's value from its text: a plain scalar directly, anything else by serde_json.
fn decode_text<T: DeserializeOwned>(text: &str) -> Option<T> {
    match crate::schema::decode_plain_value(text) {
        Some(value) => Some(value),
        None => serde_json::from_str(text).ok(),
    }
}

macro_rules! common_takes {
    ($($T:ty),*) => {
        /// The parameter decoders of the common parameter types (the scalars, and `Option`
        /// and `Vec` of them), compiled once here: in unoptimized builds generic code
        /// instantiated by a dependency is shared with the crates using it, so a tool whose
        /// parameters have these types compiles no decoding code of its own.
        #[doc(hidden)]
        pub static COMMON_TAKES: &[&(dyn std::any::Any + Sync)] = &[$(
            &required::<$T>(),
            &or_default::<$T>(),
            &required::<Option<$T>>(),
            &or_default::<Option<$T>>(),
            &required::<Vec<$T>>(),
            &or_default::<Vec<$T>>(),
        )*];
    };
}

common_takes!(bool, char, String, i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, f32, f64);

/// The injected `ToolContext`, by value.
pub const fn context() -> Take<ToolContext> {
    Take { args: |args, _| Ok(args.context().clone()), text: |_, ctx| Some(ctx.clone()) }
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

impl<T: crate::content::IntoToolOutput> Returns<T> for Plain {
    #[inline]
    fn convert(value: T) -> HandlerResult {
        crate::tool::encode::output(value)
    }
}

impl<T: crate::content::IntoToolOutput, E: Display + 'static> Returns<Result<T, E>> for Fallible {
    #[inline]
    fn convert(value: Result<T, E>) -> HandlerResult {
        crate::tool::encode::result_output(value)
    }
}

/// The shared handler of one signature: the function, as a plain `fn` pointer, and how to
/// obtain each of its parameters. Built by [`sync0`]..[`sync12`] in a `const` block, so the
/// generated code only borrows a `'static` value and passes it to [`shared`]: the only code
/// generic over the signature is this type's [`BlockingToolHandler::call`] (and its vtable).
pub struct Shared<F, T, O, const N: usize> {
    names: &'static [&'static str; N],
    f: F,
    takes: T,
    returns: PhantomData<fn() -> O>,
}

/// The handler of a `#[tool]` from its `'static` [`Shared`] value. Non-generic: one `Arc`
/// type and one forwarding `call` for all tools.
pub fn shared(handler: &'static dyn BlockingToolHandler) -> ToolHandler {
    ToolHandler::Blocking(Arc::new(Static(handler)))
}

struct Static(&'static dyn BlockingToolHandler);

impl BlockingToolHandler for Static {
    fn call(&self, args: Value, ctx: &ToolContext) -> HandlerResult {
        self.0.call(args, ctx)
    }

    fn takes_json(&self) -> bool {
        self.0.takes_json()
    }

    fn call_json(&self, args: &str, ctx: &ToolContext) -> Option<HandlerResult> {
        self.0.call_json(args, ctx)
    }
}

/// The handler calling `f`, which takes no parameters (the arguments are ignored).
pub const fn sync0<R: 'static, O: Returns<R>>(f: fn() -> R) -> Shared<fn() -> R, (), O, 0> {
    Shared { names: &[], f, takes: (), returns: PhantomData }
}

impl<R: 'static, O: Returns<R> + 'static> BlockingToolHandler for Shared<fn() -> R, (), O, 0> {
    fn call(&self, _: Value, _: &ToolContext) -> HandlerResult {
        O::convert((self.f)())
    }

    fn takes_json(&self) -> bool {
        true
    }

    fn call_json(&self, _: &str, _: &ToolContext) -> Option<HandlerResult> {
        Some(O::convert((self.f)()))
    }
}

macro_rules! sync_handlers {
    ($($name:ident<$n:literal>($($T:ident $t:ident $i:tt),*);)*) => {$(
        /// The handler calling `f` with its parameters, taken in order by the `Take`s, the
        /// `i`-th named `names[i]`.
        #[allow(clippy::too_many_arguments, clippy::type_complexity)]
        pub const fn $name<$($T: 'static,)* R: 'static, O: Returns<R>>(
            names: &'static [&'static str; $n],
            f: fn($($T),*) -> R,
            $($t: Take<$T>,)*
        ) -> Shared<fn($($T),*) -> R, ($(Take<$T>,)*), O, $n> {
            Shared { names, f, takes: ($($t,)*), returns: PhantomData }
        }

        impl<$($T: 'static,)* R: 'static, O: Returns<R> + 'static> BlockingToolHandler
            for Shared<fn($($T),*) -> R, ($(Take<$T>,)*), O, $n>
        {
            fn call(&self, args: Value, ctx: &ToolContext) -> HandlerResult {
                // `match`, not `?`: no `Try` code instantiated per signature; the names
                // are an array, so indexing them has no bounds check.
                let mut args = match Args::new(args, ctx) {
                    Ok(args) => args,
                    Err(e) => return Err(e),
                };
                O::convert((self.f)($(match (self.takes.$i.args)(&mut args, self.names[$i]) {
                    Ok(value) => value,
                    Err(e) => return Err(e),
                }),*))
            }

            fn takes_json(&self) -> bool {
                true
            }

            fn call_json(&self, text: &str, ctx: &ToolContext) -> Option<HandlerResult> {
                // Each parameter from the text of its own value; `None` before anything
                // runs when one does not decode.
                let mut values = [None; $n];
                if !crate::schema::locate_values(text, self.names, &mut values) {
                    return None;
                }
                Some(O::convert((self.f)($(match (self.takes.$i.text)(values[$i], ctx) {
                    Some(value) => value,
                    None => return None,
                }),*)))
            }
        }
    )*};
}

sync_handlers! {
    sync1<1>(A a 0);
    sync2<2>(A a 0, B b 1);
    sync3<3>(A a 0, B b 1, C c 2);
    sync4<4>(A a 0, B b 1, C c 2, D d 3);
    sync5<5>(A a 0, B b 1, C c 2, D d 3, E e 4);
    sync6<6>(A a 0, B b 1, C c 2, D d 3, E e 4, F f5 5);
    sync7<7>(A a 0, B b 1, C c 2, D d 3, E e 4, F f5 5, G g 6);
    sync8<8>(A a 0, B b 1, C c 2, D d 3, E e 4, F f5 5, G g 6, H h 7);
    sync9<9>(A a 0, B b 1, C c 2, D d 3, E e 4, F f5 5, G g 6, H h 7, I i8 8);
    sync10<10>(A a 0, B b 1, C c 2, D d 3, E e 4, F f5 5, G g 6, H h 7, I i8 8, J j 9);
    sync11<11>(A a 0, B b 1, C c 2, D d 3, E e 4, F f5 5, G g 6, H h 7, I i8 8, J j 9, K k 10);
    sync12<12>(A a 0, B b 1, C c 2, D d 3, E e 4, F f5 5, G g 6, H h 7, I i8 8, J j 9, K k 10, L l 11);
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
        let h = || {
            shared(
                const {
                    &sync3::<_, _, _, _, Fallible>(&["a", "b", ""], join, required(), or_default(), context())
                },
            )
        };
        assert_eq!(call(h(), json!({"a": 2, "b": [1]})).unwrap().content, "2 [1] call-1");
        assert_eq!(call(h(), json!({"a": 2})).unwrap().content, "2 [] call-1");
        assert_eq!(call(h(), json!({"a": -1})).unwrap_err().message(), "negative: -1");
        assert_eq!(
            call(h(), json!({})).unwrap_err().message(),
            r#"invalid arguments for t: "a" is a required property"#
        );
        assert_eq!(
            call(h(), json!({"a": "2"})).unwrap_err().message(),
            r#"invalid arguments for t: a: invalid type: string "2", expected i64"#
        );
        assert!(call(h(), json!([1])).is_err());
        let none = shared(const { &sync0::<_, Plain>(|| 7) });
        assert_eq!(call(none, json!("ignored")).unwrap().content, "7");
    }
}
