//! Choosing the provider: which preset, base URL, key and model a run uses, from the command
//! line, then `config.yaml`, then the environment. The result ([`ProviderSpec`]) says where
//! each part came from, so `hermes` can explain its choice and name the key to fix.

use hermes_config::{Environment, ModelSettings};

/// How requests are encoded on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    OpenAiChat,
}

/// A known provider: where it lives, which environment variables hold its key.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    pub id: &'static str,
    pub base_url: &'static str,
    pub key_env: &'static [&'static str],
    pub default_model: Option<&'static str>,
    pub wire: WireFormat,
}

const fn chat(
    id: &'static str,
    base_url: &'static str,
    key_env: &'static [&'static str],
    default_model: Option<&'static str>,
) -> Preset {
    Preset {
        id,
        base_url,
        key_env,
        default_model,
        wire: WireFormat::OpenAiChat,
    }
}

pub const PRESETS: &[Preset] = &[
    chat(
        "openrouter",
        "https://openrouter.ai/api/v1",
        &["OPENROUTER_API_KEY"],
        Some("anthropic/claude-sonnet-4.5"),
    ),
    chat(
        "nous",
        "https://inference-api.nousresearch.com/v1",
        &["NOUS_API_KEY"],
        Some("Hermes-4-405B"),
    ),
    chat(
        "openai",
        "https://api.openai.com/v1",
        &["OPENAI_API_KEY"],
        Some("gpt-5.1"),
    ),
    chat(
        "gemini",
        "https://generativelanguage.googleapis.com/v1beta/openai",
        &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        Some("gemini-2.5-flash"),
    ),
    chat(
        "deepseek",
        "https://api.deepseek.com/v1",
        &["DEEPSEEK_API_KEY"],
        Some("deepseek-chat"),
    ),
    chat(
        "xai",
        "https://api.x.ai/v1",
        &["XAI_API_KEY"],
        Some("grok-4"),
    ),
    chat("ollama", "http://localhost:11434/v1", &[], None),
    chat("vllm", "http://localhost:8000/v1", &[], None),
    chat("llamacpp", "http://localhost:8080/v1", &[], None),
    chat("lmstudio", "http://localhost:1234/v1", &[], None),
    chat("custom", "", &[], None),
];

pub fn preset(id: &str) -> Option<&'static Preset> {
    let id = match id {
        "llama.cpp" | "llama-cpp" => "llamacpp",
        "lm-studio" => "lmstudio",
        "google" => "gemini",
        "grok" => "xai",
        other => other,
    };
    PRESETS.iter().find(|p| p.id.eq_ignore_ascii_case(id))
}

/// Choices made on the command line.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
}

/// Everything needed to talk to one model.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderSpec {
    pub provider: String,
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
    pub wire: WireFormat,
    /// Why this provider was chosen ("config.yaml model.provider", "--provider", ...).
    pub chosen_by: String,
    /// Where the key came from (an environment variable name or `model.api_key`).
    pub key_source: Option<String>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResolveError {
    #[error(
        "no model provider is configured: set model.provider (and model.default) in config.yaml, \
         or export OPENROUTER_API_KEY / OPENAI_API_KEY, or pass --provider and --model"
    )]
    NoProvider,
    #[error("unknown provider `{name}` (known: {known})")]
    UnknownProvider { name: String, known: String },
    #[error(
        "provider `{provider}` needs a base URL: set model.base_url in config.yaml or pass --base-url"
    )]
    MissingBaseUrl { provider: String },
    #[error(
        "no API key for provider `{provider}`: set {env} in the environment or in $HERMES_HOME/.env, \
         or model.api_key in config.yaml"
    )]
    MissingKey { provider: String, env: String },
    #[error(
        "no model chosen for provider `{provider}`: set model.default in config.yaml or pass --model"
    )]
    MissingModel { provider: String },
}

