//! How one upstream's names and URIs are told apart from every other
//! upstream's downstream, and back.

/// The rule mapping one upstream's tool and prompt names and its resource
/// URIs and URI templates to the names and URIs downstream clients see,
/// and back. Each way back returns `None` for what is not this
/// upstream's, which is how the gateway finds the upstream a call, a read
/// or a listen is for: the first whose rule claims it.
///
/// [`Prefix`] is the default. Implement it for any other rule (a table
/// of renames, URIs kept as they are for a single upstream); the two
/// directions must invert each other.
pub trait Namespace: Send + Sync + 'static {
    /// The downstream name of an upstream tool or prompt.
    fn name_down(&self, name: &str) -> String;
    /// The upstream name of a downstream tool or prompt, if it is this
    /// upstream's.
    fn name_up(&self, name: &str) -> Option<String>;
    /// The downstream URI (or URI template) of an upstream one.
    fn uri_down(&self, uri: &str) -> String;
    /// The upstream URI of a downstream one, if it is this upstream's.
    fn uri_up(&self, uri: &str) -> Option<String>;
}

/// The default rule: the upstream's name before each name, joined by a
/// separator (`a/search` for tool `search` of upstream `a`, the naming
/// [`Merged`](mcp_subscriptions_client::catalog::Merged) uses), and before each URI's scheme
/// joined by `+` (`a+file:///notes.md`), which keeps a URI (and a URI
/// template) a URI, since a scheme may hold `+`.
///
/// Some model APIs refuse `/` in tool names; [`with_separator`](Self::with_separator)
/// picks another (`__`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prefix {
    upstream: String,
    separator: String,
}

impl Prefix {
    /// Names prefixed with `upstream` and `/`, URIs with `upstream` and
    /// `+`.
    pub fn new(upstream: impl Into<String>) -> Self {
        Self {
            upstream: upstream.into(),
            separator: "/".to_owned(),
        }
    }

    /// Joins names to the prefix with `separator` instead of `/`.
    pub fn with_separator(mut self, separator: impl Into<String>) -> Self {
        self.separator = separator.into();
        self
    }
}

impl Namespace for Prefix {
    fn name_down(&self, name: &str) -> String {
        format!("{}{}{name}", self.upstream, self.separator)
    }

    fn name_up(&self, name: &str) -> Option<String> {
        let rest = name.strip_prefix(self.upstream.as_str())?;
        rest.strip_prefix(self.separator.as_str())
            .map(str::to_owned)
    }

    fn uri_down(&self, uri: &str) -> String {
        format!("{}+{uri}", self.upstream)
    }

    fn uri_up(&self, uri: &str) -> Option<String> {
        let rest = uri.strip_prefix(self.upstream.as_str())?;
        rest.strip_prefix('+').map(str::to_owned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_maps_down_and_back_and_claims_only_its_own() {
        let a = Prefix::new("a");
        assert_eq!(a.name_down("search"), "a/search");
        assert_eq!(a.name_up("a/search").as_deref(), Some("search"));
        assert_eq!(a.name_up("ab/search"), None);
        assert_eq!(a.name_up("b/search"), None);
        assert_eq!(a.uri_down("file:///x.md"), "a+file:///x.md");
        assert_eq!(a.uri_up("a+file:///x.md").as_deref(), Some("file:///x.md"));
        assert_eq!(a.uri_up("ab+file:///x.md"), None);
        assert_eq!(a.uri_up("file:///x.md"), None);
        let a = Prefix::new("a").with_separator("__");
        assert_eq!(a.name_down("search"), "a__search");
        assert_eq!(a.name_up("a__search").as_deref(), Some("search"));
        assert_eq!(a.name_up("a/search"), None);
    }
}
