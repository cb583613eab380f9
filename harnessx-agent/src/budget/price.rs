//! [`ModelPrice`]: what a model's tokens cost, and the built-in table of well-known
//! models' prices.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::model::Usage;

/// The date the built-in price table ([`ModelPrice::builtin`]) was last checked against
/// the providers' published prices. Prices change: give the price yourself
/// ([`AgentConfig::price`](crate::AgentConfig::price), `--price` on the command line)
/// where it matters.
pub const PRICES_CHECKED: &str = "2025-11-24";

/// A model's price in US dollars per million tokens.
///
/// [`cost`](Self::cost) prices a [`Usage`]: input tokens read from the prompt cache at
/// `cached_input`, those written to it at `cache_write`, the other input tokens at
/// `input`, and output tokens (reasoning included) at `output`.
///
/// ```
/// use harnessx_agent::budget::ModelPrice;
/// use harnessx_agent::model::Usage;
///
/// let price = ModelPrice::new(3.0, 15.0).with_cached_input(0.3).with_cache_write(3.75);
/// let usage = Usage {
///     input_tokens: 10_000,
///     cached_input_tokens: 8_000,
///     cache_write_tokens: 1_000,
///     output_tokens: 500,
///     ..Usage::default()
/// };
/// // 1000 uncached at $3, 8000 cached at $0.30, 1000 written at $3.75, 500 out at $15
/// let cost = price.cost(&usage);
/// assert!((cost - 0.01665).abs() < 1e-12, "{cost}");
/// assert_eq!("2.5,10,1.25".parse::<ModelPrice>().unwrap(), ModelPrice::new(2.5, 10.0).with_cached_input(1.25));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Input tokens not read from or written to a cache.
    pub input: f64,
    /// Output tokens, reasoning included.
    pub output: f64,
    /// Input tokens read from the prompt cache.
    pub cached_input: f64,
    /// Input tokens written to the prompt cache (Anthropic's five-minute cache writes).
    pub cache_write: f64,
}

impl ModelPrice {
    /// A price with cache reads and writes at the input price (a provider without a
    /// cache discount).
    pub const fn new(input: f64, output: f64) -> Self {
        Self { input, output, cached_input: input, cache_write: input }
    }

    /// The price of input tokens read from the prompt cache.
    pub const fn with_cached_input(mut self, price: f64) -> Self {
        self.cached_input = price;
        self
    }

    /// The price of input tokens written to the prompt cache.
    pub const fn with_cache_write(mut self, price: f64) -> Self {
        self.cache_write = price;
        self
    }

    /// What `usage` cost, in US dollars.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let written = usage.cache_write_tokens.min(usage.input_tokens - cached);
        let plain = usage.input_tokens - cached - written;
        (plain as f64 * self.input
            + cached as f64 * self.cached_input
            + written as f64 * self.cache_write
            + usage.output_tokens as f64 * self.output)
            / 1_000_000.0
    }

    /// The cheapest an input token can be: what `tokens` of input cost at least.
    pub(crate) fn least_input_cost(&self, tokens: u64) -> f64 {
        tokens as f64 * self.input.min(self.cached_input).min(self.cache_write) / 1_000_000.0
    }

    /// The built-in price of a well-known model, by the name its provider gives it
    /// (`gpt-4o`, `claude-sonnet-4-5`, or a dated snapshot of one:
    /// `gpt-4o-2024-08-06`, `claude-sonnet-4-5-20250929`, `claude-3-5-haiku-latest`).
    /// Checked on [`PRICES_CHECKED`]; `None` for any other name, so a model the table
    /// does not know is never priced as another.
    ///
    /// ```
    /// use harnessx_agent::budget::ModelPrice;
    ///
    /// assert_eq!(ModelPrice::builtin("gpt-4o-2024-08-06"), ModelPrice::builtin("gpt-4o"));
    /// assert_ne!(ModelPrice::builtin("gpt-4o-mini"), ModelPrice::builtin("gpt-4o"));
    /// assert_eq!(ModelPrice::builtin("gpt-4o-audio-preview"), None);
    /// assert_eq!(ModelPrice::builtin("llama3.1:8b"), None);
    /// ```
    pub fn builtin(model: &str) -> Option<Self> {
        let model = model.trim();
        BUILTIN
            .iter()
            .filter(|(name, _)| {
                model.eq_ignore_ascii_case(name)
                    || (model.len() > name.len()
                        && model.is_char_boundary(name.len())
                        && model[..name.len()].eq_ignore_ascii_case(name)
                        && is_snapshot_suffix(&model[name.len()..]))
            })
            .max_by_key(|(name, _)| name.len())
            .map(|(_, price)| *price)
    }

    /// The built-in table: every model name it prices, with its price.
    pub fn builtin_table() -> &'static [(&'static str, ModelPrice)] {
        BUILTIN
    }
}

