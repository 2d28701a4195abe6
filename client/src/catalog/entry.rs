//! The four lists a catalog keeps, as rmcp's model types, and how each is
//! fetched: its request, paged through `nextCursor`.

use std::collections::HashSet;
use std::time::Duration;

use rmcp::model::{
    CacheScope, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool,
};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use mcp_subscriptions::ListKind;

use crate::error::{ProtocolError, SubscribeError};
use crate::options::SubscribeOptions;
use crate::request::Request;

/// One of the lists a catalog keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum CatalogKind {
    /// `tools/list`, refetched on `notifications/tools/list_changed`.
    Tools,
    /// `prompts/list`, refetched on `notifications/prompts/list_changed`.
    Prompts,
    /// `resources/list`, refetched on `notifications/resources/list_changed`.
    Resources,
    /// `resources/templates/list`: the protocol has no notification of its
    /// own for templates, so `notifications/resources/list_changed`
    /// refetches them too.
    Templates,
}

impl CatalogKind {
    /// Every kind, in the order the protocol names them.
    pub const ALL: [Self; 4] = [Self::Tools, Self::Prompts, Self::Resources, Self::Templates];

    /// The request that lists it.
    pub fn method(self) -> &'static str {
        match self {
            Self::Tools => "tools/list",
            Self::Prompts => "prompts/list",
            Self::Resources => "resources/list",
            Self::Templates => "resources/templates/list",
        }
    }

    /// The list-changed notification that tells of its changes: templates
    /// have none of their own, so the resources' tells of theirs.
    pub fn list_kind(self) -> ListKind {
        match self {
            Self::Tools => ListKind::Tools,
            Self::Prompts => ListKind::Prompts,
            Self::Resources | Self::Templates => ListKind::Resources,
        }
    }
}

/// Something a catalog tells apart by a key: a tool or prompt by its name,
/// a resource by its URI, a template by its URI template.
pub trait Keyed {
    /// The key a diff matches old and new entries by.
    fn key(&self) -> &str;
}

impl Keyed for Tool {
    fn key(&self) -> &str {
        &self.name
    }
}

impl Keyed for Prompt {
    fn key(&self) -> &str {
        &self.name
    }
}

impl Keyed for Resource {
    fn key(&self) -> &str {
        &self.uri
    }
}

impl Keyed for ResourceTemplate {
    fn key(&self) -> &str {
        &self.uri_template
    }
}

/// A watched resource's contents, as `resources/read` answered.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct Contents {
    /// The resource.
    pub uri: String,
    /// What reading it gave.
    pub result: ReadResourceResult,
}

impl Keyed for Contents {
    fn key(&self) -> &str {
        &self.uri
    }
}

/// One list as fetched, every page of it, with the server's cache hints
/// (SEP-2549) from its first page.
#[derive(Debug)]
pub(super) struct Listed<T> {
    pub(super) items: Vec<T>,
    pub(super) ttl: Option<Duration>,
    pub(super) cache_scope: Option<CacheScope>,
}

/// An entry of one of the four lists.
pub(super) trait Entry: Keyed + Clone + PartialEq + Send + Sync + Sized + 'static {
    /// Its list.
    const KIND: CatalogKind;
    /// One page of its list result, as rmcp models it.
    type Page: DeserializeOwned;
    /// A page's entries, cursor and cache hints.
    fn split(page: Self::Page) -> Page<Self>;
}

pub(super) struct Page<T> {
    items: Vec<T>,
    next_cursor: Option<String>,
    ttl_ms: Option<u64>,
    cache_scope: Option<CacheScope>,
}

macro_rules! entry {
    ($entry:ty, $kind:ident, $page:ty, $items:ident) => {
        impl Entry for $entry {
            const KIND: CatalogKind = CatalogKind::$kind;
            type Page = $page;

            fn split(page: $page) -> Page<Self> {
                Page {
                    items: page.$items,
                    next_cursor: page.next_cursor,
                    ttl_ms: page.ttl_ms,
                    cache_scope: page.cache_scope,
                }
            }
        }
    };
}

entry!(Tool, Tools, ListToolsResult, tools);
entry!(Prompt, Prompts, ListPromptsResult, prompts);
entry!(Resource, Resources, ListResourcesResult, resources);
entry!(
    ResourceTemplate,
    Templates,
    ListResourceTemplatesResult,
    resource_templates
);

/// Fetches a whole list, page after page, at most `max_pages` of them; a
/// cursor the server gave before is a loop.
pub(super) async fn fetch_list<T: Entry, R: Request>(
    server: &R,
    options: &SubscribeOptions,
    max_pages: usize,
) -> Result<Listed<T>, SubscribeError> {
    let mut listed = Listed {
        items: Vec::new(),
        ttl: None,
        cache_scope: None,
    };
    let mut cursor: Option<String> = None;
    let mut seen = HashSet::new();
    for page in 0..max_pages {
        let mut params = Map::new();
        if let Some(cursor) = &cursor {
            params.insert("cursor".into(), Value::String(cursor.clone()));
        }
        let result = server.request(T::KIND.method(), params, options).await?;
        let Page {
            items,
            next_cursor,
            ttl_ms,
            cache_scope,
        } = T::split(decode(T::KIND.method(), result)?);
        if page == 0 {
            listed.ttl = ttl_ms.map(Duration::from_millis);
            listed.cache_scope = cache_scope;
        }
        listed.items.extend(items);
        match next_cursor {
            // An empty cursor is no cursor (some servers send one).
            Some(next) if !next.is_empty() => {
                if !seen.insert(next.clone()) {
                    return Err(invalid(
                        T::KIND.method(),
                        &format!("the cursor {next:?} again: its pages loop"),
                    ));
                }
                cursor = Some(next);
            }
            _ => return Ok(listed),
        }
    }
    Err(invalid(
        T::KIND.method(),
        &format!("more than {max_pages} pages"),
    ))
}

/// Reads one watched resource.
pub(super) async fn fetch_contents<R: Request>(
    server: &R,
    uri: &str,
    options: &SubscribeOptions,
) -> Result<Contents, SubscribeError> {
    let mut params = Map::new();
    params.insert("uri".into(), Value::String(uri.to_owned()));
    let result = server.request("resources/read", params, options).await?;
    Ok(Contents {
        uri: uri.to_owned(),
        result: decode("resources/read", result)?,
    })
}

/// A result as rmcp's model type, or a protocol error naming the request.
pub(super) fn decode<T: DeserializeOwned>(
    method: &str,
    result: Value,
) -> Result<T, SubscribeError> {
    serde_json::from_value(result).map_err(|err| invalid(method, &err.to_string()))
}

fn invalid(method: &str, why: &str) -> SubscribeError {
    ProtocolError::InvalidMessage(format!("{method}: {why}")).into()
}
