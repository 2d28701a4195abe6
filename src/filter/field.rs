//! The wire names of the filter's core fields.

pub(crate) const TOOLS_LIST_CHANGED: &str = "toolsListChanged";
pub(crate) const PROMPTS_LIST_CHANGED: &str = "promptsListChanged";
pub(crate) const RESOURCES_LIST_CHANGED: &str = "resourcesListChanged";
pub(crate) const RESOURCE_SUBSCRIPTIONS: &str = "resourceSubscriptions";
