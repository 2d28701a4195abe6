//! The demand hooks' own tests: attach, detach, grace, per principal.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

fn uri(u: &str) -> InterestKey {
    InterestKey::Resource(u.into())
}

/// Hooks that count their calls; attach refuses `file:///refused`,
/// panics for `file:///panics`, and takes 10 ms.
fn counting() -> (Demand, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let (attached, detached) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (a, d) = (attached.clone(), detached.clone());
    let demand = Demand::new(move |key| {
        let a = a.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            a.fetch_add(1, Ordering::SeqCst);
            match key {
                InterestKey::Resource(u) if u == "file:///refused" => {
                    Err(ErrorData::invalid_params("not here", None))
                }
                InterestKey::Resource(u) if u == "file:///panics" => panic!("hook bug"),
                _ => Ok(()),
            }
        }
    })
    .on_detach(move |_| {
        d.fetch_add(1, Ordering::SeqCst);
    })
    .with_grace(Duration::from_millis(50));
    (demand, attached, detached)
}

/// A stream arriving while its key's detach runs waits for it, and
/// then for a new attach: the hooks never overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_arriving_during_a_detach_waits_for_it_then_attaches_anew() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let (attaching, detaching) = (calls.clone(), calls.clone());
    let demand = Demand::new(move |_| {
        attaching.lock().push("attach");
        async { Ok(()) }
    })
    .on_detach(move |_| {
        detaching.lock().push("detach begins");
        std::thread::sleep(Duration::from_millis(200));
        detaching.lock().push("detach returns");
    })
    .with_grace(Duration::from_millis(20));
    let keys = demand.keys();
    let (held, wait) = keys.hold(None, [uri("file:///a")]);
    wait.unwrap().await.unwrap();
    drop(held);
    // The grace ran out; the detach is in its sleep.
    while !calls.lock().contains(&"detach begins") {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (_back, wait) = keys.hold(None, [uri("file:///a")]);
    wait.expect("it waits for the detach").await.unwrap();
    assert_eq!(
        *calls.lock(),
        ["attach", "detach begins", "detach returns", "attach"]
    );
}

