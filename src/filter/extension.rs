//! An extension declared once: the filter fields it owns and how they are
//! validated, the notifications it sends, and whether a client must declare
//! it before asking for them.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::error::ListenParamsError;

type Validator = Arc<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

/// One filter field an extension owns, with its validator.
#[derive(Clone)]
struct Field {
    name: String,
    validate: Validator,
}

/// An MCP extension a server serves, declared once by its identifier.
///
/// A declared extension decides three things about listen requests:
///
/// - its filter fields are granted (fields no declared extension owns are
///   left out of the acknowledgement), after its validator accepts them
///   (`-32602` otherwise);
/// - a client that names one of its fields without declaring the extension
///   in its capabilities is refused with `-32021`, when the extension
///   [requires it](Self::requiring_client_declaration);
/// - only the notification methods it lists travel on listen streams under
///   its fields.
///
/// The server advertises it in its capabilities' `extensions` (see
/// [`Capabilities::advertise`](crate::Capabilities::advertise)) only when it is installed.
///
/// ```
/// use mcp_subscriptions::{Capabilities, Extension, Filter};
/// use serde_json::json;
///
/// let tickets = Extension::new("vendor/tickets")
///     .with_id_list("ticketIds", 100)
///     .with_method("notifications/tickets")
///     .requiring_client_declaration();
/// let advertised = Capabilities::default().with_extension(tickets);
/// let requested = Filter::new()
///     .with_extension("ticketIds", json!(["T-1"]))
///     .with_extension("unknownField", json!(true));
/// assert_eq!(
///     requested.narrow(&advertised),
///     Filter::new().with_extension("ticketIds", json!(["T-1"])),
/// );
/// ```
#[derive(Clone)]
pub struct Extension {
    id: String,
    fields: Vec<Field>,
    methods: Vec<String>,
    client_must_declare: bool,
}

impl Extension {
    /// The extension `id` (for example `io.modelcontextprotocol/tasks`),
    /// owning no field and sending nothing yet.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            fields: Vec::new(),
            methods: Vec::new(),
            client_must_declare: false,
        }
    }

    /// Owns the filter field `name`, accepted when `validate` returns `Ok`;
    /// an `Err` says what is wrong (it follows the field's name in the
    /// `-32602` message: "must be …").
    pub fn with_field(
        mut self,
        name: impl Into<String>,
        validate: impl Fn(&Value) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.fields.push(Field {
            name: name.into(),
            validate: Arc::new(validate),
        });
        self
    }

    /// Owns the filter field `name`, holding an array of at most `max` string
    /// ids (each one routes the events of that id) or `true` (every id).
    pub fn with_id_list(self, name: impl Into<String>, max: usize) -> Self {
        self.with_field(name, move |value| match value {
            Value::Bool(true) => Ok(()),
            Value::Array(ids) if ids.len() > max => {
                Err(format!("must list at most {max} ids, not {}", ids.len()))
            }
            Value::Array(ids) if ids.iter().all(Value::is_string) => Ok(()),
            _ => Err("must be an array of string ids or true".to_owned()),
        })
    }

    /// May send notifications of `method` on listen streams.
    pub fn with_method(mut self, method: impl Into<String>) -> Self {
        self.methods.push(method.into());
        self
    }

    /// Refuses (`-32021`) a request naming one of its fields from a client
    /// that did not declare the extension in its capabilities.
    pub fn requiring_client_declaration(mut self) -> Self {
        self.client_must_declare = true;
        self
    }

    /// Its identifier.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The filter fields it owns.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|field| field.name.as_str())
    }

    /// The notification methods it may send.
    pub fn methods(&self) -> impl Iterator<Item = &str> {
        self.methods.iter().map(String::as_str)
    }

    /// Whether a client must declare it before naming its fields.
    pub fn requires_client_declaration(&self) -> bool {
        self.client_must_declare
    }

    /// Whether it owns the filter field `name`.
    pub fn owns(&self, name: &str) -> bool {
        self.fields.iter().any(|field| field.name == name)
    }

    /// Whether it may send `method`.
    pub fn sends(&self, method: &str) -> bool {
        self.methods.iter().any(|m| m == method)
    }

    /// Checks the value of its field `name`.
    pub(crate) fn validate(&self, name: &str, value: &Value) -> Result<(), ListenParamsError> {
        let Some(field) = self.fields.iter().find(|field| field.name == name) else {
            return Ok(());
        };
        (field.validate)(value).map_err(|reason| ListenParamsError::InvalidExtensionField {
            field: name.to_owned(),
            reason,
        })
    }
}

impl fmt::Debug for Extension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extension")
            .field("id", &self.id)
            .field("fields", &self.fields().collect::<Vec<_>>())
            .field("methods", &self.methods)
            .field("client_must_declare", &self.client_must_declare)
            .finish()
    }
}

/// What a stats endpoint echoes: the identifier, the fields, the methods
/// and the requirement (validators have no wire form).
impl serde::Serialize for Extension {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = serializer.serialize_struct("Extension", 4)?;
        out.serialize_field("id", &self.id)?;
        out.serialize_field("fields", &self.fields().collect::<Vec<_>>())?;
        out.serialize_field("methods", &self.methods)?;
        out.serialize_field("clientMustDeclare", &self.client_must_declare)?;
        out.end()
    }
}

/// Two declarations are equal when they declare the same fields, methods
/// and requirement (validators are not compared).
impl PartialEq for Extension {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.fields().eq(other.fields())
            && self.methods == other.methods
            && self.client_must_declare == other.client_must_declare
    }
}

impl Eq for Extension {}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_id_list_takes_strings_up_to_its_limit_or_true() {
        let ext = Extension::new("x").with_id_list("ids", 2);
        assert!(ext.validate("ids", &json!(["a", "b"])).is_ok());
        assert!(ext.validate("ids", &json!(true)).is_ok());
        let too_many = ext.validate("ids", &json!(["a", "b", "c"])).unwrap_err();
        assert_eq!(
            too_many.to_string(),
            "params.notifications.ids must list at most 2 ids, not 3"
        );
        for bad in [json!("a"), json!([1]), json!(false), json!({"a": 1})] {
            let err = ext.validate("ids", &bad).unwrap_err();
            assert_eq!(err.to_error_data().code.0, -32602, "{bad}");
        }
    }
}
