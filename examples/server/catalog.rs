//! A tools list that really changes at runtime: `test_add_tool`,
//! `test_remove_tool` and `test_edit_tool` add, remove and describe again
//! tools of their own (never the built-in ones), and each change is
//! published as `notifications/tools/list_changed`. Each replica has its
//! own added tools; a change on one is heard by every replica's listeners,
//! who then refetch that replica's list.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::RwLock;
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::model::{CallToolResult, ContentBlock, ErrorData, Tool};

/// The tools added at runtime, by name, shared by every session's server.
#[derive(Clone, Default)]
pub(crate) struct AddedTools(Arc<RwLock<BTreeMap<String, String>>>);

impl AddedTools {
    /// Adds `name`, unless `built_in` or added already has it.
    pub(crate) fn add(
        &self,
        built_in: &ToolRouter<impl Send + Sync + 'static>,
        name: &str,
        description: &str,
    ) -> Result<(), ErrorData> {
        let mut added = self.0.write();
        if built_in.has_route(name) || added.contains_key(name) {
            return Err(ErrorData::invalid_params(
                format!("a tool named {name} exists"),
                None,
            ));
        }
        added.insert(name.to_owned(), description.to_owned());
        Ok(())
    }

    /// Removes an added tool.
    pub(crate) fn remove(&self, name: &str) -> Result<(), ErrorData> {
        match self.0.write().remove(name) {
            Some(_) => Ok(()),
            None => Err(not_added(name)),
        }
    }

    /// Describes an added tool anew.
    pub(crate) fn edit(&self, name: &str, description: &str) -> Result<(), ErrorData> {
        match self.0.write().get_mut(name) {
            Some(old) => {
                *old = description.to_owned();
                Ok(())
            }
            None => Err(not_added(name)),
        }
    }

    /// `built_in` with a route for each added tool, which answers with its
    /// name when called.
    pub(crate) fn router<S: Send + Sync + 'static>(
        &self,
        built_in: &ToolRouter<S>,
    ) -> ToolRouter<S> {
        let mut router = built_in.clone();
        for (name, description) in self.0.read().iter() {
            let tool = Tool::new(name.clone(), description.clone(), Arc::new(object_schema()));
            let answer = format!("{name} called");
            router.add_route(ToolRoute::new_dyn(tool, move |_| {
                let result = CallToolResult::success(vec![ContentBlock::text(answer.clone())]);
                Box::pin(std::future::ready(Ok(result.into())))
            }));
        }
        router
    }
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
