//! The provider-neutral conversation model. Wire formats (OpenAI chat, Anthropic, ...) convert
//! to and from these types; everything else in Hermes speaks only these.

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One tool invocation requested by the model. `arguments` is the raw JSON text exactly as the
/// model produced it (after repair, if any), because providers expect it back verbatim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// An image given to the model with a user message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Image {
    /// An image the provider fetches itself (`https:` URL).
    Url { url: String },
    /// The image's bytes, base64-encoded, with their media type (`image/png`, ...).
    Data { media_type: String, data: String },
}

impl Image {
    /// The `data:` URL of inline bytes, or the URL itself: the form OpenAI-style wires take.
    pub fn as_url(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Image::Url { url } => std::borrow::Cow::Borrowed(url),
            Image::Data { media_type, data } => {
                std::borrow::Cow::Owned(format!("data:{media_type};base64,{data}"))
            }
        }
    }

    /// Parses a `data:<type>;base64,<data>` URL; any other URL is kept as a URL.
    pub fn from_url(url: &str) -> Image {
        if let Some(rest) = url.strip_prefix("data:")
            && let Some((meta, data)) = rest.split_once(',')
            && let Some(media_type) = meta.strip_suffix(";base64")
        {
            return Image::Data {
                media_type: media_type.to_string(),
                data: data.to_string(),
            };
        }
        Image::Url {
            url: url.to_string(),
        }
    }

    /// Bytes the image adds to a request (for budgets and size checks).
    pub fn wire_len(&self) -> usize {
        match self {
            Image::Url { url } => url.len(),
            Image::Data { data, .. } => data.len(),
        }
    }
}

/// One message of a conversation.
///
/// Invariants kept by the agent: roles alternate user/assistant (tool messages may repeat), and
/// every tool call of an assistant message is answered by exactly one tool message carrying its
/// id, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(default)]
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For `Role::Tool`: the id of the call this message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For `Role::Tool`: the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Reasoning ("thinking") text the provider returned with an assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Opaque provider data that must be sent back with this message for the provider to
    /// accept it (Anthropic thinking blocks with their signatures, OpenAI Responses reasoning
    /// items): a JSON array, meaningful only to the wire format that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_details: Option<serde_json::Value>,
    /// Images given with a user message, after its text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

impl Message {
    fn new(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            reasoning: None,
            reasoning_details: None,
            images: Vec::new(),
        }
    }

    /// A user message with images after its text.
    pub fn user_with_images(content: impl Into<String>, images: Vec<Image>) -> Self {
        Message {
            images,
            ..Self::new(Role::User, content)
        }
    }

    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    pub fn assistant_with_tools(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Message {
            tool_calls,
            ..Self::new(Role::Assistant, content)
        }
    }

    pub fn tool_result(
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Message {
            tool_call_id: Some(call_id.into()),
            name: Some(name.into()),
            ..Self::new(Role::Tool, content)
        }
    }

    pub fn with_reasoning(mut self, reasoning: Option<String>) -> Self {
        self.reasoning = reasoning.filter(|r| !r.is_empty());
        self
    }

    /// Attaches provider reasoning data (an empty list is dropped).
    pub fn with_reasoning_details(mut self, details: Vec<serde_json::Value>) -> Self {
        self.reasoning_details = (!details.is_empty()).then_some(serde_json::Value::Array(details));
        self
    }

    pub fn has_tool_calls(&self) -> bool {
        !self.tool_calls.is_empty()
    }
}

/// What the model is told about one tool: name, description and JSON-schema parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_message_round_trips_through_json() {
        let m = Message::tool_result("call_1", "terminal", "{\"output\":\"hi\"}");
        let text = serde_json::to_string(&m).unwrap();
        let back: Message = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
        assert!(
            !text.contains("tool_calls"),
            "empty lists are not serialised: {text}"
        );
    }

    #[test]
    fn empty_reasoning_is_dropped() {
        let m = Message::assistant("x").with_reasoning(Some(String::new()));
        assert_eq!(m.reasoning, None);
    }
}
