//! Local models for Hermes. With the `llama` feature, [`LocalProvider`] runs any GGUF model
//! in-process through llama.cpp behind the same [`hermes_llm::Provider`] trait as remote
//! providers. Around it, and without the feature: tool calls in a model's own format
//! ([`native`]: its chat template rendered with the tools, the grammar and parser of its
//! syntax); the saved KV state of prompt prefixes ([`kv_store`]); tool calling for models
//! without a native format ([`tool_prompt`] describes tools in the prompt, [`grammar`]
//! constrains the reply to plain text or one valid call, [`reply`] parses it back,
//! [`PromptedTools`] does the same for OpenAI-compatible servers); the local [`settings`] and
//! model-file checks; the models `hermes model fetch-local` offers ([`catalog`]), the default
//! one ([`default_model`]) and fetching them ([`fetch`]); and what a frontend calls to set up
//! a session on a local model ([`session`]).

pub mod catalog;
pub mod default_model;
pub mod fetch;
pub mod grammar;
pub mod kv_store;
#[cfg(feature = "llama")]
mod llama;
pub mod native;
mod prompted;
pub mod reply;
pub mod session;
pub mod settings;
pub mod tool_prompt;

#[cfg(feature = "llama")]
pub use llama::LocalProvider;
pub use prompted::PromptedTools;
pub use session::{LocalError, default_model_notice, provider_for, with_tool_calling};
pub use settings::{LocalSettings, ModelFileError, check_model_file};
