#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_subscriptions_fuzz::first_request(data));