/// `-2024-08-06`, `-20250929` or `-latest`: a dated snapshot or the alias of a model.
fn is_snapshot_suffix(rest: &str) -> bool {
    let Some(rest) = rest.strip_prefix('-') else { return false };
    if rest == "latest" {
        return true;
    }
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    digits(rest, 8)
        || matches!(rest.split('-').collect::<Vec<_>>().as_slice(), [y, m, d] if digits(y, 4) && digits(m, 2) && digits(d, 2))
}

const fn price(input: f64, cached_input: f64, cache_write: f64, output: f64) -> ModelPrice {
    ModelPrice { input, output, cached_input, cache_write }
}

/// USD per million tokens: input, cached input, cache write, output. OpenAI charges no
/// extra for cache writes (its caching is automatic); Anthropic's writes are its
/// five-minute ones (1.25 times input). Gemini's are the flat-priced models (its Pro
/// models cost more above 200K prompt tokens, which one price cannot say, so they are
/// left out); cached input is a tenth of input, writes are input (cache storage, billed
/// per hour, is not counted).
static BUILTIN: &[(&str, ModelPrice)] = &[
    ("gpt-5", price(1.25, 0.125, 1.25, 10.0)),
    ("gpt-5-mini", price(0.25, 0.025, 0.25, 2.0)),
    ("gpt-5-nano", price(0.05, 0.005, 0.05, 0.4)),
    ("gpt-4.1", price(2.0, 0.5, 2.0, 8.0)),
    ("gpt-4.1-mini", price(0.4, 0.1, 0.4, 1.6)),
    ("gpt-4.1-nano", price(0.1, 0.025, 0.1, 0.4)),
    ("gpt-4o", price(2.5, 1.25, 2.5, 10.0)),
    ("gpt-4o-mini", price(0.15, 0.075, 0.15, 0.6)),
    ("o3", price(2.0, 0.5, 2.0, 8.0)),
    ("o4-mini", price(1.1, 0.275, 1.1, 4.4)),
    ("claude-opus-4-5", price(5.0, 0.5, 6.25, 25.0)),
    ("claude-opus-4-1", price(15.0, 1.5, 18.75, 75.0)),
    ("claude-opus-4", price(15.0, 1.5, 18.75, 75.0)),
    ("claude-opus-4-0", price(15.0, 1.5, 18.75, 75.0)),
    ("claude-sonnet-4-5", price(3.0, 0.3, 3.75, 15.0)),
    ("claude-sonnet-4", price(3.0, 0.3, 3.75, 15.0)),
    ("claude-sonnet-4-0", price(3.0, 0.3, 3.75, 15.0)),
    ("claude-3-7-sonnet", price(3.0, 0.3, 3.75, 15.0)),
    ("claude-haiku-4-5", price(1.0, 0.1, 1.25, 5.0)),
    ("claude-3-5-haiku", price(0.8, 0.08, 1.0, 4.0)),
    ("gemini-2.5-flash", price(0.3, 0.03, 0.3, 2.5)),
    ("gemini-2.5-flash-lite", price(0.1, 0.01, 0.1, 0.4)),
];

