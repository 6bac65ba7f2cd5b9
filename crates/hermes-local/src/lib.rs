//! Local models for Hermes. With the `llama` feature, [`LocalProvider`] runs any GGUF model
//! in-process through llama.cpp behind the same [`hermes_llm::Provider`] trait as remote
//! providers. Around it, and without the feature: tool calling for models without a native
//! tool-call format ([`tool_prompt`] describes tools in the prompt, [`grammar`] constrains the
//! reply to plain text or one valid call, [`reply`] parses it back, [`PromptedTools`] does the
//! same for OpenAI-compatible servers), the local [`settings`] and model-file checks, the
//! default model ([`default_model`], fetched by [`fetch`]), and what a frontend calls to set up
//! a session on a local model ([`session`]).

pub mod default_model;
pub mod fetch;
pub mod grammar;
#[cfg(feature = "llama")]
mod llama;
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
