//! End to end over Streamable HTTP on loopback: 100 listen streams read by
//! real sockets and 200 tools-list changes, served by the crate's endpoint
//! and by rmcp's own pattern (each stream's sink in a list, every publish
//! awaiting each sink in turn) in the same group. Throughput is in
//! notifications written. `bench_report` runs the full size (1,000
//! streams, 10,000 events) and the stalled-client comparison.

// criterion_group! generates undocumented public functions.
#![allow(missing_docs)]

use std::time::Duration;

use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use harness::{EndToEnd, Scenario, Server};

const STREAMS: usize = 100;
const EVENTS: usize = 200;
const LIMIT: Duration = Duration::from_secs(60);

fn end_to_end(c: &mut Criterion) {
    let mut group = c.benchmark_group("http");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements((STREAMS * EVENTS) as u64));
    for (name, server) in [
        ("hub_endpoint", Server::Endpoint),
        ("rmcp_pattern", Server::RmcpPattern),
    ] {
        let mut run = EndToEnd::new(server, STREAMS, EVENTS, LIMIT);
        group.bench_function(BenchmarkId::new(name, STREAMS), |b| {
            b.iter_custom(|iters| run.run(iters))
        });
    }
    group.finish();
}

criterion_group!(benches, end_to_end);
criterion_main!(benches);
