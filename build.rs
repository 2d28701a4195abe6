//! Names for the feature and target conditions the crate tests in many
//! places, so that each is written once:
//! - `any_transport`: a transport is built (`stdio`, `http` or `channel`);
//! - `rmcp_session`: a transport that runs an rmcp session (`stdio` or
//!   `http`);
//! - `http_edge`: a transport that takes HTTP requests (`http` or
//!   `channel`);
//! - `any_relay`: a relay is built (`redis` or `nats`);
//! - `tcp_user_timeout`: the target has `TCP_USER_TIMEOUT` (Linux, Android,
//!   Fuchsia), which socket2 sets.

fn main() {
    println!(
        "cargo::rustc-check-cfg=cfg(any_transport, rmcp_session, http_edge, any_relay, tcp_user_timeout)"
    );
    let on = |feature: &str| std::env::var_os(format!("CARGO_FEATURE_{feature}")).is_some();
    let gates: [(&str, &[&str]); 4] = [
        ("any_transport", &["STDIO", "HTTP", "CHANNEL"]),
        ("rmcp_session", &["STDIO", "HTTP"]),
        ("http_edge", &["HTTP", "CHANNEL"]),
        ("any_relay", &["REDIS", "NATS"]),
    ];
    for (name, features) in gates {
        if features.iter().copied().any(on) {
            println!("cargo::rustc-cfg={name}");
        }
    }
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if ["android", "fuchsia", "linux"].contains(&target_os.as_str()) {
        println!("cargo::rustc-cfg=tcp_user_timeout");
    }
}
