//! A tools list that really changes at runtime: `test_add_tool`,
//! `test_remove_tool` and `test_edit_tool` add, remove and describe again
//! tools of their own (never the built-in ones), and each change is
//! published as `notifications/tools/list_changed`. Each replica has its
//! own added tools; a change on one is heard by every replica's listeners,
//! who then refetch that replica's list. A tool added for a principal is
//! that principal's own: listed to it alone, and its changes told to it
//! alone.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::RwLock;
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::model::{CallToolResult, ContentBlock, ErrorData, Tool};

/// The tools added at runtime, by name, shared by every session's server.
#[derive(Clone, Default)]
pub(crate) struct AddedTools(Arc<RwLock<BTreeMap<String, Added>>>);

/// One added tool.
struct Added {
    description: String,
    /// The principal it is listed to; everyone's when `None`.
    owner: Option<String>,
}

impl AddedTools {
    /// Adds `name` (`owner`'s own, or everyone's), unless `built_in` or
    /// added already has it.
    pub(crate) fn add(
        &self,
        built_in: &ToolRouter<impl Send + Sync + 'static>,
        name: &str,
        description: &str,
        owner: Option<String>,
    ) -> Result<Option<String>, ErrorData> {
        let mut added = self.0.write();
        if built_in.has_route(name) || added.contains_key(name) {
            return Err(ErrorData::invalid_params(
                format!("a tool named {name} exists"),
                None,
            ));
        }
        let description = description.to_owned();
        added.insert(
            name.to_owned(),
            Added {
                description,
                owner: owner.clone(),
            },
        );
        Ok(owner)
    }

    /// Removes an added tool; its owner, if it has one.
    pub(crate) fn remove(&self, name: &str) -> Result<Option<String>, ErrorData> {
        match self.0.write().remove(name) {
            Some(added) => Ok(added.owner),
            None => Err(not_added(name)),
        }
    }

    /// Describes an added tool anew; its owner, if it has one.
    pub(crate) fn edit(&self, name: &str, description: &str) -> Result<Option<String>, ErrorData> {
        match self.0.write().get_mut(name) {
            Some(added) => {
                description.clone_into(&mut added.description);
                Ok(added.owner.clone())
            }
            None => Err(not_added(name)),
        }
    }

    /// The tools `principal` is listed: the built-in ones, and the added
    /// ones that are everyone's or its own.
    pub(crate) fn listed_to<S: Send + Sync + 'static>(
        &self,
        built_in: &ToolRouter<S>,
        principal: Option<&str>,
    ) -> Vec<Tool> {
        let mut tools = built_in.list_all();
        for (name, added) in self.0.read().iter() {
            if added.owner.is_none() || added.owner.as_deref() == principal {
                tools.push(tool(name, &added.description));
            }
        }
        tools
    }

    /// `built_in` with a route for each added tool, which answers with its
    /// name when called.
    pub(crate) fn router<S: Send + Sync + 'static>(
        &self,
        built_in: &ToolRouter<S>,
    ) -> ToolRouter<S> {
        let mut router = built_in.clone();
        for (name, added) in self.0.read().iter() {
            let answer = format!("{name} called");
            router.add_route(ToolRoute::new_dyn(
                tool(name, &added.description),
                move |_| {
                    let result = CallToolResult::success(vec![ContentBlock::text(answer.clone())]);
                    Box::pin(std::future::ready(Ok(result.into())))
                },
            ));
        }
        router
    }
}

fn tool(name: &str, description: &str) -> Tool {
    Tool::new(
        name.to_owned(),
        description.to_owned(),
        Arc::new(object_schema()),
    )
}

fn not_added(name: &str) -> ErrorData {
    ErrorData::invalid_params(format!("{name} is not a tool test_add_tool added"), None)
}

/// The input schema of a tool that takes no arguments.
fn object_schema() -> rmcp::model::JsonObject {
    let mut schema = rmcp::model::JsonObject::new();
    schema.insert("type".into(), "object".into());
    schema
}
