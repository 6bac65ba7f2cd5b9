//! Turning a streamed HTTP response body into an [`EventStream`], whatever the wire format: a
//! [`Framing`] cuts the bytes into frames (SSE events, AWS event-stream messages) and each
//! format supplies a [`Decode`] that maps frames to [`StreamEvent`]s and says when the answer
//! is complete. A body that ends before that is a [`LlmError::StreamCut`], so callers can keep
//! what arrived and resume.
//!
//! Every response is bounded ([`StreamLimits`]): the answer it carries, the size of one frame,
//! the silence between events that carry something (keep-alives, comments and empty events do
//! not count), and its whole duration. Crossing a bound ends the stream with
//! [`LlmError::Limit`]; nothing is buffered beyond the bound.

use std::collections::VecDeque;

use futures_util::StreamExt;
use hermes_protocol::StreamEvent;
use tokio::time::Instant;

use crate::http::{CallCtx, Sent};
use crate::limits::{LimitExceeded, StreamLimits};
use crate::sse::{SseError, SseEvent, SseParser};
use crate::{EventStream, LlmError};

/// Why bytes could not be cut into frames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FrameError {
    /// One frame grew past the cap.
    TooLarge { limit: usize },
    /// Bytes the framing cannot read (only the binary AWS framing can be malformed).
    #[cfg_attr(not(feature = "bedrock"), allow(dead_code))]
    Malformed(String),
}

/// Cuts a byte stream into frames, whatever the pieces the network delivers.
pub(crate) trait Framing: Send + 'static {
    type Frame;
    /// The frames these bytes complete.
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Self::Frame>, FrameError>;
    /// The body ended: a frame still being built, if the format allows one.
    fn finish(&mut self) -> Option<Self::Frame> {
        None
    }
}

impl Framing for SseParser {
    type Frame = SseEvent;
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, FrameError> {
        SseParser::push(self, bytes).map_err(|e| match e {
            SseError::EventTooLarge { limit } => FrameError::TooLarge { limit },
        })
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
    /// The events of a whole (non-streamed) answer, as this format refines them.
    fn decode_whole(&mut self, events: Vec<StreamEvent>) -> Result<Vec<StreamEvent>, LlmError> {
        Ok(events)
    }
}

/// Bytes of answer an event adds (what the caller keeps of it).
fn weight(event: &StreamEvent) -> usize {
    match event {
        StreamEvent::TextDelta(t) | StreamEvent::ReasoningDelta(t) => t.len(),
        StreamEvent::ToolCallDelta {
            id,
            name,
            arguments,
            ..
        } => {
            arguments.len()
                + id.as_ref().map_or(0, String::len)
                + name.as_ref().map_or(0, String::len)
        }
        StreamEvent::ReasoningDetail(v) => v.to_string().len(),
        StreamEvent::Usage(_) | StreamEvent::Finish(_) => 0,
    }
}

/// Whether an event carries something: anything but empty text.
fn is_progress(event: &StreamEvent) -> bool {
    match event {
        StreamEvent::TextDelta(t) | StreamEvent::ReasoningDelta(t) => !t.is_empty(),
        _ => true,
    }
}

/// The running account of one response against its limits.
struct Budget {
    limits: StreamLimits,
    deadline: Instant,
    last_progress: Instant,
    answer_bytes: usize,
}

impl Budget {
    fn new(ctx: &CallCtx) -> Budget {
        Budget {
            limits: ctx.limits,
            deadline: ctx.deadline(),
            last_progress: Instant::now(),
            answer_bytes: 0,
        }
    }

    /// When the next wait must end, and which bound ends it.
    fn next_deadline(&self) -> (Instant, LimitExceeded) {
        let idle_end = self.last_progress + self.limits.idle;
        if idle_end < self.deadline {
            (
                idle_end,
                LimitExceeded::Stalled {
                    after: self.limits.idle,
                },
            )
        } else {
            (
                self.deadline,
                LimitExceeded::Deadline {
                    after: self.limits.total,
                },
            )
        }
    }

