//! Temporary.
use mcp_subscriptions::{Audience, Event, Filter, Hub, Next, OpenContext, Principal};
use std::time::Instant;
fn bench(tenants: usize, scoped: bool) -> f64 {
    let hub = Hub::builder().max_listeners(tenants * 100).build();
    let f = Filter::new().with_tools_list_changed();
    let mut target = Vec::new();
    let mut others = Vec::new();
    for t in 0..tenants {
        for u in 0..100 {
            let mut c = OpenContext::default().with_principal(Principal::new(format!("u{t}-{u}")));
            if scoped {
                c = c.with_label(format!("tenant:{t}"));
            }
            let l = hub.listen_with(&f, &c).unwrap();
            if t == tenants / 2 {
                target.push(l)
            } else {
                others.push(l)
            }
        }
    }
    let ev = if scoped {
        Event::tools_list_changed()
            .with_audience(Audience::label(format!("tenant:{}", tenants / 2)))
    } else {
        Event::tools_list_changed()
    };
    let iters = 20_000;
    let t = Instant::now();
    for _ in 0..iters {
        hub.publish(ev.clone());
        for l in &mut target {
            assert!(matches!(l.try_next(), Some(Next::Event(_))));
        }
    }
    t.elapsed().as_nanos() as f64 / iters as f64
}
fn main() {
    for _ in 0..3 {
        println!(
            "distinct principals: scoped 1000 tenants {:.0} ns, unscoped 100 {:.0} ns",
            bench(1000, true),
            bench(1, false)
        );
    }
}
