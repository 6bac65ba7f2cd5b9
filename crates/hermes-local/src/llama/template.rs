//! Turning a request into the prompt text a model was trained on, with the grammar and reply
//! parser that go with it. Two ways:
//!
//! * **Native**: the model's Jinja template (the GGUF's, or `model.chat_template` when it is a
//!   template text) has a tools section in a known syntax ([`crate::native`]): it is rendered
//!   with the tools and the conversation as Hugging Face would, the grammar allows text or
//!   calls in that syntax, and calls are parsed back from it.
//! * **Built-in**: any other model. llama.cpp's built-in renderers format the conversation
//!   rewritten as plain turns, with the tools described by the generic JSON prompt
//!   ([`crate::tool_prompt`]). The renderer is, in order: `model.chat_template` (a built-in
//!   name such as `gemma`, `chatml`, `llama3`), the template stored in the GGUF, or one chosen
//!   from the model's architecture.

use hermes_protocol::{Message, ToolSchema};
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use serde_json::json;

use crate::grammar::tool_call_grammar;
use crate::native::grammar::native_call_grammar;
use crate::native::render::JinjaTemplate;
use crate::native::reply::NativeReplyStream;
use crate::native::{self, ToolFormat};
use crate::reply::ReplyStream;
use crate::tool_prompt::{PlainTurn, plain_conversation};

pub(crate) enum Template {
    Native(JinjaTemplate),
    Builtin(Builtin),
}

pub(crate) struct Builtin {
    chosen: LlamaChatTemplate,
    /// Used when the GGUF's own template is not one llama.cpp can render.
    fallback: Option<LlamaChatTemplate>,
    /// What was chosen, for error messages.
    description: String,
}

/// How the reply of one request is read.
pub(crate) enum Reply {
    /// Plain text: no tools were offered.
    Plain,
    /// The generic JSON call of [`crate::tool_prompt`].
    Prompted(ReplyStream),
    /// Calls in the model's own syntax.
    Native(NativeReplyStream),
}

/// One request, ready for the model.
pub(crate) struct Prepared {
    pub prompt: String,
    /// The start of `prompt` every request of this setup shares (system prompt and tools),
    /// when it can be told apart.
    pub prefix: Option<String>,
    pub grammar: Option<String>,
    pub reply: Reply,
    /// A control token that opens calls and must reach the parser instead of ending the reply
    /// (`[TOOL_CALLS]`, `<|python_tag|>`).
    pub call_marker: Option<&'static str>,
    /// The prompt already starts with the BOS token's text: do not add another.
    pub has_bos: bool,
}

impl Template {
    pub(crate) fn choose(model: &LlamaModel, configured: Option<&str>) -> Result<Self, String> {
        let by_architecture = architecture_template(model);
        if let Some(name) = configured.map(str::trim).filter(|n| !n.is_empty()) {
            if let Some(native) = native_template(model, name) {
                return Ok(Template::Native(native));
            }
            let chosen = LlamaChatTemplate::new(name)
                .map_err(|_| "model.chat_template contains a NUL character".to_string())?;
            let template = Builtin {
                chosen,
                fallback: None,
                description: format!("model.chat_template `{}`", short(name)),
            };
            // Refuse a name llama.cpp does not know now, not at the first message.
            template.render(model, &[probe()], true)?;
            return Ok(Template::Builtin(template));
        }
        let fallback = LlamaChatTemplate::new(by_architecture).ok();
        match model.chat_template(None) {
            Ok(chosen) => {
                let text = chosen.to_string().unwrap_or_default();
                if let Some(native) = native_template(model, &text) {
                    return Ok(Template::Native(native));
                }
                Ok(Template::Builtin(Builtin {
                    chosen,
                    fallback,
                    description: "the model's own chat template".into(),
                }))
            }
            Err(_) => Ok(Template::Builtin(Builtin {
                chosen: LlamaChatTemplate::new(by_architecture)
                    .map_err(|_| "invalid built-in template name".to_string())?,
                fallback: None,
                description: format!("the built-in `{by_architecture}` template"),
            })),
        }
    }