    /// Accounts for decoded events; an error when the answer outgrew its cap.
    fn record(&mut self, events: &[StreamEvent]) -> Result<(), LimitExceeded> {
        if events.iter().any(is_progress) {
            self.last_progress = Instant::now();
        }
        self.answer_bytes = self
            .answer_bytes
            .saturating_add(events.iter().map(weight).sum());
        if self.answer_bytes > self.limits.max_answer_bytes {
            return Err(LimitExceeded::AnswerTooLarge {
                limit: self.limits.max_answer_bytes,
            });
        }
        Ok(())
    }
}

type Body =
    std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>;

struct State<P, D> {
    body: Body,
    parser: P,
    decoder: D,
    queue: VecDeque<Result<StreamEvent, LlmError>>,
    closed: bool,
    budget: Budget,
    ctx: CallCtx,
}

impl<P: Framing, D: Decode<P::Frame>> State<P, D> {
    fn handle(&mut self, event: P::Frame) {
        if self.closed {
            return;
        }
        match self.decoder.decode(event) {
            Ok(events) => {
                if let Err(limit) = self.budget.record(&events) {
                    // What was decoded before the cap still goes out; nothing after it.
                    self.fail(LlmError::Limit(limit));
                    return;
                }
                self.queue.extend(events.into_iter().map(Ok));
            }
            Err(e) => self.fail(e),
        }
        if self.decoder.is_done() {
            self.closed = true;
        }
    }

    fn fail(&mut self, error: LlmError) {
        self.closed = true;
        self.queue.push_back(Err(error.redacted(&self.ctx.secrets)));
    }
}

/// The events of a response: decoded as SSE, or — when the server answered one JSON document
/// despite `stream: true` — parsed whole by `whole` (read under the same bounds).
pub(crate) async fn events_of<D: Decode<SseEvent>>(
    sent: Sent,
    mut decoder: D,
    whole: fn(&[u8]) -> Result<Vec<StreamEvent>, LlmError>,
) -> Result<EventStream, LlmError> {
    if crate::http::is_json(&sent.response) {
        let Sent { response, ctx } = sent;
        let bytes = read_whole(response, &ctx)
            .await
            .map_err(|e| e.redacted(&ctx.secrets))?;
        let events = whole(&bytes)
            .and_then(|events| decoder.decode_whole(events))
            .map_err(|e| e.redacted(&ctx.secrets))?;
        let mut budget = Budget::new(&ctx);
        budget.record(&events)?;
        return Ok(Box::pin(futures_util::stream::iter(
            events.into_iter().map(Ok),
        )));
    }
    let max_event = sent.ctx.limits.max_event_bytes;
    Ok(decode_body(
        sent,
        SseParser::with_max_event(max_event),
        decoder,
    ))
}

/// A whole (non-streamed) body, refused past the event cap or the deadlines.
async fn read_whole(response: reqwest::Response, ctx: &CallCtx) -> Result<Vec<u8>, LlmError> {
    let limit = ctx.limits.max_event_bytes;
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(LimitExceeded::EventTooLarge { limit }.into());
    }
    let mut budget = Budget::new(ctx);
    let mut body: Body = Box::pin(response.bytes_stream());
    let mut out = Vec::new();
    loop {
        let (until, bound) = budget.next_deadline();
        match tokio::time::timeout_at(until, body.next()).await {
            Err(_) => return Err(bound.into()),
            Ok(None) => return Ok(out),
            Ok(Some(Err(e))) => return Err(LlmError::from_reqwest(&e, true)),
            Ok(Some(Ok(chunk))) => {
                if out.len() + chunk.len() > limit {
                    return Err(LimitExceeded::EventTooLarge { limit }.into());
                }
                if !chunk.is_empty() {
                    // Bytes of one document are progress: it cannot be read otherwise.
                    budget.last_progress = Instant::now();
                }
                out.extend_from_slice(&chunk);
            }
        }
    }
}

/// Streams the decoded events of a response body.
pub(crate) fn decode_body<P, D>(sent: Sent, parser: P, decoder: D) -> EventStream
where
    P: Framing,
    P::Frame: Send,
    D: Decode<P::Frame>,
{
    let Sent { response, ctx } = sent;
    let state = State {
        body: Box::pin(response.bytes_stream()),
        parser,
        decoder,
        queue: VecDeque::new(),
        closed: false,
        budget: Budget::new(&ctx),
        ctx,
    };
    Box::pin(futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(item) = st.queue.pop_front() {
                return Some((item, st));
            }
            if st.closed {
                return None;
            }
            let (until, bound) = st.budget.next_deadline();
            let next = match tokio::time::timeout_at(until, st.body.next()).await {
                Ok(next) => next,
                Err(_) => {
                    st.fail(LlmError::Limit(bound));
                    continue;
                }
            };
            match next {
                Some(Ok(bytes)) => match st.parser.push(&bytes) {
                    Ok(events) => {
                        for ev in events {
                            st.handle(ev);
                        }
                    }
                    Err(FrameError::TooLarge { limit }) => {
                        st.fail(LlmError::Limit(LimitExceeded::EventTooLarge { limit }));
                    }
                    Err(FrameError::Malformed(e)) => st.fail(LlmError::Decode(e)),
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
