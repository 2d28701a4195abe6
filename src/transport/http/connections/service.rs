//! The service hyper calls for each request of a connection: the router,
//! with the connection's ticket moved through its phases as the request's
//! body ends and its answer is written.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::response::Response;
use hyper::body::{Frame, Incoming, SizeHint};
use tower_service::Service;

use super::waiting::{Ticket, Tracked};
use crate::transport::http::admission::Peer;

/// The router as hyper's service, moving `ticket` through its phases:
/// reading until the request's body ends, answering until the response's
/// body is written, then idle.
#[derive(Clone)]
pub(in crate::transport::http) struct TrackedService {
    router: Router,
    ticket: Arc<Ticket>,
    /// The connection's client, in each request's extensions, where
    /// admission limits are set.
    peer: Option<Peer>,
}

impl Tracked {
    /// The service hyper calls for the connection's requests.
    pub(in crate::transport::http) fn service(
        &self,
        router: Router,
        peer: Option<Peer>,
    ) -> TrackedService {
        TrackedService {
            router,
            ticket: Arc::clone(self.ticket()),
            peer,
        }
    }
}

impl hyper::service::Service<hyper::Request<Incoming>> for TrackedService {
    type Response = Response<Answer>;
    type Error = Infallible;
    type Future = Answering;

    fn call(&self, request: hyper::Request<Incoming>) -> Self::Future {
        self.ticket.request_started();
        let ticket = Arc::clone(&self.ticket);
        let mut request: Request = request.map(|body| {
            if body.is_end_stream() {
                ticket.request_read();
                Body::new(body)
            } else {
                Body::new(RequestBody {
                    body,
                    ticket: Some(Arc::clone(&ticket)),
                })
            }
        });
        if let Some(peer) = &self.peer {
            request.extensions_mut().insert(peer.clone());
        }
        Answering {
            routed: self.router.clone().call(request),
            ticket: Some(ticket),
        }
    }
}

/// A request's body: the request is whole once it ends, or once its
/// handler lets it go (it answers without the rest).
struct RequestBody {
    body: Incoming,
    /// Until the request is whole.
    ticket: Option<Arc<Ticket>>,
}

impl RequestBody {
    fn whole(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            ticket.request_read();
        }
    }
}

impl HttpBody for RequestBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) || self.body.is_end_stream() {
            self.whole();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for RequestBody {
    fn drop(&mut self) {
        self.whole();
    }
}

/// The router's answer on its way: its body, once it comes, is watched
/// until it is written.
pub(in crate::transport::http) struct Answering {
    routed: <Router as Service<Request>>::Future,
    ticket: Option<Arc<Ticket>>,
}

impl Future for Answering {
    type Output = Result<Response<Answer>, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let response = match std::task::ready!(Pin::new(&mut this.routed).poll(cx)) {
            Ok(response) => response,
            Err(never) => match never {},
        };
        let ticket = this.ticket.take();
        Poll::Ready(Ok(response.map(|body| Answer { body, ticket })))
    }
}

/// A response's body: the connection is idle once hyper has written it
/// (and dropped it).
pub(in crate::transport::http) struct Answer {
    body: Body,
    ticket: Option<Arc<Ticket>>,
}

impl HttpBody for Answer {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for Answer {
    fn drop(&mut self) {
        if let Some(ticket) = &self.ticket {
            ticket.answered();
        }
    }
}