/// Resolves the provider: command line > config.yaml > environment.
pub fn resolve(
    config: &ModelSettings,
    env: &Environment,
    cli: &Overrides,
) -> Result<ProviderSpec, ResolveError> {
    let named = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty() && !s.eq_ignore_ascii_case("auto"))
            .map(str::to_string)
    };
    let cli_provider = named(&cli.provider);
    let config_provider = named(&config.provider);
    let cli_base = named(&cli.base_url);
    let config_base = named(&config.base_url);

    let (provider, chosen_by) = if let Some(p) = cli_provider.clone() {
        (p, "--provider".to_string())
    } else if let Some(p) = config_provider.clone() {
        (p, "config.yaml model.provider".to_string())
    } else if cli_base.is_some() {
        ("custom".to_string(), "--base-url".to_string())
    } else if config_base.is_some() {
        (
            "custom".to_string(),
            "config.yaml model.base_url".to_string(),
        )
    } else if env.var("OPENROUTER_API_KEY").is_some() {
        (
            "openrouter".to_string(),
            "OPENROUTER_API_KEY in the environment".to_string(),
        )
    } else if env.var("OPENAI_BASE_URL").is_some() {
        (
            "custom".to_string(),
            "OPENAI_BASE_URL in the environment".to_string(),
        )
    } else if env.var("OPENAI_API_KEY").is_some() {
        (
            "openai".to_string(),
            "OPENAI_API_KEY in the environment".to_string(),
        )
    } else {
        return Err(ResolveError::NoProvider);
    };

    let preset = preset(&provider).ok_or_else(|| ResolveError::UnknownProvider {
        name: provider.clone(),
        known: PRESETS.iter().map(|p| p.id).collect::<Vec<_>>().join(", "),
    })?;
    // config.yaml's base_url/api_key/default belong to the provider config.yaml names.
    let config_applies = config_provider
        .as_deref()
        .is_none_or(|p| preset_id(p) == Some(preset.id));

    let env_base = if matches!(preset.id, "custom" | "openai") {
        env.var("OPENAI_BASE_URL")
    } else {
        None
    };
    let base_from_env =
        cli_base.is_none() && !(config_applies && config_base.is_some()) && env_base.is_some();
    let base_url = cli_base
        .or(config_base.filter(|_| config_applies))
        .or(env_base)
        .or_else(|| Some(preset.base_url.to_string()).filter(|b| !b.is_empty()))
        .ok_or_else(|| ResolveError::MissingBaseUrl {
            provider: preset.id.to_string(),
        })?;

    let mut key_source = None;
    let mut api_key = named(&config.api_key)
        .filter(|_| config_applies)
        .inspect(|_| key_source = Some("config.yaml model.api_key".to_string()));
    for var in preset.key_env {
        if api_key.is_some() {
            break;
        }
        api_key = env.var(var).inspect(|_| key_source = Some(var.to_string()));
    }
    if api_key.is_none() && preset.id == "custom" && base_from_env {
        api_key = env
            .var("OPENAI_API_KEY")
            .inspect(|_| key_source = Some("OPENAI_API_KEY".to_string()));
    }
    if api_key.is_none() && !preset.key_env.is_empty() && !is_loopback(&base_url) {
        return Err(ResolveError::MissingKey {
            provider: preset.id.to_string(),
            env: preset.key_env.join(" or "),
        });
    }

    let model = named(&cli.model)
        .or(named(&config.default).filter(|_| config_applies))
        .or(preset.default_model.map(str::to_string))
        .ok_or_else(|| ResolveError::MissingModel {
            provider: preset.id.to_string(),
        })?;

    Ok(ProviderSpec {
        provider: preset.id.to_string(),
        base_url,
        api_key,
        model,
        wire: preset.wire,
        chosen_by,
        key_source,
    })
}

fn preset_id(name: &str) -> Option<&'static str> {
    preset(name).map(|p| p.id)
}

