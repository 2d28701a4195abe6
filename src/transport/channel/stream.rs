//! One notification channel, served from a [`Source`] as a sequence of
//! frames.

use super::frame::Frame;
use crate::context::OpenContext;
use crate::error::OpenError;
use crate::filter::Filter;
use crate::serve::ListenService;
use crate::serve::pull::{Pull, Pulled};
use crate::source::{CloseReason, Source, SourceHandle};

/// One Diverge notification channel: every notification the source
/// produces, one frame each, in publish order.
///
/// Served under the same rules as a listen stream: the next event is pulled
/// only when the next frame is asked for (after the previous one was
/// written), and the source is closed whatever ends the channel. There is
/// no filter: the source is opened with [`Filter::everything`]. Nothing is
/// replayed; a new channel starts from now.
///
/// It ends in one of two ways: the source completes and
/// [`next_frame`](Self::next_frame) returns `None` (close the channel
/// cleanly, with no error frame), or the source fails (a listener
/// disconnected for overflow, say) and the last frame is an error frame.
pub struct ChannelStream<H: SourceHandle> {
    /// The source, and the principal's slot, given back when the channel
    /// ends.
    pull: Pull<H>,
}

impl<S: Source + 'static> ListenService<S> {
    /// Opens a notification channel on this service's source.
    ///
    /// # Errors
    ///
    /// The source's [`OpenError`] (a full hub, say): the ask cannot be
    /// served, and the channel should close cleanly without any frame.
    pub fn open_channel(&self) -> Result<ChannelStream<S::Handle>, OpenError> {
        self.open_channel_with(OpenContext::default())
    }

    /// Opens a notification channel asked for with `context`, under the
    /// same [authorizer](ListenService::with_authorizer) and
    /// [per-principal limit](ListenService::with_max_streams_per_principal)
    /// as listen streams: the authorizer sees [`Filter::everything`] and
    /// may narrow it.
    ///
    /// # Errors
    ///
    /// As [`open_channel`](Self::open_channel), or the authorizer's or the
    /// limit's refusal.
    pub fn open_channel_with(
        &self,
        context: OpenContext,
    ) -> Result<ChannelStream<S::Handle>, OpenError> {
        let mut context = context;
        let (opened, lease) = self.admit(&mut context, &Filter::everything())?;
        Ok(ChannelStream {
            pull: Pull::new(opened.handle, lease),
        })
    }
}

impl<H: SourceHandle> ChannelStream<H> {
    /// The next frame to write, or `None` once the channel has ended (after
    /// a graceful end, or after its error frame).
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe when the source's `next` is (as the [`Hub`](crate::Hub)'s
    /// is).
    pub async fn next_frame(&mut self) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        match self.pull.next().await? {
            Pulled::Event(event) => Frame::encode_event(&event, &mut out),
            Pulled::Complete => return None,
            Pulled::Failed(error) => Frame::encode_error(&error, &mut out),
        }
        Some(out)
    }

    /// Ends the channel for `reason` without another frame: the peer closed
    /// the socket, or the transport is gone.
    pub fn cancel(&mut self, reason: CloseReason) {
        self.pull.finish(reason);
    }

    /// Whether the channel has ended.
    pub fn is_finished(&self) -> bool {
        self.pull.is_finished()
    }
}

impl<H: SourceHandle> std::fmt::Debug for ChannelStream<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChannelStream")
            .field("finished", &self.is_finished())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Event, Hub, Overflow};

    #[tokio::test]
    async fn every_notification_becomes_a_frame_then_the_end_is_clean() {
        let hub = Hub::new();
        let service = ListenService::new(hub.clone());
        let mut channel = service.open_channel().unwrap();
        hub.notify_tools_list_changed();
        hub.notify_resource_updated("file:///anything");
        hub.publish(Event::extension("vendor/x", Default::default(), None));
        hub.complete();
        let mut frames = Vec::new();
        while let Some(frame) = channel.next_frame().await {
            frames.push(String::from_utf8(frame[1..].to_vec()).unwrap());
        }
        assert_eq!(
            frames,
            [
                r#"{"method":"notifications/tools/list_changed"}"#,
                r#"{"method":"notifications/resources/updated","params":{"uri":"file:///anything"}}"#,
                r#"{"method":"vendor/x"}"#,
            ]
        );
        assert_eq!(hub.stats().listeners_closed.complete, 1);
    }

    #[tokio::test]
    async fn overflow_ends_with_an_error_frame() {
        let hub = Hub::builder()
            .capacity(1)
            .overflow(Overflow::Disconnect)
            .build();
        let mut channel = ListenService::new(hub.clone()).open_channel().unwrap();
        hub.notify_tools_list_changed();
        hub.notify_tools_list_changed();
        let frame = channel.next_frame().await.unwrap();
        assert_eq!(frame[0], crate::transport::channel::ERROR_TAG);
        let Ok(Frame::Error(error)) = Frame::decode(&frame) else {
            panic!()
        };
        assert_eq!(error.code.0, -32000);
        assert_eq!(channel.next_frame().await, None);
    }

    #[test]
    fn an_ask_that_cannot_be_served_is_refused_before_any_frame() {
        let hub = Hub::builder().max_listeners(0).build();
        assert!(matches!(
            ListenService::new(hub).open_channel(),
            Err(OpenError::LimitReached { limit: 0 })
        ));
    }
}
