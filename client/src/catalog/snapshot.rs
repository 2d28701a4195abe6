//! What a catalog holds at one moment: the server's lists, shared cheaply.

use std::sync::Arc;

use rmcp::model::{DiscoverResult, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool};

use super::entry::{CatalogKind, Contents};

/// A server's catalog at one generation: what discovery said, its tools,
/// prompts, resources and templates in the order the server listed them,
/// and the contents of the watched resources.
///
/// Cheap to clone and to keep: each list is shared with the generations
/// before and after it that did not change it.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub(super) generation: u64,
    pub(super) server: Arc<DiscoverResult>,
    pub(super) tools: Arc<Vec<Tool>>,
    pub(super) prompts: Arc<Vec<Prompt>>,
    pub(super) resources: Arc<Vec<Resource>>,
    pub(super) templates: Arc<Vec<ResourceTemplate>>,
    pub(super) contents: Arc<Vec<Contents>>,
}

impl Snapshot {
    pub(super) fn new(server: DiscoverResult) -> Self {
        Self {
            generation: 0,
            server: Arc::new(server),
            tools: Arc::default(),
            prompts: Arc::default(),
            resources: Arc::default(),
            templates: Arc::default(),
            contents: Arc::default(),
        }
    }

    /// Rises by one on every change to anything the snapshot holds; the
    /// first fetches after opening count as changes too.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The server's `server/discover` result: its versions, capabilities,
    /// instructions and, in `_meta`, its name.
    pub fn server(&self) -> &DiscoverResult {
        &self.server
    }

    /// The tools.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|tool| tool.name == name)
    }

    /// The prompts.
    pub fn prompts(&self) -> &[Prompt] {
        &self.prompts
    }

    /// The prompt called `name`.
    pub fn prompt(&self, name: &str) -> Option<&Prompt> {
        self.prompts.iter().find(|prompt| prompt.name == name)
    }

    /// The resources.
    pub fn resources(&self) -> &[Resource] {
        &self.resources
    }

    /// The resource templates.
    pub fn templates(&self) -> &[ResourceTemplate] {
        &self.templates
    }

    /// The contents of a watched resource, once read.
    pub fn contents(&self, uri: &str) -> Option<&ReadResourceResult> {
        self.contents
            .iter()
            .find(|contents| contents.uri == uri)
            .map(|contents| &contents.result)
    }

    /// How many entries the list of `kind` has.
    pub fn len(&self, kind: CatalogKind) -> usize {
        match kind {
            CatalogKind::Tools => self.tools.len(),
            CatalogKind::Prompts => self.prompts.len(),
            CatalogKind::Resources => self.resources.len(),
            CatalogKind::Templates => self.templates.len(),
        }
    }
}

/// Where a snapshot keeps the list of an entry type.
pub(super) trait Stored: Sized {
    fn list(snapshot: &mut Snapshot) -> &mut Arc<Vec<Self>>;
}

macro_rules! stored {
    ($entry:ty, $list:ident) => {
        impl Stored for $entry {
            fn list(snapshot: &mut Snapshot) -> &mut Arc<Vec<Self>> {
                &mut snapshot.$list
            }
        }
    };
}

stored!(Tool, tools);
stored!(Prompt, prompts);
stored!(Resource, resources);
stored!(ResourceTemplate, templates);
