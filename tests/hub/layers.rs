//! Each crate's arrows point down: no file imports from a layer above its
//! own, transports never import one another, and no two files import each
//! other, however indirectly. Read from the source text, so a new file is
//! checked the day it lands (ARCHITECTURE.md draws the layers). Between the
//! crates, Cargo keeps the arrows down: the gateway uses the client and the
//! engine, the client the engine, the engine neither.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate of the workspace: where its sources are, and each module's
/// layer: a top-level module, or a folder within one (`transport::http`),
/// which then is a module of its own. A file belongs to the longest of
/// them its path starts with, and may import only from a lower layer or
/// from its own module. The bottom layer's modules may import one another,
/// as long as no cycle forms. A folder's `mod.rs` declaring its children
/// is no import (it may declare a layer above its own), but it counts
/// toward cycles.
struct Crate {
    src: &'static str,
    layers: &'static [(&'static str, u8)],
}

const CRATES: [Crate; 3] = [ENGINE, CLIENT, GATEWAY];

const ENGINE: Crate = Crate {
    src: "src",
    layers: ENGINE_LAYERS,
};

const ENGINE_LAYERS: &[(&str, u8)] = &[
    ("audience", 0),
    ("error", 0),
    ("event", 0),
    ("filter", 0),
    ("queue", 0),
    ("sync", 0),
    ("util", 0),
    ("wire", 0),
    ("context", 1),
    ("source", 2),
    ("hub", 3),
    ("serve", 3),
    ("relay", 4),
    ("tasks", 4),
    // What the transports share; the transports, each a folder in it.
    ("transport", 4),
    ("transport::channel", 5),
    ("transport::http", 5),
    ("transport::session", 5),
    ("transport::stdio", 5),
];

const CLIENT: Crate = Crate {
    src: "client/src",
    layers: &[
        ("error", 0),
        ("overlap", 0),
        ("item", 1),
        ("options", 2),
        ("buffer", 3),
        ("connect", 3),
        ("protocol", 3),
        ("group", 4),
        ("request", 4),
        ("wire", 4),
        ("pump", 5),
        ("subscription", 6),
        // The transports, and the in-process source.
        ("transport", 7),
        ("catalog", 8),
    ],
};

const GATEWAY: Crate = Crate {
    src: "gateway/src",
    layers: &[
        ("error", 0),
        ("stats", 0),
        ("identity", 1),
        ("members", 1),
        ("upstream", 1),
        ("watch", 1),
        ("link", 2),
        ("forward", 3),
        ("lists", 3),
        ("scope", 4),
        ("scopes", 5),
        ("view", 6),
        ("handle", 7),
        // The gateway as an MCP server.
        ("server", 8),
    ],
};

type Module = Vec<String>;

/// Every source file of `krate`, by module path.
fn modules(krate: &Crate) -> BTreeMap<Module, PathBuf> {
    fn walk(dir: &Path, prefix: &Module, out: &mut BTreeMap<Module, PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                let mut module = prefix.clone();
                module.push(name);
                walk(&path, &module, out);
            } else if path.extension().is_some_and(|e| e == "rs") && name != "tests" {
                // A module's tests in a file of their own (`lane/tests.rs`)
                // may reach anywhere, as inline test modules do.
                let mut module = prefix.clone();
                if name != "mod" && name != "lib" {
                    module.push(name);
                }
                out.insert(module, path);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(krate.src),
        &Vec::new(),
        &mut out,
    );
    out
}

/// The code of a file: comments and the trailing test modules left out
/// (tests may reach anywhere).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines().peekable();
    let mut code = String::new();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        let next = lines.peek().map_or("", |l| l.trim_start());
        if trimmed.starts_with("#[cfg(") && trimmed.contains("test") && next.starts_with("mod ") {
            break;
        }
        if !trimmed.starts_with("//") {
            code.push_str(line);
            code.push('\n');
        }
    }
    code
}

/// The module paths a file names through `crate::` or `super::`.
fn references(module: &Module, code: &str) -> Vec<Module> {
    let mut found = Vec::new();
    for (prefix, base) in [
        ("crate::", Vec::new()),
        ("super::", module[..module.len().saturating_sub(1)].to_vec()),
    ] {
        let mut rest = code;
        while let Some(at) = rest.find(prefix) {
            let boundary = rest[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == ':'));
            // `pub(in crate::x)` says who may see an item, not what it uses.
            let visibility = rest[..at].ends_with("pub(in ");
            rest = &rest[at + prefix.len()..];
            if !boundary || visibility {
                continue;
            }
            let path: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            // Past the whole path, so a `super::` inside it is not read again.
            rest = &rest[path.len()..];
            // `super::super::x` climbs once more for each `super`.
            let mut target = base.clone();
            for segment in path.split("::").filter(|s| !s.is_empty()) {
                if segment == "super" {
                    target.pop();
                } else {
                    target.push(segment.to_owned());
                }
            }
            found.push(target);
        }
    }
    found
}

