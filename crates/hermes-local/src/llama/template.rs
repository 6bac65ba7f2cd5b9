//! Turning the conversation into the prompt text a model was trained on. The template is, in
//! order: `model.chat_template` (a llama.cpp built-in name such as `gemma`, `chatml`, `llama3`,
//! `phi3`, `mistral-v7`, or a template text it recognises); the template stored in the GGUF;
//! otherwise one chosen from the model's architecture (ChatML when nothing better is known).
//! llama.cpp formats with its built-in renderers, which match the official templates.

use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};

use crate::tool_prompt::PlainTurn;

pub(crate) struct Template {
    chosen: LlamaChatTemplate,
    /// Used when the GGUF's own template is not one llama.cpp can render.
    fallback: Option<LlamaChatTemplate>,
    /// What was chosen, for error messages.
    description: String,
}

impl Template {
    pub(crate) fn choose(model: &LlamaModel, configured: Option<&str>) -> Result<Self, String> {
        let by_architecture = architecture_template(model);
        if let Some(name) = configured.map(str::trim).filter(|n| !n.is_empty()) {
            let chosen = LlamaChatTemplate::new(name)
                .map_err(|_| "model.chat_template contains a NUL character".to_string())?;
            let template = Template {
                chosen,
                fallback: None,
                description: format!("model.chat_template `{}`", short(name)),
            };
            // Refuse a name llama.cpp does not know now, not at the first message.
            template.render(model, &[probe()])?;
            return Ok(template);
        }
        let fallback = LlamaChatTemplate::new(by_architecture).ok();
        match model.chat_template(None) {
            Ok(chosen) => Ok(Template {
                chosen,
                fallback,
                description: "the model's own chat template".into(),
            }),
            Err(_) => Ok(Template {
                chosen: LlamaChatTemplate::new(by_architecture)
                    .map_err(|_| "invalid built-in template name".to_string())?,
                fallback: None,
                description: format!("the built-in `{by_architecture}` template"),
            }),
        }
    }

    /// The prompt for `turns`, ending where the assistant's reply begins.
    pub(crate) fn render(&self, model: &LlamaModel, turns: &[PlainTurn]) -> Result<String, String> {
        let messages = turns
            .iter()
            .map(|t| LlamaChatMessage::new(t.role.to_string(), t.content.replace('\0', "")))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("cannot pass the conversation to llama.cpp: {e}"))?;
        match model.apply_chat_template(&self.chosen, &messages, true) {
            Ok(prompt) => Ok(prompt),
            Err(first) => match &self.fallback {
                Some(fallback) => model
                    .apply_chat_template(fallback, &messages, true)
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
