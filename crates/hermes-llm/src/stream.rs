//! Turning an HTTP response body of Server-Sent Events into an [`EventStream`], whatever the
//! wire format: each format supplies an [`SseDecoder`] that maps SSE events to
//! [`StreamEvent`]s and says when the answer is complete. A body that ends before that is a
//! [`LlmError::StreamCut`], so callers can keep what arrived and resume.

use std::collections::VecDeque;

use futures_util::StreamExt;
use hermes_protocol::StreamEvent;

use crate::sse::{SseEvent, SseParser};
use crate::{EventStream, LlmError};

/// One wire format's reading of its SSE events.
pub(crate) trait SseDecoder: Send + 'static {
    /// The stream events of one SSE event (an `Err` ends the stream).
    fn decode(&mut self, event: SseEvent) -> Result<Vec<StreamEvent>, LlmError>;
    /// Stop reading: the server signalled the end (`[DONE]`, `message_stop`, ...).
    fn is_done(&self) -> bool;
    /// The model finished its answer (a finish reason was seen).
    fn is_complete(&self) -> bool;
}

struct State<D> {
    body: std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    parser: SseParser,
    decoder: D,
    queue: VecDeque<Result<StreamEvent, LlmError>>,
    closed: bool,
}

impl<D: SseDecoder> State<D> {
    fn handle(&mut self, event: SseEvent) {
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
pub(crate) async fn events_of<D: SseDecoder>(
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
    Ok(decode_sse(response, decoder))
}

/// Streams the decoded events of an SSE response.
fn decode_sse<D: SseDecoder>(response: reqwest::Response, decoder: D) -> EventStream {
    let state = State {
        body: Box::pin(response.bytes_stream()),
        parser: SseParser::new(),
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