/// The file a path lands in: its longest prefix that is a module.
fn resolve(files: &BTreeMap<Module, PathBuf>, path: &Module) -> Module {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|prefix| files.contains_key(prefix))
        .unwrap()
}

/// File → the files it depends on: what it names, and, for a module file,
/// the children it declares and re-exports.
fn graph(krate: &Crate) -> BTreeMap<Module, BTreeSet<Module>> {
    let files = modules(krate);
    let mut graph = BTreeMap::new();
    for (module, path) in &files {
        let is_dir_module = path
            .file_name()
            .is_some_and(|n| n == "mod.rs" || n == "lib.rs");
        let mut edges: BTreeSet<Module> = references(module, &code(path))
            .iter()
            .map(|target| resolve(&files, target))
            .filter(|target| target != module)
            .collect();
        if is_dir_module {
            edges.extend(
                files
                    .keys()
                    .filter(|child| child.len() == module.len() + 1 && child.starts_with(module))
                    .cloned(),
            );
        }
        graph.insert(module.clone(), edges);
    }
    graph
}

/// The layered module `module` belongs to, and its layer.
fn unit(krate: &Crate, module: &Module) -> (&'static str, u8) {
    let path = module.join("::");
    krate
        .layers
        .iter()
        .filter(|(name, _)| path == *name || path.starts_with(&format!("{name}::")))
        .max_by_key(|(name, _)| name.len())
        .copied()
        .unwrap_or_else(|| {
            panic!(
                "{}/{path}: give it a layer in tests/hub/layers.rs",
                krate.src
            )
        })
}

#[test]
fn every_module_has_a_layer_and_points_only_down() {
    let mut upward = Vec::new();
    for krate in &CRATES {
        let files = modules(krate);
        for (from, edges) in graph(krate) {
            if from.is_empty() {
                continue;
            }
            let declares = |to: &Module| {
                to.len() == from.len() + 1
                    && to.starts_with(&from)
                    && files[&from].ends_with("mod.rs")
            };
            for to in edges {
                let allowed = declares(&to)
                    || (!to.is_empty() && {
                        let ((a_name, a), (b_name, b)) = (unit(krate, &from), unit(krate, &to));
                        a_name == b_name || b < a || (a == 0 && b == 0)
                    });
                if !allowed {
                    let (from, to) = (from.join("::"), to.join("::"));
                    upward.push(format!("{}: {from} -> {to}", krate.src));
                }
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that do not point down:\n{}",
        upward.join("\n")
    );
}

#[test]
fn no_file_depends_on_itself_through_others() {
    fn visit(
        node: &Module,
        graph: &BTreeMap<Module, BTreeSet<Module>>,
        path: &mut Vec<Module>,
        done: &mut BTreeSet<Module>,
    ) -> Option<Vec<Module>> {
        if let Some(start) = path.iter().position(|m| m == node) {
            let mut cycle = path[start..].to_vec();
            cycle.push(node.clone());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.clone());
        for next in &graph[node] {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.clone());
        None
    }
    for krate in &CRATES {
        let graph = graph(krate);
        let mut done = BTreeSet::new();
        for node in graph.keys() {
            let Some(cycle) = visit(node, &graph, &mut Vec::new(), &mut done) else {
                continue;
            };
            let names: Vec<_> = cycle
                .iter()
                .map(|m| {
                    if m.is_empty() {
                        "lib".to_owned()
                    } else {
                        m.join("::")
                    }
                })
                .collect();
            panic!("import cycle in {}: {}", krate.src, names.join(" -> "));
        }
    }
}

#[test]
fn a_folder_with_a_layer_of_its_own_is_a_module_of_its_own() {
    let module = |path: &str| path.split("::").map(str::to_owned).collect::<Module>();
    assert_eq!(
        unit(&ENGINE, &module("transport::http::socket")).0,
        "transport::http"
    );
    assert_eq!(unit(&ENGINE, &module("transport::streams")).0, "transport");
    assert_eq!(unit(&ENGINE, &module("queue::bounded")).0, "queue");
}

#[test]
fn the_checker_sees_references() {
    let code = "use crate::hub::queue::Waiter;\nuse super::entry::Entry;\n\
                use super::super::error::Error;\n";
    let module = vec!["client".to_owned(), "catalog".to_owned(), "diff".to_owned()];
    let names = |path: &[&str]| path.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        references(&module, code),
        [
            names(&["hub", "queue", "Waiter"]),
            names(&["client", "catalog", "entry", "Entry"]),
            names(&["client", "error", "Error"]),
        ]
    );
}
