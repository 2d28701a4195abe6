//! Who an event is for, and who a stream is.
//!
//! A stream belongs to audiences through its membership: the [`Principal`]
//! that opened it (as an authentication layer established it) and the
//! [`Label`]s its authorizer gave it (a tenant, a role; see
//! [`Grant`](crate::serve::Grant)). An event's [`Audience`] is everyone,
//! the default, or a set of principals, labels and listeners: the event
//! reaches a listener whose filter matches it and that the set names by
//! any of the three. A set that names no one reaches no one.
//!
//! The hub routes an event for an audience through an index per principal
//! and per label, never by looking at listeners outside it, and listeners
//! of different memberships never share a lane, so no listener ever holds
//! an event its membership is not in the audience of.

use std::fmt;
use std::sync::Arc;

/// Who is asking, as an authentication layer in front of the transport
/// established it: a user, a tenant, a token's subject.
///
/// The crate never authenticates anyone. An HTTP layer (a tower middleware,
/// as rmcp's auth examples use) inserts a `Principal` into the request's
/// extensions; the HTTP and channel transports copy it into
/// [`OpenContext::principal`](crate::OpenContext::principal); a stdio
/// transport is given one for its whole connection. Authorization hooks,
/// per-principal limits, audiences and revocation key on it.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Principal(Arc<str>);

/// A name an authorizer gives a stream besides its principal, so that
/// events can be addressed to everyone who shares it: a tenant
/// (`tenant:acme`), a role (`role:admin`). The crate gives labels no
/// meaning; the authorizer names them and the application addresses them.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Label(Arc<str>);

