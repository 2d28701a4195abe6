//! Watch an MCP server's notifications: one line per notification as it
//! arrives, re-listen reports, and a clean cancel on Ctrl-C. With
//! `--catalog`, watch its live catalog instead: the lists once, then one
//! line per change (`+` added, `-` removed, `~` changed).
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
use mcp_subscriptions::client::{
    Catalog, CatalogOptions, Change, Diff, End, Item, Keyed, Relisten, StdioClient,
    SubscribeOptions, Subscription,
};

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
    /// Do not listen again after an abrupt end.
    #[arg(long)]
    no_relisten: bool,
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
    let mut options = SubscribeOptions::default().with_capacity(args.capacity.max(1));
    if !args.no_relisten {
        options = options.with_relisten(Relisten::new(
            Duration::from_millis(200),
            Duration::from_secs(10),
        ));
    }
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

/// `--catalog`: the lists once, then each change.
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
    println!("generation {}", snapshot.generation());
    print_list("tools", snapshot.tools());
    print_list("prompts", snapshot.prompts());
    print_list("resources", snapshot.resources());
    print_list("templates", snapshot.templates());
    for (uri, health) in catalog.health().contents {
        match (snapshot.contents(&uri), health.last_error) {
            (Some(contents), _) => println!("contents {uri}: {}", serde_json::to_string(contents)?),
            (None, Some(error)) => println!("contents {uri}: {error}"),
            (None, None) => {}
        }
    }
    loop {
        let change = tokio::select! {
            change = changes.next() => change.ok_or("the catalog closed")?,
            _ = tokio::signal::ctrl_c() => {
                println!("cancelled");
                return Ok(());
            }
        };
        match change {
            Change::Tools(diff) => print_diff("tools", &diff),
            Change::Prompts(diff) => print_diff("prompts", &diff),
            Change::Resources(diff) => print_diff("resources", &diff),
            Change::Templates(diff) => print_diff("templates", &diff),
            Change::Contents(diff) => print_diff("contents", &diff),
            _ => {}
        }
    }
}

fn print_list<T: Keyed>(what: &str, list: &[T]) {
    let keys: Vec<&str> = list.iter().map(Keyed::key).collect();
    println!("{what} ({}): {}", keys.len(), keys.join(" "));
}

fn print_diff<T: Keyed>(what: &str, diff: &Diff<T>) {
    let mut line = format!("generation {} {what}:", diff.generation);
    for entry in &diff.added {
        line.push_str(&format!(" +{}", entry.key()));
    }
    for entry in &diff.removed {
        line.push_str(&format!(" -{}", entry.key()));
    }
    for edit in &diff.changed {
        line.push_str(&format!(" ~{}", edit.new.key()));
    }
    println!("{line}");
}
