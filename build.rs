//! Names for the feature conditions the crate tests in many places, so
//! that each is written once: `any_transport` (a transport is built:
//! `stdio`, `http` or `channel`) and `any_relay` (`redis` or `nats`).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(any_transport, any_relay)");
    let on = |feature: &str| std::env::var_os(format!("CARGO_FEATURE_{feature}")).is_some();
    if ["STDIO", "HTTP", "CHANNEL"].into_iter().any(on) {
        println!("cargo::rustc-cfg=any_transport");
    }
    if ["REDIS", "NATS"].into_iter().any(on) {
        println!("cargo::rustc-cfg=any_relay");
    }
}
