//! Routing by audience: the index over every target, which an event for
//! everyone walks, and one index per member (a principal, a label) over the
//! targets of that member's listeners, which an event for an audience walks
//! instead. So an event for one tenant costs what the same event would among
//! that tenant's listeners alone, however many other tenants there are.
//!
//! A target is in the index of each member its listeners are (a lane's
//! members all share one membership, so a lane is one target in each). An
//! audience naming several members may reach a target through more than
//! one of their indexes; it is pushed once.

use std::collections::HashMap;

use super::index::{Index, Target};
use crate::audience::{Member, Members, Membership};
use crate::event::EventKind;
use crate::filter::Filter;

#[derive(Debug, Default)]
pub(crate) struct Routes {
    /// Every target: what an event for everyone reaches.
    pub(crate) everyone: Index,
    /// Each member's targets, while it has any.
    members: HashMap<Member, Index>,
}

impl Routes {
    /// Routes what `filter` matches to `target`, whose listeners are of
    /// `membership`.
    pub(crate) fn insert(&mut self, target: &Target, filter: &Filter, membership: &Membership) {
        self.everyone.insert(target, filter);
        for member in membership.members() {
            self.members
                .entry(member)
                .or_default()
                .insert(target, filter);
        }
    }

    /// Undoes [`insert`](Self::insert); a no-op for a target not routed.
    pub(crate) fn remove(&mut self, target: &Target, filter: &Filter, membership: &Membership) {
        self.everyone.remove(target, filter);
        for member in membership.members() {
            if let Some(index) = self.members.get_mut(&member) {
                index.remove(target, filter);
                if index.is_empty() {
                    self.members.remove(&member);
                }
            }
        }
    }

    /// The one index an audience of a single principal or label consults
    /// (`Some(None)` when that member has none), so that a publish walks
    /// its slices as it walks everyone's; `None` for any other audience.
    pub(crate) fn sole(&self, members: &Members) -> Option<Option<&Index>> {
        let member = match (&*members.principals, &*members.labels, &*members.listeners) {
            ([principal], [], []) => Member::Principal(principal.clone()),
            ([], [label], []) => Member::Label(label.clone()),
            _ => return None,
        };
        Some(self.members.get(&member))
    }

    /// Appends to `out` each target of `members`' principals and labels
    /// that `kind` reaches, each once. (Listeners named by id are the
    /// registry's to add: they are found by id, not by index.)
    pub(crate) fn for_members(&self, kind: &EventKind, members: &Members, out: &mut Vec<Target>) {
        let principals = members.principals.iter().cloned().map(Member::Principal);
        let labels = members.labels.iter().cloned().map(Member::Label);
        let mut sources = 0;
        for member in principals.chain(labels) {
            if let Some(index) = self.members.get(&member) {
                out.extend(index.matches(kind).into_iter().flatten().cloned());
                sources += 1;
            }
        }
        if sources > 1 {
            // A listener with a principal and a label the audience both
            // names is in both indexes: deliver to it once.
            out.sort_unstable_by_key(|target| target.id());
            out.dedup_by_key(|target| target.id());
        }
    }
}

#[cfg(all(test, not(mcp_subscriptions_loom)))]
mod tests {
    use super::*;
    use crate::audience::Audience;
    use crate::event::ListKind;
    use crate::hub::id::ListenerId;
    use crate::hub::own_queue::OwnQueue;
    use crate::queue::Settings;
    use crate::sync::Arc;

    fn target(id: u64) -> Target {
        let settings = Settings::new(1);
        Target::Own(Arc::new(OwnQueue::new(ListenerId(id), settings, None)))
    }

    fn ids(targets: &[Target]) -> Vec<u64> {
        let mut ids: Vec<u64> = targets
            .iter()
            .map(|target| match target {
                Target::Own(queue) => queue.id().0,
                Target::Lane(_) => panic!("the test routes queues only"),
            })
            .collect();
        ids.sort_unstable();
        ids
    }

    #[test]
    fn an_audience_reaches_each_of_its_members_targets_once_and_no_other() {
        let mut routes = Routes::default();
        let tools = Filter::new().with_tools_list_changed();
        let kind = EventKind::ListChanged(ListKind::Tools);
        let memberships = [
            Membership::new(Some("alice".into()), &["tenant:a".into()]),
            Membership::new(Some("bob".into()), &["tenant:a".into()]),
            Membership::new(Some("carol".into()), &["tenant:b".into()]),
            Membership::default(),
        ];
        let targets: Vec<_> = (1..=4).map(target).collect();
        for (target, membership) in targets.iter().zip(&memberships) {
            routes.insert(target, &tools, membership);
        }
        let reach = |audience: Audience| {
            let mut out = Vec::new();
            routes.for_members(&kind, audience.members().unwrap(), &mut out);
            ids(&out)
        };
        assert_eq!(reach(Audience::principal("alice")), [1]);
        assert_eq!(reach(Audience::label("tenant:a")), [1, 2]);
        assert_eq!(
            reach(Audience::label("tenant:a").with_principal("alice")),
            [1, 2]
        );
        assert_eq!(
            reach(Audience::label("tenant:b").with_principal("alice")),
            [1, 3]
        );
        assert_eq!(reach(Audience::principal("nobody")), Vec::<u64>::new());
        assert_eq!(reach(Audience::nobody()), Vec::<u64>::new());
        for (target, membership) in targets.iter().zip(&memberships) {
            routes.remove(target, &tools, membership);
        }
        assert!(
            routes.members.is_empty(),
            "a member with no target costs nothing"
        );
    }
}
