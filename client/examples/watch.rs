//! Watch an MCP server's notifications: one line per notification as it
//! arrives, each failed attempt and re-listen with its reason, and a clean
//! cancel on Ctrl-C. With
//! `--catalog`, watch its live catalog instead: the lists once, then one
//! line per change (`+ tool search`, `- tool old`, `~ tool edit
//! (description)`) and per change of its health.
//!
//! ```sh
//! cargo run --release --example watch -- --catalog http://127.0.0.1:8808/mcp
//! cargo run --release --example watch -- http://127.0.0.1:8808/mcp --tools --resource file:///a
//! cargo run --release --example watch -- --channel ws://127.0.0.1:8808/mcp/notifications/main
//! cargo run --release --example watch -- --tools --stdio target/release/examples/server --stdio
//! ```

use std::time::Duration;

use clap::Parser;
use mcp_subscriptions::Filter;
use mcp_subscriptions_client::catalog::{
    Catalog, CatalogOptions, Change, Diff, Health, Keyed, ListenState,
};
use mcp_subscriptions_client::{End, Item, Relisten, StdioClient, SubscribeOptions, Subscription};
use serde::Serialize;

#[derive(Parser)]
#[command(version, about = "Print an MCP server's notifications as they arrive")]
struct Args {
    /// The server's Streamable HTTP endpoint, such as http://127.0.0.1:8808/mcp.
    #[arg(required_unless_present_any = ["stdio", "channel"], conflicts_with_all = ["stdio", "channel"])]
    url: Option<String>,
    /// Listen on a notification channel at this WebSocket URL instead.
    #[arg(long, value_name = "URL", conflicts_with = "stdio")]
    channel: Option<String>,
    /// Start this command and listen over its stdin and stdout instead
    /// (the rest of the command line is its arguments).
    #[arg(long, value_name = "CMD", num_args = 1.., allow_hyphen_values = true)]
    stdio: Option<Vec<String>>,
    /// Ask for notifications/tools/list_changed.
    #[arg(long)]
    tools: bool,
    /// Ask for notifications/prompts/list_changed.
    #[arg(long)]
    prompts: bool,
    /// Ask for notifications/resources/list_changed.
    #[arg(long)]
    resources: bool,
    /// Ask for notifications/resources/updated about this URI (repeat for more).
    #[arg(long = "resource", value_name = "URI")]
    uris: Vec<String>,
    /// Events buffered between the transport and the screen.
    #[arg(long, value_name = "N", default_value_t = 256)]
    capacity: usize,
    /// Do not listen again after a stream ends (lost, or completed by the
    /// server at a restart).
    #[arg(long)]
    no_relisten: bool,
    /// Seconds the server has to acknowledge a listen, connecting included.
    #[arg(long, value_name = "SECS", default_value_t = mcp_subscriptions_client::DEFAULT_ACK_TIMEOUT.as_secs())]
    ack_timeout_secs: u64,
    /// Keep the server's catalog live and print what changes in it (the
    /// contents of each --resource too), rather than the notifications.
    #[arg(long, conflicts_with_all = ["channel", "tools", "prompts", "resources", "no_relisten"])]
    catalog: bool,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    if args.catalog {
        return watch_catalog(args).await;
    }
    let mut requested = Filter::new();
    if args.tools {
        requested = requested.with_tools_list_changed();
    }
    if args.prompts {
        requested = requested.with_prompts_list_changed();
    }
    if args.resources {
        requested = requested.with_resources_list_changed();
    }
    for uri in args.uris {
        requested = requested.with_resource(uri);
    }
    if args.channel.is_some() && requested.is_empty() {
        requested = Filter::everything();
    }
    let mut options = SubscribeOptions::default()
        .with_capacity(args.capacity.max(1))
        .with_ack_timeout(Duration::from_secs(args.ack_timeout_secs))
        // Until the first acknowledgement there is no subscription to tell
        // of a failed attempt: say each here, so a server that never
        // answers is not a silent terminal.
        .with_on_retry(|retry| {
            println!(
                "not listening yet: attempt {} failed ({}), trying again in {:?}",
                retry.attempt, retry.reason, retry.delay
            );
        });
    if !args.no_relisten {
        options = options.with_relisten(Relisten::new(
            Duration::from_millis(200),
            Duration::from_secs(10),
        ));
    }
    let target = match (&args.url, &args.channel, &args.stdio) {
        (Some(url), _, _) | (_, Some(url), _) => url.clone(),
        (_, _, Some(command)) => command.join(" "),
        _ => unreachable!("clap requires one"),
    };
    println!("listening to {target}: waiting for the acknowledgement");
    let mut subscription = match (args.url, args.channel, args.stdio) {
        (Some(url), _, _) => Subscription::http(url, &requested, options).await?,
        (_, Some(url), _) => Subscription::channel(url, &requested, options).await?,
        (_, _, Some(command)) => {
            let (program, rest) = command.split_first().ok_or("--stdio needs a command")?;
            StdioClient::spawn(program, rest)?
                .subscribe(&requested, options)
                .await?
        }
        _ => unreachable!("clap requires one"),
    };
    println!(
        "acknowledged: {}",
        serde_json::to_string(&subscription.granted())?
    );
    loop {
        let item = tokio::select! {
            item = subscription.next() => item,
            _ = tokio::signal::ctrl_c() => {
                subscription.cancel().await;
                println!("cancelled");
                return Ok(());
            }
        };
        match item {
            Some(Item::Event(event)) => println!("{}", event.to_plain_json()),
            Some(Item::Lagged(lost)) => println!("lagged: {lost} notifications lost"),
            Some(Item::Relistening(attempt)) => println!(
                "relistening: attempt {} in {:?} ({})",
                attempt.attempt, attempt.delay, attempt.reason
            ),
            Some(Item::Resynced(granted)) => {
                println!("resynced: refetch {}", serde_json::to_string(&granted)?)
            }
            Some(Item::End(End::Complete)) => {
                println!("ended: {}", End::Complete);
                return Ok(());
            }
            Some(Item::End(end)) => {
                eprintln!("ended: {end}");
                std::process::exit(1);
            }
            Some(_) => {}
            None => return Ok(()),
        }
    }
}

