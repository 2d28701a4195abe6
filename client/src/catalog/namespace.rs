//! How one server's names and URIs are told apart from every other
//! server's in a merged view (a [`CatalogSet`](super::CatalogSet)'s, a
//! gateway's), and back.

/// The rule mapping one server's tool and prompt names and its resource
/// URIs and URI templates to the names and URIs of the merged view (what a
/// gateway's downstream clients see), and back. Each way back returns
/// `None` for what is not this server's, which is how a merged name or URI
/// finds its server (the one a call, a read or a listen is for): the first
/// whose rule claims it.
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

/// A shared namespace is one (a gateway's upstream and its catalog set
/// share theirs).
impl<N: Namespace + ?Sized> Namespace for std::sync::Arc<N> {
    fn name_down(&self, name: &str) -> String {
        (**self).name_down(name)
    }
    fn name_up(&self, name: &str) -> Option<String> {
        (**self).name_up(name)
    }
    fn uri_down(&self, uri: &str) -> String {
        (**self).uri_down(uri)
    }
    fn uri_up(&self, uri: &str) -> Option<String> {
        (**self).uri_up(uri)
    }
}

/// The default rule: the server's name before each name, joined by a
/// separator (`a/search` for tool `search` of server `a`), and before each
/// URI's scheme joined by `+` (`a+file:///notes.md`), which keeps a URI
/// (and a URI template) a URI, since a scheme may hold `+`; for that, the
/// name must be [valid](Self::is_valid_name).
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

    /// Whether `name` can prefix names and URIs: it starts with an ASCII
    /// letter and holds only letters, digits, `-` and `.`, so that
    /// `name+scheme:` is still a URI scheme and no name holds a separator.
    pub fn is_valid_name(name: &str) -> bool {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|first| first.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
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

    #[test]
    fn a_valid_name_starts_with_a_letter_and_keeps_to_a_scheme_s_characters() {
        for good in ["a", "files", "git-hub", "v1.2"] {
            assert!(Prefix::is_valid_name(good), "{good}");
        }
        for bad in ["", "1a", "a/b", "a_b", "a+b", "a b", "ä", "-a"] {
            assert!(!Prefix::is_valid_name(bad), "{bad}");
        }
    }
}
