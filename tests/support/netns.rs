//! A network namespace of a test's own, where it may make a peer vanish
//! by dropping its packets with iptables, touching nothing outside.
//!
//! A test calls [`run_inside`] with its own path: outside the namespace
//! it makes one, runs that very test again inside it (`ip netns exec`),
//! and fails with what the inner run said; inside, it runs the scenario.
//! Making the namespace needs root, `ip` (iproute2) and `iptables`:
//! `.ci/run` installs them, and a test that cannot make its namespace
//! fails loudly rather than skipping.

use std::process::Command;

/// Set in the inner run to the namespace's name.
const INSIDE: &str = "MCP_SUBSCRIPTIONS_TEST_NETNS";

/// Runs `scenario` inside a network namespace of its own, with its
/// loopback up: `test` is the calling test's path in its binary
/// (`module::name`), run again in the namespace.
pub fn run_inside(test: &str, scenario: impl FnOnce()) {
    if std::env::var_os(INSIDE).is_some() {
        return scenario();
    }
    let namespace = Namespace::new(test);
    let exe = std::env::current_exe().expect("the test binary has a path");
    let output = Command::new("ip")
        .args(["netns", "exec", &namespace.0])
        .arg(exe)
        .args([test, "--exact", "--nocapture", "--test-threads", "1"])
        .env(INSIDE, &namespace.0)
        .output()
        .expect("`ip` runs the test in its namespace");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    println!("{said}");
    assert!(
        output.status.success() && said.contains("1 passed"),
        "the test failed in its namespace:\n{said}"
    );
}

/// Drops every packet to and from `address` in this namespace, as if the
/// host there vanished (no FIN, no RST).
pub fn vanish(address: &str) {
    for direction in ["-s", "-d"] {
        run(
            "iptables",
            &["-A", "INPUT", direction, address, "-j", "DROP"],
        );
    }
}

/// A network namespace, deleted when dropped.
struct Namespace(String);

impl Namespace {
    fn new(test: &str) -> Self {
        let short: String = test
            .rsplit("::")
            .next()
            .unwrap_or(test)
            .chars()
            .take(20)
            .collect();
        let name = format!("mcps-{}-{short}", std::process::id());
        run("ip", &["netns", "add", &name]);
        let namespace = Self(name);
        run(
            "ip",
            &[
                "netns",
                "exec",
                &namespace.0,
                "ip",
                "link",
                "set",
                "lo",
                "up",
            ],
        );
        namespace
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.0])
            .status();
    }
}

fn run(program: &str, args: &[&str]) {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|err| {
            panic!("cannot run {program} (root, iproute2 and iptables are needed): {err}")
        });
    assert!(
        output.status.success(),
        "{program} {args:?} failed (root, iproute2 and iptables are needed): {}",
        String::from_utf8_lossy(&output.stderr)
    );
}
