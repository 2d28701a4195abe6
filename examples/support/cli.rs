//! Command-line value parsers the examples share.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use mcp_subscriptions::{CapPolicy, Overflow, Teardown};

/// A count that must not be zero.
pub(crate) fn at_least_one(value: &str) -> Result<usize, String> {
    nonzero(value)
}

/// A number of seconds that must not be zero.
#[allow(dead_code, reason = "not every example that shares this has one")]
pub(crate) fn at_least_one_u64(value: &str) -> Result<u64, String> {
    nonzero(value)
}

fn nonzero<T: std::str::FromStr<Err = std::num::ParseIntError> + Default + PartialEq>(
    value: &str,
) -> Result<T, String> {
    match value.parse::<T>() {
        Ok(n) if n == T::default() => Err("must be at least 1".to_owned()),
        Ok(n) => Ok(n),
        Err(err) => Err(format!("{err}")),
    }
}

/// `Overflow`'s names as clap's possible values, parsed by its `FromStr`.
pub(crate) fn overflow_parser() -> impl TypedValueParser<Value = Overflow> {
    let names = [Overflow::DropOldest, Overflow::Disconnect].map(Overflow::as_str);
    PossibleValuesParser::new(names).try_map(|name| name.parse::<Overflow>())
}

/// `CapPolicy`'s choices by name: `refuse` or `replace-oldest`.
#[allow(dead_code, reason = "not every example that shares this has one")]
pub(crate) fn cap_policy_parser() -> impl TypedValueParser<Value = CapPolicy> {
    PossibleValuesParser::new(["refuse", "replace-oldest"]).map(|name| match name.as_str() {
        "replace-oldest" => CapPolicy::ReplaceOldest,
        _ => CapPolicy::Refuse,
    })
}

/// `Teardown`'s dialects by name: `complete` or `cancelled`.
#[allow(dead_code, reason = "not every example that shares this has one")]
pub(crate) fn teardown_parser() -> impl TypedValueParser<Value = Teardown> {
    PossibleValuesParser::new(["complete", "cancelled"]).map(|name| match name.as_str() {
        "cancelled" => Teardown::Cancelled,
        _ => Teardown::Complete,
    })
}

/// A rate with a burst, `PER_SECOND:BURST` (`2:40`: 40 at once, then 2 a
/// second), for an admission limit.
#[cfg(feature = "http")]
#[allow(dead_code, reason = "not every example that shares this has one")]
pub(crate) fn rate(value: &str) -> Result<mcp_subscriptions::http::Rate, String> {
    let (per_second, burst) = value
        .split_once(':')
        .ok_or_else(|| "expected PER_SECOND:BURST, such as 2:40".to_owned())?;
    let per_second: f64 = per_second.parse().map_err(|err| format!("{err}"))?;
    if !(per_second.is_finite() && per_second > 0.0) {
        return Err("the rate must be a positive number".to_owned());
    }
    let burst: u32 = nonzero(burst)?;
    Ok(mcp_subscriptions::http::Rate::new(per_second, burst))
}