/// `--catalog`: the lists once, then each change and each change of health.
async fn watch_catalog(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let mut options = CatalogOptions::default();
    options.watch = args.uris;
    let catalog = match (args.url, args.stdio) {
        (Some(url), _) => Catalog::http(url, options).await?,
        (_, Some(command)) => {
            let (program, rest) = command.split_first().ok_or("--stdio needs a command")?;
            Catalog::stdio(&StdioClient::spawn(program, rest)?, options).await?
        }
        _ => unreachable!("clap requires one"),
    };
    let mut changes = catalog.changes();
    let snapshot = catalog.snapshot();
    print_list("tools", snapshot.tools());
    print_list("prompts", snapshot.prompts());
    print_list("resources", snapshot.resources());
    print_list("templates", snapshot.templates());
    for uri in catalog.health().contents.keys() {
        if let Some(contents) = snapshot.contents(uri) {
            println!("contents {uri}: {}", serde_json::to_string(contents)?);
        }
    }
    let mut health = health_lines(&catalog.health());
    let mut every = tokio::time::interval(Duration::from_millis(200));
    loop {
        tokio::select! {
            change = changes.next() => match change.ok_or("the catalog closed")? {
                Change::Tools(diff) => print_diff("tool", &diff),
                Change::Prompts(diff) => print_diff("prompt", &diff),
                Change::Resources(diff) => print_diff("resource", &diff),
                Change::Templates(diff) => print_diff("template", &diff),
                Change::Contents(diff) => print_diff("contents", &diff),
                _ => {}
            },
            _ = every.tick() => {
                let now = health_lines(&catalog.health());
                for (state, line) in &now {
                    if !health.iter().any(|(was, _)| was == state) {
                        println!("health: {line}");
                    }
                }
                health = now;
            }
            _ = tokio::signal::ctrl_c() => {
                println!("cancelled");
                return Ok(());
            }
        }
    }
}

/// The catalog's health, part by part: a state to compare (a line is
/// printed when it changes, not at each retry) and the line.
fn health_lines(health: &Health) -> Vec<(String, String)> {
    let listen = match &health.listen {
        ListenState::Listening => ("listening", "listening".to_owned()),
        ListenState::Relistening { attempt, reason } => (
            "relistening",
            format!("listening again (attempt {attempt}: {reason})"),
        ),
        ListenState::Ended(end) => ("ended", format!("no longer listening: {end}")),
        _ => (
            "not listening",
            "not listening: lists refresh by their ttl".to_owned(),
        ),
    };
    let mut lines = vec![(listen.0.to_owned(), listen.1)];
    let lists = health
        .lists
        .iter()
        .map(|(kind, fetch)| (format!("{kind:?}").to_lowercase(), fetch));
    let contents = health
        .contents
        .iter()
        .map(|(uri, fetch)| (uri.clone(), fetch));
    for (what, fetch) in lists.chain(contents) {
        let (state, line) = match &fetch.last_error {
            None => ("fresh", format!("{what} fresh")),
            Some(error) if fetch.retrying => {
                ("retrying", format!("{what} stale, retrying: {error}"))
            }
            Some(error) => ("stale", format!("{what} stale: {error}")),
        };
        lines.push((format!("{what} {state}"), line));
    }
    lines
}

fn print_list<T: Keyed>(what: &str, list: &[T]) {
    let keys: Vec<&str> = list.iter().map(Keyed::key).collect();
    let mut line = format!("{what} ({}):", keys.len());
    for key in keys {
        line.push(' ');
        line.push_str(key);
    }
    println!("{line}");
}

/// One line per entry: `+ tool search`, `- tool old`, `~ tool edit
/// (description)`, naming the fields that changed.
fn print_diff<T: Keyed + Serialize>(what: &str, diff: &Diff<T>) {
    for entry in &diff.added {
        println!("+ {what} {}", entry.key());
    }
    for entry in &diff.removed {
        println!("- {what} {}", entry.key());
    }
    for edit in &diff.changed {
        let (old, new) = (fields(&edit.old), fields(&edit.new));
        let mut changed: Vec<&str> = new
            .iter()
            .filter(|(field, value)| old.get(*field) != Some(value))
            .map(|(field, _)| field.as_str())
            .chain(
                old.keys()
                    .filter(|field| !new.contains_key(*field))
                    .map(String::as_str),
            )
            .collect();
        changed.sort_unstable();
        println!("~ {what} {} ({})", edit.new.key(), changed.join(", "));
    }
}

fn fields<T: Serialize>(entry: &T) -> serde_json::Map<String, serde_json::Value> {
    match serde_json::to_value(entry) {
        Ok(serde_json::Value::Object(fields)) => fields,
        _ => serde_json::Map::new(),
    }
}
