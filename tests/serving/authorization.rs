//! Who may watch what: an authorizer that grants a subset or refuses before
//! any acknowledgement, over HTTP and stdio, and limits per principal.

#![cfg(all(feature = "http", feature = "stdio", feature = "tasks"))]

use std::time::Duration;

use crate::support::http::{app, listen, post, serve, with_user_header};
use mcp_subscriptions::error::OpenError;
use mcp_subscriptions::stdio::StdioTransport;
use mcp_subscriptions::{
    CapPolicy, Filter, Grant, Hub, ListenService, OpenContext, audience::Principal,
};
use serde_json::{Value, json};

/// Each principal may watch the tools list and its own resources,
/// `file:///<principal>/...`; a request without a principal is refused.
fn own_resources(context: &OpenContext, requested: &Filter) -> Result<Filter, OpenError> {
    let Some(principal) = &context.principal else {
        return Err(OpenError::Refused(rmcp::model::ErrorData::invalid_request(
            "authentication required",
            None,
        )));
    };
    let own = format!("file:///{principal}/");
    let mut allowed = Filter::new().with_tools_list_changed();
    for uri in requested
        .resource_subscriptions()
        .filter(|uri| uri.starts_with(&own))
    {
        allowed = allowed.with_resource(uri);
    }
    Ok(allowed)
}

/// An app whose requests carry the principal named in `x-user`, as an
/// authentication layer would establish it.
fn authenticated(listen: ListenService<Hub>) -> axum::Router {
    with_user_header(app(listen))
}

fn asks_for_both() -> Value {
    json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///alice/a", "file:///bob/b"]})
}

#[tokio::test]
async fn over_http_a_principal_is_granted_only_what_it_may_read() {
    let hub = Hub::new();
    let url = serve(authenticated(
        ListenService::new(hub.clone()).with_authorizer(own_resources),
    ))
    .await;
    let mut alice = post(
        &url,
        &listen(json!(1), asks_for_both(), &[]),
        &[("x-user", "alice")],
    )
    .await;
    let ack = alice.next().await.unwrap();
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///alice/a"]}),
        "the acknowledgement says exactly what was granted"
    );
    hub.notify_resource_updated("file:///bob/b");
    hub.notify_resource_updated("file:///alice/a");
    let first = alice.next().await.unwrap();
    assert_eq!(
        first["params"]["uri"], "file:///alice/a",
        "bob's update never reached alice"
    );
    assert!(alice.is_quiet(Duration::from_millis(100)).await);
}

#[tokio::test]
async fn over_http_a_refusal_comes_before_any_acknowledgement() {
    let hub = Hub::new();
    let url = serve(authenticated(
        ListenService::new(hub.clone()).with_authorizer(own_resources),
    ))
    .await;
    let answer = post(&url, &listen(json!(2), asks_for_both(), &[]), &[]).await;
    let reply = answer.json().await;
    assert_eq!(reply["id"], 2);
    assert_eq!(reply["error"]["code"], -32600);
    assert_eq!(reply["error"]["message"], "authentication required");
    assert_eq!(hub.stats().listeners_opened, 0, "nothing was opened");
}

#[tokio::test]
async fn over_stdio_the_connection_is_served_as_its_principal() {
    let hub = Hub::new();
    let service = ListenService::new(hub.clone()).with_authorizer(own_resources);
    let (_, mut pipe) = crate::support::stdio::serve(64 * 1024, |input, output| {
        StdioTransport::new(service, input, output).with_principal(Principal::new("alice"))
    });
    pipe.send(&listen(json!("s"), asks_for_both(), &[])).await;
    assert_eq!(
        pipe.read().await["params"]["notifications"]["resourceSubscriptions"],
        json!(["file:///alice/a"])
    );
    hub.notify_resource_updated("file:///bob/b");
    hub.notify_resource_updated("file:///alice/a");
    assert_eq!(pipe.read().await["params"]["uri"], "file:///alice/a");
}

