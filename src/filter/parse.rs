//! Parsing and validating the params of a `subscriptions/listen` request.
//!
//! Validation is strict where the protocol is (the core fields) and lenient
//! where it must be (extension fields are kept verbatim, whatever they hold).
//! Every refusal is a [`ListenParamsError`], which becomes JSON-RPC `-32602`.

use indexmap::IndexSet;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::field;
use super::notifications::Filter;
use crate::error::ListenParamsError;
use crate::event::ListKind;

/// How many distinct resource URIs one listen request may ask for unless
/// configured otherwise. The protocol sets no limit; this is common practice.
pub const DEFAULT_MAX_URIS: usize = 1_000;

impl Filter {
    /// Parses the `params` of a `subscriptions/listen` request, refusing more
    /// than `max_uris` distinct resource URIs.
    ///
    /// # Errors
    ///
    /// A [`ListenParamsError`] naming the problem when `params` is missing or
    /// `params.notifications` is malformed (see
    /// [`from_notifications`](Self::from_notifications)).
    ///
    /// ```
    /// use mcp_subscriptions::Filter;
    /// use mcp_subscriptions::error::ListenParamsError;
    /// use serde_json::json;
    ///
    /// let params = json!({"notifications": {"toolsListChanged": true}});
    /// let filter = Filter::from_listen_params(Some(&params), 1_000).unwrap();
    /// assert!(filter.tools_list_changed());
    ///
    /// let err = Filter::from_listen_params(Some(&json!({})), 1_000).unwrap_err();
    /// assert_eq!(err, ListenParamsError::MissingNotifications);
    /// assert_eq!(err.to_error_data().code.0, -32602);
    /// ```
    pub fn from_listen_params(
        params: Option<&Value>,
        max_uris: usize,
    ) -> Result<Self, ListenParamsError> {
        let params = params
            .and_then(Value::as_object)
            .ok_or(ListenParamsError::MissingParams)?;
        let notifications = params
            .get("notifications")
            .ok_or(ListenParamsError::MissingNotifications)?;
        Self::from_notifications(notifications, max_uris)
    }

    /// Parses a `notifications` object.
    ///
    /// Kind flags must be booleans; `resourceSubscriptions` must be an array
    /// of strings, of which duplicates collapse to one; any other field is an
    /// extension field and is kept verbatim.
    ///
    /// # Errors
    ///
    /// A [`ListenParamsError`] when `notifications` is not an object, a flag
    /// is not a boolean, `resourceSubscriptions` is not an array of strings,
    /// or it names more than `max_uris` distinct URIs.
    pub fn from_notifications(
        notifications: &Value,
        max_uris: usize,
    ) -> Result<Self, ListenParamsError> {
        let object = notifications
            .as_object()
            .ok_or(ListenParamsError::NotificationsNotObject)?;
        let mut filter = Filter::new();
        let mut extensions = Map::new();
        for (name, value) in object {
            if let Some(list) = ListKind::ALL.into_iter().find(|l| l.filter_field() == name) {
                filter.lists[list.index()] = flag(value, list.filter_field())?;
                continue;
            }
            match name.as_str() {
                field::RESOURCE_SUBSCRIPTIONS => {
                    filter.resource_subscriptions = uris(value, max_uris)?;
                }
                _ => {
                    extensions.insert(name.clone(), value.clone());
                }
            }
        }
        filter.extensions = extensions;
        Ok(filter)
    }
}

fn flag(value: &Value, field: &'static str) -> Result<bool, ListenParamsError> {
    value
        .as_bool()
        .ok_or(ListenParamsError::FlagNotBoolean { field })
}

/// Reads distinct URIs in request order, refusing as soon as one more than
/// `max_uris` is seen, so an oversized request costs no more than a
/// full one.
fn uris(value: &Value, max_uris: usize) -> Result<IndexSet<String>, ListenParamsError> {
    let array = value.as_array().ok_or(ListenParamsError::UrisNotArray)?;
    let mut uris = IndexSet::new();
    for (index, uri) in array.iter().enumerate() {
        let uri = uri
            .as_str()
            .ok_or(ListenParamsError::UriNotString { index })?;
        if !uris.contains(uri) {
            if uris.len() == max_uris {
                return Err(ListenParamsError::TooManyUris {
                    count: array.len(),
                    limit: max_uris,
                });
            }
            uris.insert(uri.to_owned());
        }
    }
    Ok(uris)
}

