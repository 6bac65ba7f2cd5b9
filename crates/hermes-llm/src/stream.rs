//! Turning a streamed HTTP response body into an [`EventStream`], whatever the wire format: a
//! [`Framing`] cuts the bytes into frames (SSE events, AWS event-stream messages) and each
//! format supplies a [`Decode`] that maps frames to [`StreamEvent`]s and says when the answer
//! is complete. A body that ends before that is a [`LlmError::StreamCut`], so callers can keep
//! what arrived and resume.

use std::collections::VecDeque;

use futures_util::StreamExt;
use hermes_protocol::StreamEvent;

use crate::sse::{SseEvent, SseParser};
use crate::{EventStream, LlmError};

/// Cuts a byte stream into frames, whatever the pieces the network delivers.
pub(crate) trait Framing: Send + 'static {
    type Frame;
    /// The frames these bytes complete.
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Self::Frame>, String>;
    /// The body ended: a frame still being built, if the format allows one.
    fn finish(&mut self) -> Option<Self::Frame> {
        None
    }
}

impl Framing for SseParser {
    type Frame = SseEvent;
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, String> {
        SseParser::push(self, bytes)
    }
    fn finish(&mut self) -> Option<SseEvent> {
        SseParser::finish(self)
    }
}

/// One wire format's reading of its frames.
pub(crate) trait Decode<F>: Send + 'static {
    /// The stream events of one frame (an `Err` ends the stream).
    fn decode(&mut self, frame: F) -> Result<Vec<StreamEvent>, LlmError>;
    /// Stop reading: the server signalled the end (`[DONE]`, `message_stop`, ...).
    fn is_done(&self) -> bool;
    /// The model finished its answer (a finish reason was seen).
    fn is_complete(&self) -> bool;
}

struct State<P, D> {
    body: std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    parser: P,
    decoder: D,
    queue: VecDeque<Result<StreamEvent, LlmError>>,
    closed: bool,
}

impl<P: Framing, D: Decode<P::Frame>> State<P, D> {
    fn handle(&mut self, event: P::Frame) {
        if self.closed {
            return;
        }
        match self.decoder.decode(event) {
            Ok(events) => self.queue.extend(events.into_iter().map(Ok)),
            Err(e) => self.fail(e),
        }
        if self.decoder.is_done() {
            self.closed = true;
        }
    }

    fn fail(&mut self, error: LlmError) {
        self.closed = true;
        self.queue.push_back(Err(error));
    }
}

/// The events of a response: decoded as SSE, or — when the server answered one JSON document
/// despite `stream: true` — parsed whole by `whole`.
pub(crate) async fn events_of<D: Decode<SseEvent>>(
    response: reqwest::Response,
    decoder: D,
    whole: fn(&[u8]) -> Result<Vec<StreamEvent>, LlmError>,
) -> Result<EventStream, LlmError> {
    if crate::http::is_json(&response) {
        let bytes = response
            .bytes()
            .await
            .map_err(|e| LlmError::from_reqwest(&e, true))?;
        let events = whole(&bytes)?;
        return Ok(Box::pin(futures_util::stream::iter(
            events.into_iter().map(Ok),
        )));
    }
    Ok(decode_body(response, SseParser::new(), decoder))
}

/// Streams the decoded events of a response body.
pub(crate) fn decode_body<P, D>(response: reqwest::Response, parser: P, decoder: D) -> EventStream
where
    P: Framing,
    P::Frame: Send,
    D: Decode<P::Frame>,
{
    let state = State {
        body: Box::pin(response.bytes_stream()),
        parser,
        decoder,
        queue: VecDeque::new(),
        closed: false,
    };
    Box::pin(futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(item) = st.queue.pop_front() {
                return Some((item, st));
            }
            if st.closed {
                return None;
            }
            match st.body.next().await {
                Some(Ok(bytes)) => match st.parser.push(&bytes) {
                    Ok(events) => {
                        for ev in events {
                            st.handle(ev);
                        }
                    }
                    Err(e) => st.fail(LlmError::Decode(e)),
                },
                Some(Err(e)) => st.fail(LlmError::from_reqwest(&e, true)),
                None => {
                    if let Some(ev) = st.parser.finish() {
                        st.handle(ev);
                    }
                    if !st.closed {
                        st.closed = true;
                        if !st.decoder.is_complete() {
                            st.queue.push_back(Err(LlmError::StreamCut(
                                "the response ended before the model finished".into(),
                            )));
                        }
                    }
                }
            }
        }
    }))
}
