//! What a frontend needs to run a session on a local model: the provider for a resolved
//! `local` spec ([`provider_for`]), the opt-in prompted tool calling for other providers
//! ([`with_tool_calling`]), and the one-line notice shown when the default model is used
//! because nothing else is configured ([`default_model_notice`]).

use std::path::Path;
use std::sync::Arc;

use hermes_config::ModelSettings;
use hermes_llm::{Provider, ProviderSpec};

use crate::PromptedTools;
use crate::settings::ModelFileError;

#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error(transparent)]
    ModelFile(#[from] ModelFileError),
    #[error(
        "this hermes was built without the embedded model runtime (cargo feature `local`): \
         build it with `cargo build --release -p hermes-cli --features local` (scripts/run \
         does), or set model.provider in config.yaml to use a hosted or Ollama model"
    )]
    NotBuilt,
    #[error("model.tool_calling must be `native` or `prompt`, not `{0}`")]
    BadToolCalling(String),
    #[error("model.tool_choice must be `auto` or `required`, not `{0}`")]
    BadToolChoice(String),
}

/// The provider for a resolved `local` spec: its `base_url` is the GGUF path (empty: the
/// default model in `$HERMES_HOME/models/`).
#[cfg(feature = "llama")]
pub fn provider_for(
    spec: &ProviderSpec,
    config: &ModelSettings,
    hermes_home: &Path,
) -> Result<Arc<dyn Provider>, LocalError> {
    check_tool_choice(config)?;
    let path = Some(spec.base_url.trim())
        .filter(|p| !p.is_empty())
        .map(Path::new);
    let settings = crate::LocalSettings::from_config(config, path, hermes_home);
    Ok(Arc::new(crate::LocalProvider::new(settings)?))
}

/// Without the llama.cpp runtime, a `local` spec cannot run: say how to get one that can.
#[cfg(not(feature = "llama"))]
pub fn provider_for(
    spec: &ProviderSpec,
    config: &ModelSettings,
    hermes_home: &Path,
) -> Result<Arc<dyn Provider>, LocalError> {
    let _ = (spec, config, hermes_home);
    Err(LocalError::NotBuilt)
}

/// Refuses a `model.tool_choice` other than `auto` / `required`.
pub fn check_tool_choice(config: &ModelSettings) -> Result<(), LocalError> {
    match config.tool_choice.as_deref().map(str::trim) {
        None | Some("") => Ok(()),
        Some(c) if c.eq_ignore_ascii_case("auto") || c.eq_ignore_ascii_case("required") => Ok(()),
        Some(other) => Err(LocalError::BadToolChoice(other.to_string())),
    }
}

/// `provider`, or `provider` wrapped in [`PromptedTools`] when `model.tool_calling: prompt`.
pub fn with_tool_calling(
    config: &ModelSettings,
    provider: Arc<dyn Provider>,
) -> Result<Arc<dyn Provider>, LocalError> {
    let mode = config
        .tool_calling
        .as_deref()
        .map(|m| m.trim().to_ascii_lowercase())
        .unwrap_or_default();
    match mode.as_str() {
        "" | "native" | "auto" => Ok(provider),
        "prompt" | "prompted" => Ok(Arc::new(PromptedTools::new(provider))),
        _ => Err(LocalError::BadToolCalling(mode)),
    }
}

/// The notice for a run that fell back to the default local model, naming the config line
/// that switches to a hosted provider.
pub fn default_model_notice(spec: &ProviderSpec, config_path: &Path) -> Option<String> {
    (spec.is_local() && spec.chosen_by == hermes_llm::resolve::CHOSEN_BY_DEFAULT).then(|| {
        format!(
            "no provider configured: using the bundled local model {} (small and offline: fine \
             for simple tasks); for stronger answers put `model: {{provider: openrouter}}` in {} \
             and export OPENROUTER_API_KEY, or see \"Local models\" in the README",
            spec.model,
            config_path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_config::Environment;
    use hermes_llm::Overrides;

    fn default_spec() -> ProviderSpec {
        hermes_llm::resolve(
            &ModelSettings::default(),
            &Environment::isolated::<&str, &str>([]),
            &Overrides::default(),
        )
        .unwrap()
    }

    #[test]
    fn the_notice_names_the_config_line_only_for_the_fallback() {
        let spec = default_spec();
        let notice = default_model_notice(&spec, Path::new("/h/config.yaml")).unwrap();
        assert!(notice.contains("qwen2.5-coder-1.5b"), "{notice}");
        assert!(
            notice.contains("`model: {provider: openrouter}` in /h/config.yaml"),
            "{notice}"
        );
        let chosen = ProviderSpec {
            chosen_by: "config.yaml model.provider".into(),
            ..spec
        };
        assert_eq!(default_model_notice(&chosen, Path::new("/h/c")), None);
    }

    #[test]
    fn tool_calling_modes() {
        let inner = hermes_llm::build_provider(
            &ProviderSpec {
                base_url: "http://127.0.0.1:9/v1".into(),
                ..default_spec()
            },
            &hermes_llm::HttpTimeouts::default(),
        )
        .unwrap();
        let with = |mode: Option<&str>| {
            let config = ModelSettings {
                tool_calling: mode.map(Into::into),
                ..ModelSettings::default()
            };
            with_tool_calling(&config, inner.clone())
        };
        assert!(Arc::ptr_eq(&with(None).unwrap(), &inner));
        assert!(Arc::ptr_eq(&with(Some("native")).unwrap(), &inner));
        assert!(
            !Arc::ptr_eq(&with(Some("Prompt")).unwrap(), &inner),
            "wrapped"
        );
        let err = with(Some("grammar")).err().unwrap();
        assert!(
            err.to_string()
                .contains("`native` or `prompt`, not `grammar`"),
            "{err}"
        );
    }

    #[test]
    fn tool_choice_values() {
        let with = |c: &str| ModelSettings {
            tool_choice: Some(c.into()),
            ..ModelSettings::default()
        };
        assert!(check_tool_choice(&ModelSettings::default()).is_ok());
        assert!(check_tool_choice(&with("Required")).is_ok());
        let err = check_tool_choice(&with("always")).unwrap_err();
        assert!(
            err.to_string()
                .contains("`auto` or `required`, not `always`"),
            "{err}"
        );
    }

    #[cfg(not(feature = "llama"))]
    #[test]
    fn without_the_runtime_a_local_spec_says_how_to_get_one() {
        let err = provider_for(&default_spec(), &ModelSettings::default(), Path::new("/h"))
            .err()
            .unwrap();
        assert!(err.to_string().contains("--features local"), "{err}");
    }
}
