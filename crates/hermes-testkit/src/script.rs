//! Script types for the mock LLM server: the ordered list of turns a test
//! expects the agent to consume (replies and transport/HTTP faults), plus the
//! small builder API tests use to write them.

use serde_json::Value;

/// What the mock server answers, one [`Turn`] per chat-completions request.
#[derive(Debug, Clone, Default)]
pub struct Script {
    pub turns: Vec<Turn>,
    pub on_exhausted: Exhausted,
}

impl Script {
    /// A script with these turns that answers HTTP 500 once they run out.
    pub fn new(turns: Vec<Turn>) -> Script {
        Script {
            turns,
            on_exhausted: Exhausted::Error,
        }
    }

    /// Sets what happens once every turn has been consumed.
    pub fn with_on_exhausted(mut self, on_exhausted: Exhausted) -> Script {
        self.on_exhausted = on_exhausted;
        self
    }

    /// Appends a turn.
    pub fn then(mut self, turn: impl Into<Turn>) -> Script {
        self.turns.push(turn.into());
        self
    }
}

impl From<Vec<Turn>> for Script {
    fn from(turns: Vec<Turn>) -> Script {
        Script::new(turns)
    }
}

/// Behaviour for chat requests arriving after the script ran out.
#[derive(Debug, Clone, Default)]
pub enum Exhausted {
    /// HTTP 500 `{"error":{"message":"mock script exhausted"}}`.
    #[default]
    Error,
    /// Reply with this text (as a normal, possibly streamed, reply).
    Text(String),
    /// Answer each request with the turn the responder picks from its JSON body: for tests
    /// where many conversations reach the server at once, in no particular order.
    Respond(Responder),
}

/// Picks the answer to one chat request from its body.
#[derive(Clone)]
pub struct Responder(pub std::sync::Arc<dyn Fn(&Value) -> Turn + Send + Sync>);

impl Responder {
    pub fn new(f: impl Fn(&Value) -> Turn + Send + Sync + 'static) -> Responder {
        Responder(std::sync::Arc::new(f))
    }
}

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Responder(..)")
    }
}

impl Script {
    /// No fixed turns: every request is answered by `f` from its body.
    pub fn responding(f: impl Fn(&Value) -> Turn + Send + Sync + 'static) -> Script {
        Script {
            turns: Vec::new(),
            on_exhausted: Exhausted::Respond(Responder::new(f)),
        }
    }
}

/// One scripted answer to one chat-completions request.
#[derive(Debug, Clone)]
pub enum Turn {
    Reply(Reply),
    Fault(Fault),
}

impl Turn {
    /// A plain text reply.
    pub fn text(content: impl Into<String>) -> Turn {
        Turn::Reply(Reply::text(content))
    }

    /// A reply with a single tool call whose arguments are `args` serialized.
    pub fn tool(name: impl Into<String>, args: Value) -> Turn {
        Turn::Reply(Reply::tool_call(name, args))
    }
}

impl From<Reply> for Turn {
    fn from(reply: Reply) -> Turn {
        Turn::Reply(reply)
    }
}

impl From<Fault> for Turn {
    fn from(fault: Fault) -> Turn {
        Turn::Fault(fault)
    }
}

/// A successful assistant message.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    pub content: Option<String>,
    /// Streamed as `delta.reasoning_content`; `message.reasoning_content` otherwise.
    pub reasoning: Option<String>,
    pub tool_calls: Vec<MockToolCall>,
    /// Default: `"tool_calls"` if `tool_calls` is non-empty, else `"stop"`.
    pub finish_reason: Option<String>,
    /// Default: prompt = request body bytes / 4, completion = output chars / 4.
    pub usage: Option<MockUsage>,
    /// Chars per content/reasoning/argument delta; default 8.
    pub chunk_size: Option<usize>,
    /// Delay before the response headers.
    pub delay_ms: u64,
    /// Delay between SSE events.
    pub chunk_delay_ms: u64,
}

impl Reply {
    /// A reply whose content is `content`.
    pub fn text(content: impl Into<String>) -> Reply {
        Reply {
            content: Some(content.into()),
            ..Reply::default()
        }
    }

    /// A reply with no content and one tool call.
    pub fn tool_call(name: impl Into<String>, args: Value) -> Reply {
        Reply::default().with_tool_call(name, args)
    }

    /// A reply with no content and several tool calls, in order.
    pub fn tool_calls<N: Into<String>>(calls: Vec<(N, Value)>) -> Reply {
        calls.into_iter().fold(Reply::default(), |r, (name, args)| {
            r.with_tool_call(name, args)
        })
    }

    pub fn with_content(mut self, content: impl Into<String>) -> Reply {
        self.content = Some(content.into());
        self
    }

    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> Reply {
        self.reasoning = Some(reasoning.into());
        self
    }