/// Whether a URL points at this machine (such endpoints need no key).
pub fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    let host = host.to_ascii_lowercase();
    host == "localhost"
        || host.ends_with(".localhost")
        || host == "::1"
        || host == "0.0.0.0"
        || host.starts_with("127.")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(
        provider: Option<&str>,
        base: Option<&str>,
        key: Option<&str>,
        model: Option<&str>,
    ) -> ModelSettings {
        ModelSettings {
            provider: provider.map(Into::into),
            base_url: base.map(Into::into),
            api_key: key.map(Into::into),
            default: model.map(Into::into),
            ..ModelSettings::default()
        }
    }

    fn no_env() -> Environment {
        Environment::isolated::<&str, &str>([])
    }

    #[test]
    fn the_bench_config_resolves_to_custom_with_its_key() {
        let s = settings(
            Some("custom"),
            Some("http://127.0.0.1:9/v1"),
            Some("sk-mock"),
            Some("mock-model"),
        );
        let spec = resolve(&s, &no_env(), &Overrides::default()).unwrap();
        assert_eq!(spec.provider, "custom");
        assert_eq!(spec.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(spec.api_key.as_deref(), Some("sk-mock"));
        assert_eq!(spec.model, "mock-model");
    }

    #[test]
    fn environment_is_used_when_config_names_nothing() {
        let env = Environment::isolated([("OPENROUTER_API_KEY", "sk-or")]);
        let spec = resolve(&ModelSettings::default(), &env, &Overrides::default()).unwrap();
        assert_eq!(spec.provider, "openrouter");
        assert_eq!(spec.api_key.as_deref(), Some("sk-or"));
        assert_eq!(spec.key_source.as_deref(), Some("OPENROUTER_API_KEY"));

        let env = Environment::isolated([
            ("OPENAI_BASE_URL", "http://10.0.0.2:8000/v1"),
            ("OPENAI_API_KEY", "k"),
        ]);
        let spec = resolve(
            &settings(None, None, None, Some("m")),
            &env,
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(spec.provider, "custom");
        assert_eq!(spec.base_url, "http://10.0.0.2:8000/v1");
        assert_eq!(spec.api_key.as_deref(), Some("k"));
    }

    #[test]
    fn command_line_beats_config() {
        let s = settings(
            Some("custom"),
            Some("http://127.0.0.1:1/v1"),
            None,
            Some("a"),
        );
        let cli = Overrides {
            model: Some("b".into()),
            base_url: Some("http://127.0.0.1:2/v1".into()),
            ..Overrides::default()
        };
        let spec = resolve(&s, &no_env(), &cli).unwrap();
        assert_eq!(
            (spec.model.as_str(), spec.base_url.as_str()),
            ("b", "http://127.0.0.1:2/v1")
        );
    }

    #[test]
    fn config_values_of_another_provider_are_not_mixed_in() {
        let s = settings(
            Some("custom"),
            Some("http://127.0.0.1:1/v1"),
            Some("sk-custom"),
            Some("local-m"),
        );
        let env = Environment::isolated([("OPENROUTER_API_KEY", "sk-or")]);
        let cli = Overrides {
            provider: Some("openrouter".into()),
            ..Overrides::default()
        };
        let spec = resolve(&s, &env, &cli).unwrap();
        assert_eq!(spec.base_url, "https://openrouter.ai/api/v1");
        assert_eq!(spec.api_key.as_deref(), Some("sk-or"));
        assert_ne!(spec.model, "local-m");
    }

    #[test]
    fn errors_name_what_to_fix() {
        assert_eq!(
            resolve(&ModelSettings::default(), &no_env(), &Overrides::default()),
            Err(ResolveError::NoProvider)
        );
        let err = resolve(
            &settings(Some("openrouter"), None, None, None),
            &no_env(),
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("OPENROUTER_API_KEY"), "{err}");
        let err = resolve(
            &settings(Some("nope"), None, None, None),
            &no_env(),
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("openrouter"), "{err}");
        let err = resolve(
            &settings(Some("custom"), None, None, Some("m")),
            &no_env(),
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(matches!(err, ResolveError::MissingBaseUrl { .. }));
        let err = resolve(
            &settings(Some("ollama"), None, None, None),
            &no_env(),
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(matches!(err, ResolveError::MissingModel { .. }));
    }

    #[test]
    fn loopback_detection() {
        for u in [
            "http://localhost:1/v1",
            "http://127.0.0.1/v1",
            "http://[::1]:80",
            "http://0.0.0.0:5",
            "http://u:p@127.0.0.2:9",
        ] {
            assert!(is_loopback(u), "{u}");
        }
        for u in [
            "https://openrouter.ai/api/v1",
            "http://10.0.0.1:8000",
            "http://localhost.evil.com",
        ] {
            assert!(!is_loopback(u), "{u}");
        }
    }
}
