//! Command-line value parsers the examples share.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use mcp_subscriptions::Overflow;

/// A count that must not be zero.
pub(crate) fn at_least_one(value: &str) -> Result<usize, String> {
    match value.parse() {
        Ok(0) => Err("must be at least 1".to_owned()),
        Ok(n) => Ok(n),
        Err(err) => Err(format!("{err}")),
    }
}

/// `Overflow`'s names as clap's possible values, parsed by its `FromStr`.
pub(crate) fn overflow_parser() -> impl TypedValueParser<Value = Overflow> {
    let names = [Overflow::DropOldest, Overflow::Disconnect].map(Overflow::as_str);
    PossibleValuesParser::new(names).try_map(|name| name.parse::<Overflow>())
}
