//! Every comparison of the performance work in one process, side by side
//! with its anchor in the same run: a markdown table on stdout, the same
//! rows as JSON, and a plot of fan-out throughput against listener count.
//! The scenarios are the harness's, the same the criterion benches time.
//!
//! ```sh
//! cargo bench-report [--quick] [--json FILE] [--plot FILE.svg] [--only SECTIONS]
//! # the alias for:
//! cargo run --release -p mcp-subscriptions-benches --bin bench_report -- [OPTIONS]
//! ```
//!
//! `--only latency,render` runs only those sections (`fanout`, `sparse`,
//! `latency`, `memory`, `render`, `http`, `scaling`). The scaling table (1,
//! 4 and 16 publisher threads) runs by default only on 8 cores or more.
//!
//! Each row's `ratio` is oriented so that higher is better for the hub, and
//! `met` says whether it reaches the target.

mod fanout;
mod http;
mod latency;
mod memory;
mod plot;
mod render;
mod rows;
mod scaling;
mod settings;
mod sparse;

use settings::Settings;

/// The report's sections, in the order of their rows, named by the prefix
/// of their rows' scenarios. The scaling table's rows begin with `fanout`
/// too.
const SECTIONS: [&str; 7] = [
    "fanout", "sparse", "latency", "memory", "render", "http", "scaling",
];

/// Fewer cores than this, and the scaling table runs only when asked for:
/// publisher threads would just take turns.
const SCALING_CORES: usize = 8;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut quick, mut json_path, mut plot_path) = (false, None, None);
    let mut only: Vec<String> = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => quick = true,
            "--json" => json_path = Some(args.next().ok_or("--json needs a file")?),
            "--plot" => plot_path = Some(args.next().ok_or("--plot needs a file")?),
            "--only" => {
                let list = args.next().ok_or("--only needs sections")?;
                only = list.split(',').map(str::to_owned).collect();
                if let Some(unknown) = only.iter().find(|s| !SECTIONS.contains(&s.as_str())) {
                    return Err(format!("unknown section {unknown}; one of {SECTIONS:?}").into());
                }
            }
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let wants = |section: &str| {
        if only.is_empty() {
            section != "scaling" || cores >= SCALING_CORES
        } else {
            only.iter().any(|s| s == section)
        }
    };
    let settings = Settings::new(quick);

    let (mut rows, mut curve) = (Vec::new(), Vec::new());
    for section in SECTIONS.into_iter().filter(|s| wants(s)) {
        rows.extend(match section {
            "fanout" => fanout::rows(&settings, &mut curve),
            "sparse" => sparse::rows(&settings),
            "latency" => latency::rows(&settings),
            "memory" => memory::rows(),
            "render" => render::rows(&settings),
            "http" => http::rows(&settings),
            "scaling" => scaling::rows(&settings),
            _ => unreachable!("a section of SECTIONS"),
        });
    }

    print!("{}", rows::markdown(&rows));
    if let Some(path) = json_path {
        std::fs::write(&path, serde_json::to_string_pretty(&rows)?)?;
        println!("rows written to {path}");
    }
    if let Some(path) = plot_path {
        if curve.is_empty() {
            return Err("--plot draws the fan-out curve: run the fanout section".into());
        }
        plot::plot(&path, &curve)?;
        println!("plot written to {path}");
    }
    Ok(())
}