#[tokio::test(start_paused = true)]
async fn concurrent_first_holders_cause_one_attach_and_the_last_one_detach() {
    let (demand, attached, detached) = counting();
    let keys = demand.keys();
    let (first, wait_first) = keys.hold(None, [uri("file:///a")]);
    let (second, wait_second) = keys.hold(None, [uri("file:///a")]);
    wait_first.unwrap().await.unwrap();
    wait_second.unwrap().await.unwrap();
    assert_eq!(attached.load(Ordering::SeqCst), 1);
    let (third, wait) = keys.hold(None, [uri("file:///a")]);
    assert!(wait.is_none(), "an attached key waits for nothing");
    drop((first, second, third));
    tokio::time::sleep(Duration::from_millis(20)).await;
    // Back within the grace: still attached, nothing to wait for.
    let (back, wait) = keys.hold(None, [uri("file:///a")]);
    assert!(wait.is_none());
    drop(back);
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert_eq!(detached.load(Ordering::SeqCst), 1);
    assert_eq!(keys.held(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_grace_from_an_earlier_idle_spell_never_cuts_a_later_one_short() {
    let (demand, _, detached) = counting();
    let keys = demand.keys();
    let (hold, wait) = keys.hold(None, [uri("file:///a")]);
    wait.unwrap().await.unwrap();
    drop(hold); // a grace of 50 ms starts
    tokio::time::sleep(Duration::from_millis(10)).await;
    let (again, wait) = keys.hold(None, [uri("file:///a")]);
    assert!(wait.is_none());
    tokio::time::sleep(Duration::from_millis(10)).await;
    drop(again); // a second grace, to 70 ms from the first drop
    tokio::time::sleep(Duration::from_millis(40)).await;
    assert_eq!(
        detached.load(Ordering::SeqCst),
        0,
        "the first grace is void"
    );
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(detached.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_refused_or_panicking_attach_refuses_and_is_never_detached() {
    let (demand, attached, detached) = counting();
    let keys = demand.keys();
    let (hold, wait) = keys.hold(None, [uri("file:///a"), uri("file:///refused")]);
    let refused = wait.unwrap().await.unwrap_err();
    assert_eq!(refused.message, "not here");
    drop(hold);
    let (hold, wait) = keys.hold(None, [uri("file:///panics")]);
    assert_eq!(
        wait.unwrap().await.unwrap_err().code,
        ErrorCode::INTERNAL_ERROR
    );
    drop(hold);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(attached.load(Ordering::SeqCst), 3, "one attach per key");
    // Only the key that did attach is detached.
    assert_eq!(detached.load(Ordering::SeqCst), 1);
    assert_eq!(keys.held(), 0);
}

/// Per principal, each principal's key and presence attach and detach
/// apart, told their principal; a stream without one is a principal
/// of its own (`None`).
#[tokio::test(start_paused = true)]
async fn per_principal_hooks_hold_each_principals_keys_and_presence_apart() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let (attaching, detaching) = (calls.clone(), calls.clone());
    let name = |principal: &Option<Principal>, key: &Option<InterestKey>| {
        let who = principal.as_ref().map_or("-", Principal::as_str).to_owned();
        match key {
            Some(InterestKey::Resource(uri)) => format!("{who} {uri}"),
            _ => format!("{who} presence"),
        }
    };
    let demand = Demand::per_principal(move |principal, key| {
        attaching
            .lock()
            .push(format!("attach {}", name(&principal, &key)));
        async { Ok(()) }
    })
    .on_principal_detach(move |principal, key| {
        detaching
            .lock()
            .push(format!("detach {}", name(&principal, &key)));
    })
    .with_grace(Duration::from_millis(50));
    let keys = demand.keys();
    let (alice, bob) = (Principal::new("alice"), Principal::new("bob"));
    let (a1, wait) = keys.hold(Some(&alice), [uri("file:///a")]);
    wait.unwrap().await.unwrap();
    let (a2, wait) = keys.hold(Some(&alice), []);
    assert!(wait.is_none(), "alice's presence is attached");
    let (b, wait) = keys.hold(Some(&bob), [uri("file:///a")]);
    wait.unwrap().await.unwrap();
    let (anonymous, wait) = keys.hold(None, []);
    wait.unwrap().await.unwrap();
    let mut attached = calls.lock().clone();
    attached.sort();
    assert_eq!(
        attached,
        [
            "attach - presence",
            "attach alice file:///a",
            "attach alice presence",
            "attach bob file:///a",
            "attach bob presence",
        ]
    );
    calls.lock().clear();
    drop((a1, b, anonymous));
    tokio::time::sleep(Duration::from_millis(60)).await;
    let mut detached = calls.lock().clone();
    detached.sort();
    // Alice's second stream still holds her presence.
    assert_eq!(
        detached,
        [
            "detach - presence",
            "detach alice file:///a",
            "detach bob file:///a",
            "detach bob presence",
        ]
    );
    drop(a2);
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert_eq!(calls.lock().last().unwrap(), "detach alice presence");
    assert_eq!(keys.held(), 0);
}

/// Shared hooks never see a principal nor a presence.
#[tokio::test(start_paused = true)]
async fn shared_hooks_hold_a_key_once_for_every_principal() {
    let (demand, attached, detached) = counting();
    let keys = demand.keys();
    let (a, wait) = keys.hold(Some(&Principal::new("alice")), [uri("file:///a")]);
    wait.unwrap().await.unwrap();
    let (b, wait) = keys.hold(Some(&Principal::new("bob")), [uri("file:///a")]);
    assert!(wait.is_none());
    drop((a, b));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(attached.load(Ordering::SeqCst), 1);
    assert_eq!(detached.load(Ordering::SeqCst), 1);
}

/// Per principal hooks that log each presence's attach and detach.
fn presences() -> (Demand, Arc<Mutex<Vec<String>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let (attaching, detaching) = (log.clone(), log.clone());
    let demand = Demand::per_principal(move |principal: Option<Principal>, key| {
        let log = attaching.clone();
        async move {
            if key.is_none() {
                let who = principal.map_or("nobody".into(), |p| p.as_str().to_owned());
                log.lock().push(format!("attach {who}"));
            }
            Ok(())
        }
    })
    .on_principal_detach(move |principal, key| {
        if key.is_none() {
            let who = principal.map_or("nobody".into(), |p| p.as_str().to_owned());
            detaching.lock().push(format!("detach {who}"));
        }
    })
    .with_grace(Duration::from_millis(50));
    (demand, log)
}

#[tokio::test(start_paused = true)]
async fn a_presence_held_apart_from_streams_shares_their_attach_and_one_grace() {
    let (demand, log) = presences();
    let alice = Principal::new("alice");
    let request = demand.hold_presence(Some(&alice)).await.unwrap();
    // A stream of alice's, on a service with a clone of the demand, finds
    // her presence attached.
    let keys = demand.clone().keys();
    let (stream, wait) = keys.hold(Some(&alice), [uri("file:///a")]);
    wait.expect("the URI attaches").await.unwrap();
    drop(request);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(*log.lock(), ["attach alice"], "the stream still holds it");
    drop(stream);
    tokio::time::sleep(Duration::from_millis(45)).await;
    assert_eq!(log.lock().len(), 1, "within the grace");
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(*log.lock(), ["attach alice", "detach alice"]);
}

#[tokio::test(start_paused = true)]
async fn a_builder_method_makes_a_demand_of_its_own_and_hooks_not_per_principal_hold_no_presence() {
    let (demand, log) = presences();
    let other = demand.clone().with_grace(Duration::from_millis(10));
    assert!(!Arc::ptr_eq(&demand.keys(), &other.keys()));
    assert!(Arc::ptr_eq(&demand.keys(), &demand.clone().keys()));
    let (plain, attached, _) = counting();
    let nothing = plain.hold_presence(Some(&Principal::new("bob"))).await;
    assert!(nothing.is_ok());
    assert_eq!(
        (attached.load(Ordering::SeqCst), plain.keys().held()),
        (0, 0)
    );
    assert!(log.lock().is_empty());
}
