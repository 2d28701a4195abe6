//! The example server's command line: `--help`, clap's errors for bad
//! values, options from the environment, and `examples/README.md`'s options table,
//! which must say what `--help` says.

use std::collections::BTreeMap;
use std::process::{Command, Output};

use crate::support::example::binary;

/// Every environment variable the server reads, so that the caller's own
/// settings cannot leak into a test.
const ENV: [&str; 7] = [
    "MCP_SUBSCRIPTIONS_BIND",
    "MCP_SUBSCRIPTIONS_STDIO",
    "MCP_SUBSCRIPTIONS_KEEPALIVE_SECS",
    "MCP_SUBSCRIPTIONS_CAPACITY",
    "MCP_SUBSCRIPTIONS_OVERFLOW",
    "MCP_SUBSCRIPTIONS_MAX_SUBSCRIPTIONS",
    "MCP_SUBSCRIPTIONS_RELAY",
];

/// Runs the server to completion: only for arguments that make it exit.
fn server(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(binary());
    for name in ENV {
        command.env_remove(name);
    }
    command
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("the example server runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("UTF-8 output")
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("UTF-8 output")
}

/// What a table row or a `--help` entry says about one option.
#[derive(Debug, PartialEq, Eq)]
struct Described {
    /// `<ADDR>`, or empty for a flag.
    value: String,
    env: String,
    /// `off` for a flag, as the README writes it.
    default: String,
}

/// The options `--help` lists, by name, less `--help` and `--version`.
fn from_help(help: &str) -> BTreeMap<String, Described> {
    // An entry is its option line and, in the long form, the indented
    // lines below it.
    let mut entries: Vec<String> = Vec::new();
    let options = help
        .split_once("Options:\n")
        .expect("--help has an Options section")
        .1;
    for line in options.lines() {
        let indent = line.len() - line.trim_start().len();
        if line.trim_start().starts_with('-') && indent < 8 {
            entries.push(line.trim().to_owned());
        } else if let Some(entry) = entries.last_mut() {
            entry.push(' ');
            entry.push_str(line.trim());
        }
    }
    entries
        .iter()
        .filter_map(|entry| {
            let mut words = entry
                .split_whitespace()
                .skip_while(|word| !word.starts_with("--"));
            let name = words.next()?.to_owned();
            if name == "--help" || name == "--version" {
                return None;
            }
            let value = words
                .next()
                .filter(|word| word.starts_with('<'))
                .unwrap_or_default()
                .to_owned();
            // `[env: NAME=]`, or `[env: NAME=value]` where it is set.
            let env = bracketed(entry, "[env: ")
                .and_then(|env| env.split('=').next())
                .unwrap_or_default()
                .to_owned();
            let default = match bracketed(entry, "[default: ") {
                Some(default) => default.to_owned(),
                None if value.is_empty() => "off".to_owned(),
                None => String::new(),
            };
            Some((
                name,
                Described {
                    value,
                    env,
                    default,
                },
            ))
        })
        .collect()
}

/// The text between `open` and the next `]`.
fn bracketed<'a>(entry: &'a str, open: &str) -> Option<&'a str> {
    let start = entry.find(open)? + open.len();
    let len = entry[start..].find(']')?;
    Some(&entry[start..start + len])
}

/// The rows of `examples/README.md`'s "## Options" table, by option name.
fn from_readme(readme: &str) -> BTreeMap<String, Described> {
    let section = readme
        .split_once("## Options\n")
        .expect("examples/README.md has an Options section")
        .1;
    let code = |cell: &str| cell.trim().trim_matches('`').to_owned();
    section
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .filter(|line| line.starts_with("| `--"))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').collect();
            let option = code(cells[1]);
            let (name, value) = option.split_once(' ').unwrap_or((&option, ""));
            let described = Described {
                value: value.to_owned(),
                env: code(cells[2]),
                default: code(cells[3]),
            };
            (name.to_owned(), described)
        })
        .collect()
}

#[test]
fn help_exits_zero_and_names_every_option() {
    let output = server(&["--help"], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let help = stdout(&output);
    for option in ["--bind", "--stdio", "--overflow", "MCP_SUBSCRIPTIONS_BIND"] {
        assert!(help.contains(option), "{option} missing from\n{help}");
    }
}

#[test]
fn version_names_the_crate_version() {
    let output = server(&["--version"], &[]);
    assert!(output.status.success());
    assert!(stdout(&output).contains(env!("CARGO_PKG_VERSION")));
}

#[test]
fn a_bad_overflow_is_refused_naming_the_option_and_the_policies() {
    let output = server(&["--overflow", "drop-newest"], &[]);
    assert!(!output.status.success());
    let err = stderr(&output);
    assert!(err.contains("--overflow"), "{err}");
    assert!(
        err.contains("drop-oldest") && err.contains("disconnect"),
        "{err}"
    );
}

#[test]
fn a_zero_capacity_is_refused() {
    let output = server(&["--capacity", "0"], &[]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("--capacity"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_relay_url_this_build_cannot_relay_through_is_refused() {
    // Without the feature a scheme needs, every broker URL is refused the
    // same way; no build has a feature for this one.
    let output = server(&["--relay", "amqp://127.0.0.1:5672"], &[]);
    assert_eq!(output.status.code(), Some(2), "a usage error");
    let err = stderr(&output);
    assert!(
        err.contains("--relay") && err.contains("amqp://127.0.0.1:5672"),
        "{err}"
    );
    assert!(err.contains("feature"), "says which feature: {err}");
}

#[test]
fn options_come_from_the_environment() {
    // A bad value proves the variable is read without starting a server.
    let output = server(&[], &[("MCP_SUBSCRIPTIONS_OVERFLOW", "sometimes")]);
    assert!(!output.status.success());
    let err = stderr(&output);
    assert!(
        err.contains("--overflow") && err.contains("sometimes"),
        "{err}"
    );
}

#[test]
fn the_readme_options_table_matches_help() {
    let help = stdout(&server(&["--help"], &[]));
    let readme = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/README.md"
    ))
    .expect("the README");
    let from_help = from_help(&help);
    assert!(from_help.len() >= 6, "too few options parsed from\n{help}");
    assert_eq!(
        from_readme(&readme),
        from_help,
        "examples/README.md's options table (left) and --help (right) differ"
    );
}