    pub fn with_usage(mut self, usage: MockUsage) -> Reply {
        self.usage = Some(usage);
        self
    }

    pub fn with_finish_reason(mut self, finish_reason: impl Into<String>) -> Reply {
        self.finish_reason = Some(finish_reason.into());
        self
    }

    /// Appends a tool call whose arguments are `args` serialized as JSON.
    pub fn with_tool_call(self, name: impl Into<String>, args: Value) -> Reply {
        self.with_raw_tool_call(name, args.to_string())
    }

    /// Appends a tool call with verbatim (possibly invalid JSON) arguments.
    pub fn with_raw_tool_call(
        mut self,
        name: impl Into<String>,
        raw_args: impl Into<String>,
    ) -> Reply {
        self.tool_calls.push(MockToolCall::new(name, raw_args));
        self
    }

    pub fn with_chunk_size(mut self, chars: usize) -> Reply {
        self.chunk_size = Some(chars);
        self
    }

    pub fn with_delay_ms(mut self, ms: u64) -> Reply {
        self.delay_ms = ms;
        self
    }

    pub fn with_chunk_delay_ms(mut self, ms: u64) -> Reply {
        self.chunk_delay_ms = ms;
        self
    }

    /// The finish reason actually sent.
    pub fn effective_finish_reason(&self) -> String {
        match &self.finish_reason {
            Some(reason) => reason.clone(),
            None if self.tool_calls.is_empty() => "stop".to_owned(),
            None => "tool_calls".to_owned(),
        }
    }
}

/// A tool call in a scripted reply.
#[derive(Debug, Clone)]
pub struct MockToolCall {
    /// Default: `call_{turn}_{i}` (turn = 0-based script index, i = index in the reply).
    pub id: Option<String>,
    pub name: String,
    /// Raw arguments string; may be invalid JSON on purpose.
    pub arguments: String,
}

impl MockToolCall {
    pub fn new(name: impl Into<String>, arguments: impl Into<String>) -> MockToolCall {
        MockToolCall {
            id: None,
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    pub fn with_id(mut self, id: impl Into<String>) -> MockToolCall {
        self.id = Some(id.into());
        self
    }
}

/// Token usage reported for a reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MockUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
}

/// A failure injected instead of a reply.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Respond with this status and an OpenAI-style error body
    /// `{"error":{"message":..,"type":..,"code":..}}`; optional `Retry-After` (seconds).
    Http {
        status: u16,
        message: String,
        retry_after: Option<u64>,
    },
    /// Respond with exactly this status, extra headers and body (Content-Length framed).
    HttpRaw {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Close the connection right after reading the request, before any byte.
    Drop,
    /// Start streaming `reply` then close after `after_chunks` SSE events, with no
    /// chunked terminator, no finish_reason and no `[DONE]`.
    DropMidStream { after_chunks: usize, reply: Reply },
    /// Start streaming `reply`, and after `after_chunks` events send the provider's in-stream
    /// error event (`kind`, `message`) and end the stream properly: OpenAI `data: {"error"}`,
    /// Anthropic `event: error`, Responses `event: error`, a Bedrock exception frame
    /// (`kind` is its `:exception-type`, e.g. `throttlingException`).
    ErrorMidStream {
        after_chunks: usize,
        reply: Box<Reply>,
        kind: String,
        message: String,
    },
    /// Read the request, send nothing for `ms` milliseconds, then close.
    Hang { ms: u64 },
    /// 200 SSE with these raw entries, each written as its own HTTP chunk, then a
    /// proper close. An entry is written verbatim; if it does not end in `\n`, the
    /// SSE event terminator `\n\n` is appended (so `"data: {not json"` is one event).
    RawSse(Vec<String>),
}

impl Fault {
    pub fn http(status: u16, message: impl Into<String>) -> Fault {
        Fault::Http {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    /// HTTP 429 with a `Retry-After` header.
    pub fn rate_limited(retry_after_secs: u64) -> Fault {
        Fault::Http {
            status: 429,
            message: "Rate limit reached for requests".to_owned(),
            retry_after: Some(retry_after_secs),
        }
    }

    pub fn drop_mid_stream(after_chunks: usize, reply: Reply) -> Fault {
        Fault::DropMidStream {
            after_chunks,
            reply,
        }
    }

    pub fn error_mid_stream(
        after_chunks: usize,
        reply: Reply,
        kind: impl Into<String>,
        message: impl Into<String>,
    ) -> Fault {
        Fault::ErrorMidStream {
            after_chunks,
            reply: Box::new(reply),
            kind: kind.into(),
            message: message.into(),
        }
    }

    pub fn hang(ms: u64) -> Fault {
        Fault::Hang { ms }
    }

    pub fn raw_sse<S: Into<String>>(lines: Vec<S>) -> Fault {
        Fault::RawSse(lines.into_iter().map(Into::into).collect())
    }
}