/// Why a price given as text (`--price IN,OUT[,CACHED_IN]`) was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParsePriceError(String);

impl FromStr for ModelPrice {
    type Err = ParsePriceError;

    /// `IN,OUT` or `IN,OUT,CACHED_IN`, US dollars per million tokens; cache writes are
    /// priced as input.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let usage = "give the price as IN,OUT[,CACHED_IN] in US dollars per million tokens, e.g. 2.5,10,1.25";
        let numbers: Vec<&str> = text.split(',').map(str::trim).collect();
        if !(2..=3).contains(&numbers.len()) {
            return Err(ParsePriceError(format!("price {text:?}: {usage}")));
        }
        let mut values = Vec::with_capacity(3);
        for n in &numbers {
            match n.parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => values.push(v),
                _ => {
                    return Err(ParsePriceError(format!(
                        "price {text:?}: {n:?} is not a price (a number, 0 or more); {usage}"
                    )));
                }
            }
        }
        let price = Self::new(values[0], values[1]);
        Ok(match values.get(2) {
            Some(&cached) => price.with_cached_input(cached),
            None => price,
        })
    }
}

impl fmt::Display for ModelPrice {
    /// `$IN / $OUT per million tokens (cached $C, cache write $W)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "${} in / ${} out per million tokens (cached ${}, cache write ${})",
            self.input, self.output, self.cached_input, self.cache_write
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_parse_from_two_or_three_numbers_and_nothing_else() {
        assert_eq!("1,2".parse::<ModelPrice>().unwrap(), ModelPrice::new(1.0, 2.0));
        assert_eq!(
            " 1 , 2 , 0.5 ".parse::<ModelPrice>().unwrap(),
            ModelPrice::new(1.0, 2.0).with_cached_input(0.5)
        );
        for bad in ["", "1", "1,2,3,4", "a,b", "-1,2", "1,inf", "1,NaN", "1,,2", "１,2"] {
            let e = bad.parse::<ModelPrice>().unwrap_err().to_string();
            assert!(e.contains("IN,OUT[,CACHED_IN]") && !e.contains('\n'), "{bad:?}: {e}");
        }
    }

    #[test]
    fn only_dated_snapshots_and_latest_aliases_take_a_listed_price() {
        let sonnet = ModelPrice::builtin("claude-sonnet-4-5").unwrap();
        assert_eq!(ModelPrice::builtin("claude-sonnet-4-5-20250929"), Some(sonnet));
        assert_eq!(ModelPrice::builtin("CLAUDE-SONNET-4-5"), Some(sonnet));
        assert_eq!(ModelPrice::builtin("claude-3-5-haiku-latest"), ModelPrice::builtin("claude-3-5-haiku"));
        assert_eq!(ModelPrice::builtin("claude-opus-4-1-20250805"), ModelPrice::builtin("claude-opus-4-1"));
        assert_eq!(ModelPrice::builtin("claude-opus-4-20250514"), ModelPrice::builtin("claude-opus-4"));
        for unknown in ["gpt-4o-realtime-preview", "gpt-4o-2024", "gpt-4", "claude", "", "gpt-4o-é"] {
            assert_eq!(ModelPrice::builtin(unknown), None, "{unknown}");
        }
    }

    #[test]
    fn a_usage_whose_cache_counts_pass_its_input_is_priced_without_underflow() {
        let price = ModelPrice::new(1.0, 1.0).with_cached_input(0.0).with_cache_write(0.0);
        let odd =
            Usage { input_tokens: 10, cached_input_tokens: 8, cache_write_tokens: 8, ..Usage::default() };
        assert_eq!(price.cost(&odd), 0.0);
    }
}
