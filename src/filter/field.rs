//! The wire name of the filter's one core field that is not a list's
//! (those are [`ListKind::filter_field`](crate::ListKind::filter_field)).

pub(crate) const RESOURCE_SUBSCRIPTIONS: &str = "resourceSubscriptions";
