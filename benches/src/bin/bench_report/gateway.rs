//! The gateway (issue 23): the upstream listen streams and the upstreams'
//! resident memory for 1,000 downstream listeners over two upstreams
//! (example server processes), through one gateway against one upstream
//! listen per downstream listen; and an upstream event's latency to 100
//! listeners through the gateway against listening to the upstream
//! directly. Each with the listeners one principal's, then spread over
//! 10 principals, the gateway speaking upstream as each (issue 40).

use harness::{Downstream, gateway_latency, quantile_ms, sharing};

use crate::rows::Row;
use crate::settings::Settings;

const LISTENERS: usize = 1_000;
const LATENCY_LISTENERS: usize = 100;
/// The principals of the per-caller rows.
const PRINCIPALS: usize = 10;

/// The section's rows.
pub(crate) fn rows(settings: &Settings) -> Result<Vec<Row>, String> {
    let mut rows = principals_rows(settings, 1)?;
    rows.extend(principals_rows(settings, PRINCIPALS)?);
    Ok(rows)
}

/// The rows with the listeners spread over `principals` principals.
fn principals_rows(settings: &Settings, principals: usize) -> Result<Vec<Row>, String> {
    let suffix = if principals > 1 {
        format!("_{principals}_principals")
    } else {
        String::new()
    };
    let ours = sharing(Downstream::Gateway, LISTENERS, principals)?;
    let direct = sharing(Downstream::Direct, LISTENERS, principals)?;
    eprintln!(
        "gateway sharing, {principals} principals: through the gateway {ours:?}, directly {direct:?}"
    );
    let mut streams = Row::new(
        &format!("gateway_upstream_streams{suffix}"),
        LISTENERS,
        ours.upstream_streams as f64,
        "one upstream listen per downstream listen",
        direct.upstream_streams as f64,
        direct.upstream_streams as f64 / ours.upstream_streams.max(1) as f64,
        0.0,
    );
    // Two upstreams, each per principal its catalog's listen and one URI
    // listen.
    let bar = 2 * 2 * principals as u64;
    streams.target = format!("<= {bar} (2 per upstream per principal)");
    streams.met = Some(ours.upstream_streams <= bar);
    let resident = Row::new(
        &format!("gateway_upstream_resident_bytes{suffix}"),
        LISTENERS,
        ours.upstream_resident as f64,
        "one upstream listen per downstream listen",
        direct.upstream_resident as f64,
        direct.upstream_resident as f64 / ours.upstream_resident.max(1) as f64,
        0.0,
    )
    .reported();
    let rounds = if settings.quick { 50 } else { 300 };
    let through = gateway_latency(Downstream::Gateway, LATENCY_LISTENERS, rounds, principals)?;
    let direct = gateway_latency(Downstream::Direct, LATENCY_LISTENERS, rounds, principals)?;
    let mut rows = vec![streams, resident];
    for (name, p) in [("p50", 0.50), ("p99", 0.99)] {
        let (ours, anchor) = (quantile_ms(&through, p), quantile_ms(&direct, p));
        rows.push(
            Row::new(
                &format!("gateway_latency_{name}_ms{suffix}"),
                LATENCY_LISTENERS,
                ours,
                "the upstream listened to directly",
                anchor,
                anchor / ours,
                0.0,
            )
            .reported(),
        );
    }
    Ok(rows)
}