macro_rules! name {
    ($name:ident) => {
        impl $name {
            #[doc = concat!("The ", stringify!($name), " named `name`.")]
            pub fn new(name: impl Into<String>) -> Self {
                Self(Arc::from(name.into()))
            }

            /// Its name.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl From<&str> for $name {
            fn from(name: &str) -> Self {
                Self(Arc::from(name))
            }
        }

        impl From<String> for $name {
            fn from(name: String) -> Self {
                Self::new(name)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_tuple(stringify!($name)).field(&&*self.0).finish()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

name!(Principal);
name!(Label);

/// What a stream is a member of: its principal, if any, and its labels,
/// sorted and each once (so that two streams alike compare equal, and share
/// a lane). One pointer wide, and none for a stream of no one, since every
/// listener's entry holds one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct Membership(Option<Arc<Names>>);

#[derive(Debug, PartialEq, Eq, Hash)]
struct Names {
    principal: Option<Principal>,
    labels: Box<[Label]>,
}

/// One name routing keeps an index for: a principal or a label.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Member {
    Principal(Principal),
    Label(Label),
}

impl Membership {
    pub(crate) fn new(principal: Option<Principal>, labels: &[Label]) -> Self {
        if principal.is_none() && labels.is_empty() {
            return Self(None);
        }
        let mut labels = labels.to_vec();
        labels.sort_unstable();
        labels.dedup();
        Self(Some(Arc::new(Names {
            principal,
            labels: labels.into_boxed_slice(),
        })))
    }

    /// Its principal, if any.
    pub(crate) fn principal(&self) -> Option<&Principal> {
        self.0.as_ref()?.principal.as_ref()
    }

    /// Its labels, sorted.
    pub(crate) fn labels(&self) -> &[Label] {
        self.0.as_deref().map_or(&[], |names| &names.labels)
    }

    /// Its principal and labels, as the names routing indexes by.
    pub(crate) fn members(&self) -> impl Iterator<Item = Member> + '_ {
        let principal = self.principal().cloned().map(Member::Principal);
        principal
            .into_iter()
            .chain(self.labels().iter().cloned().map(Member::Label))
    }
}

/// Who an event is for: everyone (the default), or the listeners a set of
/// principals, labels and listener ids names.
///
/// ```
/// use mcp_subscriptions::audience::Principal;
/// use mcp_subscriptions::{Audience, Event, Filter, Hub, OpenContext};
///
/// let hub = Hub::new();
/// let tools = Filter::new().with_tools_list_changed();
/// let alice = OpenContext::default().with_principal(Principal::new("alice"));
/// let bob = OpenContext::default().with_principal(Principal::new("bob"));
/// let (_a, _b) = (hub.listen_with(&tools, &alice).unwrap(), hub.listen_with(&tools, &bob).unwrap());
///
/// let for_alice = Event::tools_list_changed().with_audience(Audience::principal("alice"));
/// assert_eq!(hub.publish(for_alice).matched, 1);
/// assert_eq!(hub.notify_tools_list_changed().matched, 2, "an event for everyone");
/// assert_eq!(hub.publish(Event::tools_list_changed().with_audience(Audience::nobody())).matched, 0);
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Audience(Option<Arc<Members>>);

/// The names of an audience that is not everyone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Members {
    pub(crate) principals: Vec<Principal>,
    pub(crate) labels: Vec<Label>,
    /// Listener ids (see `Audience::listener`): a hub's own, so never
    /// carried to another replica.
    pub(crate) listeners: Vec<u64>,
}

impl Members {
    /// How many names it holds.
    pub(crate) fn len(&self) -> usize {
        self.principals.len() + self.labels.len() + self.listeners.len()
    }
}

impl Audience {
    /// Everyone whose filter matches: the audience of every event unless it
    /// says otherwise.
    pub fn everyone() -> Self {
        Self(None)
    }

    /// No one: an event for it is published and matches no listener.
    pub fn nobody() -> Self {
        Self(Some(Arc::default()))
    }

    /// Every stream of `principal`.
    pub fn principal(principal: impl Into<Principal>) -> Self {
        Self::nobody().with_principal(principal)
    }

    /// Every stream labelled `label`.
    pub fn label(label: impl Into<Label>) -> Self {
        Self::nobody().with_label(label)
    }

    /// This audience and every stream of `principal`; from everyone, just
    /// those streams.
    pub fn with_principal(mut self, principal: impl Into<Principal>) -> Self {
        self.members_mut().principals.push(principal.into());
        self
    }

    /// This audience and every stream labelled `label`; from everyone, just
    /// those streams.
    pub fn with_label(mut self, label: impl Into<Label>) -> Self {
        self.members_mut().labels.push(label.into());
        self
    }

    /// Whether it is everyone.
    pub fn is_everyone(&self) -> bool {
        self.0.is_none()
    }

    /// The principals it names (none for everyone).
    pub fn principals(&self) -> &[Principal] {
        self.0.as_deref().map_or(&[], |m| &m.principals)
    }

    /// The labels it names (none for everyone).
    pub fn labels(&self) -> &[Label] {
        self.0.as_deref().map_or(&[], |m| &m.labels)
    }

    /// Its names, unless it is everyone.
    pub(crate) fn members(&self) -> Option<&Members> {
        self.0.as_deref()
    }

    pub(crate) fn members_mut(&mut self) -> &mut Members {
        Arc::make_mut(self.0.get_or_insert_with(Arc::default))
    }

    /// Whether a listener `listener` of `membership` is in it: the model
    /// routing is checked against.
    #[cfg(test)]
    pub(crate) fn includes(&self, membership: &Membership, listener: u64) -> bool {
        let Some(members) = self.members() else {
            return true;
        };
        membership
            .principal()
            .is_some_and(|p| members.principals.contains(p))
            || membership
                .labels()
                .iter()
                .any(|l| members.labels.contains(l))
            || members.listeners.contains(&listener)
    }

    /// The same names without listener ids: what another replica can be
    /// told (its listeners are not this hub's).
    pub(crate) fn without_listeners(&self) -> Self {
        match self.members() {
            Some(members) if !members.listeners.is_empty() => Self(Some(Arc::new(Members {
                listeners: Vec::new(),
                ..members.clone()
            }))),
            _ => self.clone(),
        }
    }
}

impl fmt::Debug for Audience {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.members() {
            None => f.write_str("Audience::everyone"),
            Some(members) => f
                .debug_struct("Audience")
                .field("principals", &members.principals)
                .field("labels", &members.labels)
                .field("listeners", &members.listeners)
                .finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_audience_includes_a_listener_by_principal_label_or_id() {
        let alice = Membership::new(Some("alice".into()), &["tenant:a".into()]);
        let anonymous = Membership::default();
        assert!(Audience::everyone().includes(&anonymous, 1));
        assert!(!Audience::nobody().includes(&alice, 1));
        assert!(Audience::principal("alice").includes(&alice, 1));
        assert!(!Audience::principal("bob").includes(&alice, 1));
        assert!(Audience::label("tenant:a").includes(&alice, 1));
        assert!(!Audience::label("tenant:a").includes(&anonymous, 1));
        let mut by_id = Audience::nobody();
        by_id.members_mut().listeners.push(7);
        assert!(by_id.includes(&anonymous, 7) && !by_id.includes(&anonymous, 8));
        assert_eq!(by_id.without_listeners(), Audience::nobody());
    }

    #[test]
    fn memberships_alike_are_equal_whatever_the_order_of_their_labels() {
        let one = Membership::new(None, &["b".into(), "a".into(), "a".into()]);
        let other = Membership::new(None, &["a".into(), "b".into()]);
        assert_eq!(one, other);
        assert_eq!(one.members().count(), 2);
    }
}