    /// The prompt, prefix, grammar and reply parser for a request.
    pub(crate) fn prepare(
        &self,
        model: &LlamaModel,
        system: &str,
        messages: &[Message],
        tools: &[ToolSchema],
        require_tool_call: bool,
    ) -> Result<Prepared, String> {
        match self {
            Template::Native(template) => {
                let prompt = template
                    .render(system, messages, tools)
                    .map_err(|e| e.to_string())?;
                let prefix = (!system.trim().is_empty())
                    .then(|| template.render_prefix(system, tools).ok())
                    .flatten()
                    .filter(|p| !p.is_empty() && prompt.starts_with(p.as_str()));
                let format = template.format();
                let grammar = native_call_grammar(format, tools, !require_tool_call);
                let reply = if tools.is_empty() {
                    Reply::Plain
                } else {
                    Reply::Native(NativeReplyStream::new(format))
                };
                let bos = template.bos_token();
                Ok(Prepared {
                    has_bos: !bos.is_empty() && prompt.starts_with(bos),
                    prompt,
                    prefix,
                    grammar,
                    reply,
                    call_marker: match format {
                        ToolFormat::Hermes => None,
                        other => Some(other.opening()),
                    },
                })
            }
            Template::Builtin(template) => {
                let turns = plain_conversation(system, messages, tools);
                let prompt = template.render(model, &turns, true)?;
                let prefix = turns
                    .first()
                    .filter(|t| t.role == "system")
                    .and_then(|t| template.render(model, std::slice::from_ref(t), false).ok())
                    .filter(|p| !p.is_empty() && prompt.starts_with(p.as_str()));
                let grammar = tool_call_grammar(tools, !require_tool_call);
                let reply = if grammar.is_some() {
                    Reply::Prompted(ReplyStream::new())
                } else {
                    Reply::Plain
                };
                Ok(Prepared {
                    prompt,
                    prefix,
                    grammar,
                    reply,
                    call_marker: None,
                    has_bos: false,
                })
            }
        }
    }
}

impl Builtin {
    /// The prompt for `turns`; with `add_assistant`, ending where the assistant's reply begins.
    fn render(
        &self,
        model: &LlamaModel,
        turns: &[PlainTurn],
        add_assistant: bool,
    ) -> Result<String, String> {
        let messages = turns
            .iter()
            .map(|t| LlamaChatMessage::new(t.role.to_string(), t.content.replace('\0', "")))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("cannot pass the conversation to llama.cpp: {e}"))?;
        match model.apply_chat_template(&self.chosen, &messages, add_assistant) {
            Ok(prompt) => Ok(prompt),
            Err(first) => match &self.fallback {
                Some(fallback) => model
                    .apply_chat_template(fallback, &messages, add_assistant)
                    .map_err(|e| format!("cannot format the conversation: {e}")),
                None => Err(format!(
                    "llama.cpp cannot format the conversation with {} ({first}); set \
                     model.chat_template to a built-in name such as chatml, gemma or llama3",
                    self.description
                )),
            },
        }
    }
}

/// `text` as a native template, when it is a Jinja template with a tools section in a known
/// syntax that renders a probe conversation with a tool.
fn native_template(model: &LlamaModel, text: &str) -> Option<JinjaTemplate> {
    let format = native::detect(text)?;
    let vocab = model.vocab();
    let piece =
        |token| String::from_utf8_lossy(&vocab.token_to_piece(token, true, None)).into_owned();
    let template = JinjaTemplate::new(text, piece(vocab.bos()), piece(vocab.eos()), format);
    let probe_tool = ToolSchema {
        name: "probe".into(),
        description: "A probe.".into(),
        parameters: json!({"type": "object", "properties": {}}),
    };
    let renders = template
        .render("You are a probe.", &[Message::user("hi")], &[probe_tool])
        .is_ok_and(|p| p.contains("probe"));
    renders.then_some(template)
}

fn probe() -> PlainTurn {
    PlainTurn {
        role: "user",
        content: "hi".into(),
    }
}

fn short(text: &str) -> String {
    let mut s: String = text.chars().take(40).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s
}

/// A built-in template for GGUFs that carry none, from `general.architecture`.
fn architecture_template(model: &LlamaModel) -> &'static str {
    let arch = model
        .meta_val_str("general.architecture")
        .unwrap_or_default()
        .to_ascii_lowercase();
    if arch.starts_with("gemma") {
        "gemma"
    } else if arch.starts_with("phi3") {
        "phi3"
    } else if arch == "llama" {
        "llama3"
    } else {
        "chatml"
    }
}