#[tokio::test]
async fn a_principal_at_its_limit_is_refused_while_others_open_and_a_cancel_frees_a_slot() {
    let hub = Hub::new();
    let url = serve(authenticated(
        ListenService::new(hub.clone()).with_max_streams_per_principal(1),
    ))
    .await;
    let tools = || listen(json!(1), json!({"toolsListChanged": true}), &[]);
    let mut first = post(&url, &tools(), &[("x-user", "alice")]).await;
    first.next().await.expect("alice's first stream");

    let refused = post(&url, &tools(), &[("x-user", "alice")])
        .await
        .json()
        .await;
    assert_eq!(refused["error"]["code"], -32603);
    assert_eq!(refused["error"]["message"], "Subscription limit reached");

    let mut bob = post(&url, &tools(), &[("x-user", "bob")]).await;
    bob.next().await.expect("bob is not limited by alice");

    // Alice cancels by closing her response; her slot comes back.
    drop(first);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let mut again = post(&url, &tools(), &[("x-user", "alice")]).await;
        if again.is_stream() {
            let ack = again.next().await.unwrap();
            assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cancelled stream's slot was not freed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn under_replace_oldest_a_principal_at_its_cap_ends_its_oldest_and_is_admitted() {
    let hub = Hub::new();
    let url = serve(authenticated(
        ListenService::new(hub.clone())
            .with_max_streams_per_principal(2)
            .with_cap_policy(CapPolicy::ReplaceOldest),
    ))
    .await;
    let tools = |id: u32| listen(json!(id), json!({"toolsListChanged": true}), &[]);
    let mut streams = Vec::new();
    for id in 1..=2 {
        let mut stream = post(&url, &tools(id), &[("x-user", "alice")]).await;
        stream.next().await.expect("acknowledged");
        streams.push(stream);
    }
    let mut bob = post(&url, &tools(9), &[("x-user", "bob")]).await;
    bob.next().await.expect("bob's stream");

    let mut third = post(&url, &tools(3), &[("x-user", "alice")]).await;
    let ack = third.next().await.expect("admitted at once");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    let replaced = streams[0].next().await.expect("the oldest ends");
    assert_eq!(replaced["id"], 1);
    assert_eq!(replaced["error"]["code"], -32005);
    assert_eq!(replaced["error"]["data"], json!({"reason": "replaced"}));
    assert!(
        streams[0].next().await.is_none(),
        "and its response with it"
    );

    hub.notify_tools_list_changed();
    for stream in [&mut streams[1], &mut third, &mut bob] {
        let event = stream.next().await.expect("the others go on");
        assert_eq!(event["method"], "notifications/tools/list_changed");
    }
    let stats = hub.stats();
    assert_eq!(stats.listeners_closed.replaced, 1);
    assert_eq!(stats.listeners_active, 3);
}

/// A stream whose expiry passed while an event waited ends with the
/// expiry, not with the event: the lease is looked at before the source.
#[tokio::test]
async fn a_stream_past_its_expiry_ends_before_it_delivers_what_waits() {
    let hub = Hub::new();
    let expires = std::time::Instant::now() + Duration::from_millis(50);
    let service = ListenService::new(hub.clone()).with_authorizer(
        move |_: &OpenContext, requested: &Filter| -> Result<Grant, OpenError> {
            Ok(Grant::new(requested.clone()).with_expiry(expires))
        },
    );
    let params = json!({"notifications": {"toolsListChanged": true}});
    // Twenty, so that a race between the two would show.
    let mut streams = Vec::new();
    for id in 0..20 {
        let mut stream = service
            .open(rmcp::model::RequestId::Number(id), Some(&params))
            .unwrap();
        stream.next_message().await.expect("the acknowledgement");
        streams.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    hub.notify_tools_list_changed();
    for stream in &mut streams {
        let end: Value =
            serde_json::from_slice(&stream.next_message().await.unwrap().to_vec()).unwrap();
        assert_eq!(end["error"]["data"]["reason"], "expired", "{end}");
        assert!(stream.next_message().await.is_none());
    }
    assert_eq!(hub.stats().listeners_closed.expired, 20);
}