impl<'de> Deserialize<'de> for Filter {
    /// Parses a `notifications` object with the same rules as
    /// [`Filter::from_notifications`], but without a URI limit: the limit is
    /// the server's to enforce when a listener opens.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_notifications(&value, usize::MAX).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(notifications: Value) -> Result<Filter, ListenParamsError> {
        Filter::from_listen_params(Some(&json!({ "notifications": notifications })), 3)
    }

    #[test]
    fn parses_every_core_field_and_keeps_extensions() {
        let filter = parse(json!({
            "toolsListChanged": true,
            "promptsListChanged": false,
            "resourcesListChanged": true,
            "resourceSubscriptions": ["file:///a", "file:///b", "file:///a"],
            "taskIds": ["t1"],
            "x-future": {"anything": null},
        }))
        .unwrap();
        assert!(filter.tools_list_changed());
        assert!(!filter.prompts_list_changed());
        assert!(filter.resources_list_changed());
        assert!(
            filter
                .resource_subscriptions()
                .eq(["file:///a", "file:///b"])
        );
        assert_eq!(filter.extensions()["taskIds"], json!(["t1"]));
        assert_eq!(filter.extensions()["x-future"], json!({"anything": null}));
    }

    #[test]
    fn empty_notifications_is_valid_and_empty() {
        assert!(parse(json!({})).unwrap().is_empty());
    }

    #[test]
    fn refuses_malformed_params_naming_the_problem() {
        let cases = [
            (None, ListenParamsError::MissingParams),
            (Some(json!([])), ListenParamsError::MissingParams),
            (Some(json!({})), ListenParamsError::MissingNotifications),
            (
                Some(json!({"notifications": true})),
                ListenParamsError::NotificationsNotObject,
            ),
            (
                Some(json!({"notifications": {"toolsListChanged": "yes"}})),
                ListenParamsError::FlagNotBoolean {
                    field: "toolsListChanged",
                },
            ),
            (
                Some(json!({"notifications": {"resourceSubscriptions": "file:///a"}})),
                ListenParamsError::UrisNotArray,
            ),
            (
                Some(json!({"notifications": {"resourceSubscriptions": ["file:///a", 3]}})),
                ListenParamsError::UriNotString { index: 1 },
            ),
        ];
        for (params, expected) in cases {
            let err = Filter::from_listen_params(params.as_ref(), 10).unwrap_err();
            assert_eq!(err, expected, "params {params:?}");
            assert_eq!(err.to_error_data().code.0, -32602);
        }
        let err = Filter::from_listen_params(
            Some(&json!({"notifications": {"promptsListChanged": null}})),
            10,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "params.notifications.promptsListChanged must be a boolean"
        );
    }

    #[test]
    fn uri_limit_counts_distinct_uris() {
        let ok = parse(json!({"resourceSubscriptions": ["a", "b", "c", "a", "b"]}));
        assert_eq!(ok.unwrap().resource_subscriptions().len(), 3);
        let err = parse(json!({"resourceSubscriptions": ["a", "b", "c", "d"]})).unwrap_err();
        assert_eq!(err, ListenParamsError::TooManyUris { count: 4, limit: 3 });
    }

    #[test]
    fn default_limit_refuses_the_thousand_and_first_uri() {
        let uris: Vec<String> = (0..=DEFAULT_MAX_URIS)
            .map(|i| format!("file:///{i}"))
            .collect();
        let params = json!({"notifications": {"resourceSubscriptions": uris}});
        let err = Filter::from_listen_params(Some(&params), DEFAULT_MAX_URIS).unwrap_err();
        assert!(matches!(
            err,
            ListenParamsError::TooManyUris { count: 1001, .. }
        ));
    }
}
