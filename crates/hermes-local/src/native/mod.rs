//! Tool calls in a model's own format. Models trained on a tool-call syntax get the tools the
//! way their GGUF chat template puts them (the template is rendered with `tools`, see
//! [`render`]), the grammar allows plain text or calls in exactly that syntax ([`grammar`]),
//! and the reply is parsed back from it ([`reply`]). Three families are known:
//!
//! * [`ToolFormat::Hermes`]: `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`
//!   (Qwen 2.5, Hermes 2/3, many fine-tunes);
//! * [`ToolFormat::Mistral`]: `[TOOL_CALLS][{"name": ..., "arguments": {...}}]`;
//! * [`ToolFormat::Llama3`]: `{"name": ..., "parameters": {...}}` (Llama 3.1 / 3.2 JSON tool
//!   calling).
//!
//! A template that has no tools section, or whose syntax is none of these, keeps the generic
//! JSON prompt of [`crate::tool_prompt`].

pub mod grammar;
pub mod render;
pub mod reply;

/// A tool-call syntax a model was trained on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolFormat {
    Hermes,
    Mistral,
    Llama3,
}

impl ToolFormat {
    /// The text that opens the calls of a reply (for Llama 3 the optional tag before them).
    pub fn opening(self) -> &'static str {
        match self {
            ToolFormat::Hermes => "<tool_call>",
            ToolFormat::Mistral => "[TOOL_CALLS]",
            ToolFormat::Llama3 => "<|python_tag|>",
        }
    }

    /// The key the call object names its arguments with.
    pub fn arguments_key(self) -> &'static str {
        match self {
            ToolFormat::Hermes | ToolFormat::Mistral => "arguments",
            ToolFormat::Llama3 => "parameters",
        }
    }

    /// What a user-facing message calls it.
    pub fn label(self) -> &'static str {
        match self {
            ToolFormat::Hermes => "<tool_call> (Hermes/Qwen)",
            ToolFormat::Mistral => "[TOOL_CALLS] (Mistral)",
            ToolFormat::Llama3 => "JSON (Llama 3)",
        }
    }
}

/// The tool-call syntax of a Jinja chat template, when it has a tools section in one of the
/// known syntaxes.
pub fn detect(template: &str) -> Option<ToolFormat> {
    if !mentions_tools(template) {
        return None;
    }
    if template.contains("<tool_call>") {
        Some(ToolFormat::Hermes)
    } else if template.contains("[TOOL_CALLS]") {
        Some(ToolFormat::Mistral)
    } else if template.contains("<|python_tag|>")
        || (template.contains("<|start_header_id|>") && template.contains("\"parameters\""))
    {
        Some(ToolFormat::Llama3)
    } else {
        None
    }
}

/// Whether the template reads a `tools` variable (`if tools`, `for tool in tools`, ...).
fn mentions_tools(template: &str) -> bool {
    template.match_indices("tools").any(|(at, _)| {
        let before = template[..at].chars().next_back();
        let after = template[at + "tools".len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        !ident(before) && !ident(after)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_follows_the_templates_tool_section() {
        let qwen = include_str!("testdata/qwen2.5.jinja");
        assert_eq!(detect(qwen), Some(ToolFormat::Hermes));
        assert_eq!(
            detect("{% if tools %}[AVAILABLE_TOOLS]{{ tools|tojson }}{% endif %}[TOOL_CALLS]"),
            Some(ToolFormat::Mistral)
        );
        assert_eq!(
            detect(
                "{% if tools is not none %}<|start_header_id|>user: respond with \
                 {\"name\": function name, \"parameters\": dict}{% endif %}"
            ),
            Some(ToolFormat::Llama3)
        );
        // No tools section: the generic prompt.
        assert_eq!(
            detect("{% for m in messages %}<|im_start|>{{ m.content }}{% endfor %}"),
            None
        );
        // `tools` only as part of another word is no tools section.
        assert_eq!(detect("{{ mytools }}<tool_call>"), None);
        // A tools section in an unknown syntax.
        assert_eq!(detect("{% if tools %}<function_calls>{% endif %}"), None);
    }
}
