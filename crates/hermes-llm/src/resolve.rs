//! Choosing the provider: which preset, base URL, key and model a run uses, from the command
//! line, then `config.yaml`, then the environment. The result ([`ProviderSpec`]) says where
//! each part came from, so `hermes` can explain its choice and name the key to fix.

use hermes_config::{Environment, ModelSettings};

/// How requests are encoded on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    OpenAiChat,
    Anthropic,
    Responses,
    /// AWS Bedrock Converse (the `bedrock` cargo feature).
    Bedrock,
}

impl WireFormat {
    /// `api_mode` spellings of the Python Hermes and short ones.
    pub fn parse(mode: &str) -> Option<WireFormat> {
        match mode.trim().to_ascii_lowercase().as_str() {
            "chat_completions" | "chat" | "openai" => Some(WireFormat::OpenAiChat),
            "anthropic_messages" | "anthropic" | "messages" => Some(WireFormat::Anthropic),
            "codex_responses" | "responses" | "openai_responses" => Some(WireFormat::Responses),
            "bedrock_converse" | "bedrock" => Some(WireFormat::Bedrock),
            _ => None,
        }
    }

    /// The wire format a base URL implies, when it implies one.
    pub fn from_base_url(url: &str) -> Option<WireFormat> {
        let lower = url.to_ascii_lowercase();
        let path = lower.trim_end_matches('/');
        if lower.contains("://api.anthropic.com") || path.ends_with("/anthropic") {
            Some(WireFormat::Anthropic)
        } else {
            None
        }
    }
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
    Preset {
        id: "bedrock",
        // Derived from AWS_REGION when empty.
        base_url: "",
        key_env: &[],
        default_model: Some("us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        wire: WireFormat::Bedrock,
    },
    Preset {
        id: "anthropic",
        base_url: "https://api.anthropic.com",
        key_env: &["ANTHROPIC_API_KEY", "ANTHROPIC_TOKEN"],
        default_model: Some("claude-sonnet-4-5"),
        wire: WireFormat::Anthropic,
    },
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
    Preset {
        id: "openai-codex",
        // HERMES_CODEX_BASE_URL overrides; the key is the ChatGPT sign-in in auth.json.
        base_url: "https://chatgpt.com/backend-api/codex",
        key_env: &[],
        default_model: Some("gpt-5.5"),
        wire: WireFormat::Responses,
    },
    chat("custom", "", &[], None),
    // The in-process model (hermes-local): no endpoint and no key; resolved by `local_spec`.
    chat(LOCAL_PROVIDER, "", &[], Some(DEFAULT_LOCAL_MODEL)),
];

/// The provider id of the model run in-process (a GGUF file).
pub const LOCAL_PROVIDER: &str = "local";
/// The model used when nothing is configured and no provider key is in the environment.
pub const DEFAULT_LOCAL_MODEL: &str = "qwen2.5-coder-1.5b";
/// `chosen_by` of that fallback, so frontends can tell the user once how to switch.
pub const CHOSEN_BY_DEFAULT: &str = "the default (no provider configured)";

pub fn preset(id: &str) -> Option<&'static Preset> {
    let id = match id {
        "llama.cpp" | "llama-cpp" => "llamacpp",
        "lm-studio" => "lmstudio",
        "google" => "gemini",
        "grok" => "xai",
        "codex" | "chatgpt" => "openai-codex",
        other => other,
    };
    PRESETS.iter().find(|p| p.id.eq_ignore_ascii_case(id))
}

/// Choices made on the command line (or by a frontend for one session).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
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

impl ProviderSpec {
    /// The model runs in-process: `base_url` then holds its GGUF path (empty for the default
    /// model) and `wire` is unused.
    pub fn is_local(&self) -> bool {
        self.provider == LOCAL_PROVIDER
    }

    /// The OAuth sign-in this spec's requests use instead of a key: `openai-codex` always,
    /// `nous` when no `NOUS_API_KEY` (or configured key) was found.
    pub fn oauth(&self) -> Option<crate::oauth::AuthProvider> {
        if self.api_key.is_some() {
            return None;
        }
        match self.provider.as_str() {
            "nous" => Some(crate::oauth::AuthProvider::Nous),
            "openai-codex" => Some(crate::oauth::AuthProvider::Codex),
            _ => None,
        }
    }
}

/// Where the key of an OAuth route comes from (`ProviderSpec::key_source`).
pub const AUTH_JSON_SOURCE: &str = "auth.json (hermes login)";

/// Presets of servers that run on the user's machine and serve the OpenAI API under `/v1`.
const LOCAL_SERVER_PRESETS: [&str; 4] = ["ollama", "vllm", "llamacpp", "lmstudio"];

/// A local server's base URL given without a path (`http://localhost:11434`) gets the `/v1`
/// its OpenAI-compatible API lives under; every other URL is left as written.
pub fn fix_local_base_url(preset_id: &str, wire: WireFormat, base_url: &str) -> String {
    let local_server = LOCAL_SERVER_PRESETS.contains(&preset_id)
        || (preset_id == "custom" && wire == WireFormat::OpenAiChat && is_loopback(base_url));
    let trimmed = base_url.trim().trim_end_matches('/');
    let path_is_empty = trimmed
        .split_once("://")
        .is_some_and(|(_, rest)| !rest.contains('/'));
    if local_server && path_is_empty {
        format!("{trimmed}/v1")
    } else {
        base_url.to_string()
    }
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

/// A provider the user named in config.yaml (`custom_providers:` list or `providers:` map).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NamedProvider {
    pub name: String,
    pub base_url: String,
    pub api_key: Option<String>,
    /// An environment variable holding the key.
    pub key_env: Option<String>,
    pub api_mode: Option<String>,
    pub model: Option<String>,
}

/// The named providers of a config document: `custom_providers: [{name, base_url, api_key,
/// api_mode, model}]` and `providers: {name: {base_url|api|url, api_key, key_env, api_mode|transport,
/// default_model|model}}`.
pub fn named_providers(raw: &serde_json::Value) -> Vec<NamedProvider> {
    let text = |v: &serde_json::Value, keys: &[&str]| {
        keys.iter()
            .find_map(|k| v.get(*k).and_then(|x| x.as_str()))
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let entry = |name: String, v: &serde_json::Value| {
        Some(NamedProvider {
            name,
            base_url: text(v, &["base_url", "api", "url"])?,
            api_key: text(v, &["api_key"]),
            key_env: text(v, &["key_env", "api_key_env"]),
            api_mode: text(v, &["api_mode", "transport"]),
            model: text(v, &["default_model", "model"]),
        })
    };
    let mut out = Vec::new();
    if let Some(list) = raw.get("custom_providers").and_then(|v| v.as_array()) {
        for v in list {
            if let Some(name) = text(v, &["name"]) {
                out.extend(entry(name, v));
            }
        }
    }
    if let Some(map) = raw.get("providers").and_then(|v| v.as_object()) {
        for (name, v) in map {
            if preset(name).is_none() {
                out.extend(entry(name.clone(), v));
            }
        }
    }
    out
}

fn find_named<'a>(named: &'a [NamedProvider], wanted: &str) -> Option<&'a NamedProvider> {
    let norm = |s: &str| s.trim().to_ascii_lowercase().replace([' ', '_'], "-");
    let wanted = norm(wanted.strip_prefix("custom:").unwrap_or(wanted));
    named.iter().find(|n| norm(&n.name) == wanted)
}

/// Resolves the provider: command line > config.yaml > environment.
pub fn resolve(
    config: &ModelSettings,
    env: &Environment,
    cli: &Overrides,
) -> Result<ProviderSpec, ResolveError> {
    resolve_with(config, env, cli, &[])
}

/// [`resolve`] knowing the user's named providers.
pub fn resolve_with(
    config: &ModelSettings,
    env: &Environment,
    cli: &Overrides,
    named_list: &[NamedProvider],
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
    let gguf = |v: &Option<String>| named(v).filter(|m| is_gguf(m));

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
    } else if named(&config.path).is_some() {
        (
            LOCAL_PROVIDER.to_string(),
            "config.yaml model.path".to_string(),
        )
    } else if gguf(&cli.model).is_some() {
        (LOCAL_PROVIDER.to_string(), "--model".to_string())
    } else if gguf(&config.default).is_some() {
        (
            LOCAL_PROVIDER.to_string(),
            "config.yaml model.default".to_string(),
        )
    } else if env.var("OPENROUTER_API_KEY").is_some() {
        (
            "openrouter".to_string(),
            "OPENROUTER_API_KEY in the environment".to_string(),
        )
    } else if env.var("ANTHROPIC_API_KEY").is_some() {
        (
            "anthropic".to_string(),
            "ANTHROPIC_API_KEY in the environment".to_string(),
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
    } else if named(&config.default).is_some() || has_provider_key(env) {
        // A hosted model or a key no rule above picks: ask which provider, rather than
        // quietly running something else.
        return Err(ResolveError::NoProvider);
    } else {
        (LOCAL_PROVIDER.to_string(), CHOSEN_BY_DEFAULT.to_string())
    };

    if preset_id(&provider) == Some(LOCAL_PROVIDER) {
        return Ok(local_spec(
            config,
            cli,
            config_provider.as_deref(),
            chosen_by,
        ));
    }

    if preset(&provider).is_none()
        && let Some(entry) = find_named(named_list, &provider)
    {
        return resolve_named(entry, config, env, cli, chosen_by);
    }
    let preset = preset(&provider).ok_or_else(|| ResolveError::UnknownProvider {
        name: provider.clone(),
        known: PRESETS
            .iter()
            .map(|p| p.id)
            .chain(named_list.iter().map(|n| n.name.as_str()))
            .collect::<Vec<_>>()
            .join(", "),
    })?;
    // config.yaml's base_url/api_key/default belong to the provider config.yaml names.
    let config_applies = config_provider
        .as_deref()
        .is_none_or(|p| preset_id(p) == Some(preset.id));

    let env_base = match preset.id {
        "custom" | "openai" => env.var("OPENAI_BASE_URL"),
        "openai-codex" => env.var("HERMES_CODEX_BASE_URL"),
        _ => None,
    };
    let base_from_env =
        cli_base.is_none() && !(config_applies && config_base.is_some()) && env_base.is_some();
    let base_url = cli_base
        .or(config_base.filter(|_| config_applies))
        .or(env_base)
        .or_else(|| {
            // Bedrock derives its endpoint from the AWS region.
            Some(preset.base_url.to_string())
                .filter(|b| !b.is_empty() || preset.wire == WireFormat::Bedrock)
        })
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
    if api_key.is_none() && preset.wire == WireFormat::Bedrock {
        // A Bedrock API key; without one, SigV4 with the AWS credentials is used.
        api_key = env
            .var("AWS_BEARER_TOKEN_BEDROCK")
            .inspect(|_| key_source = Some("AWS_BEARER_TOKEN_BEDROCK".to_string()));
        if api_key.is_none() && env.var("AWS_ACCESS_KEY_ID").is_some() {
            // SigV4: no key is sent, but credentials are, and a rejection must name them.
            key_source = Some("AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (SigV4)".to_string());
        }
    }
    if api_key.is_none() && preset.id == "custom" && base_from_env {
        api_key = env
            .var("OPENAI_API_KEY")
            .inspect(|_| key_source = Some("OPENAI_API_KEY".to_string()));
    }
    if api_key.is_none() && preset.id == "nous" {
        // Without NOUS_API_KEY the Nous Portal sign-in in auth.json is used.
        key_source = Some(AUTH_JSON_SOURCE.to_string());
    } else if api_key.is_none() && preset.id == "openai-codex" {
        key_source = Some(AUTH_JSON_SOURCE.to_string());
    } else if api_key.is_none() && !preset.key_env.is_empty() && !is_loopback(&base_url) {
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

    let wire = named(&config.api_mode)
        .filter(|_| config_applies)
        .and_then(|m| WireFormat::parse(&m))
        .or_else(|| {
            (preset.id == "custom")
                .then(|| WireFormat::from_base_url(&base_url))
                .flatten()
        })
        .unwrap_or(preset.wire);
    let base_url = fix_local_base_url(preset.id, wire, &base_url);

    Ok(ProviderSpec {
        provider: preset.id.to_string(),
        base_url,
        api_key,
        model,
        wire,
        chosen_by,
        key_source,
    })
}

/// A provider from the user's `custom_providers` / `providers` list.
fn resolve_named(
    entry: &NamedProvider,
    config: &ModelSettings,
    env: &Environment,
    cli: &Overrides,
    chosen_by: String,
) -> Result<ProviderSpec, ResolveError> {
    let pick = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let config_applies = pick(&config.provider)
        .is_some_and(|p| find_named(std::slice::from_ref(entry), &p).is_some());
    let base_url = pick(&cli.base_url).unwrap_or_else(|| entry.base_url.clone());
    let (api_key, key_source) = match (&entry.api_key, &entry.key_env) {
        (Some(k), _) => (
            Some(k.clone()),
            Some(format!("custom provider `{}` api_key", entry.name)),
        ),
        (None, Some(var)) => (env.var(var), Some(var.clone())),
        (None, None) => (None, None),
    };
    let model = pick(&cli.model)
        .or(pick(&config.default).filter(|_| config_applies))
        .or(entry.model.clone())
        .ok_or_else(|| ResolveError::MissingModel {
            provider: entry.name.clone(),
        })?;
    let wire = entry
        .api_mode
        .as_deref()
        .and_then(WireFormat::parse)
        .or_else(|| WireFormat::from_base_url(&base_url))
        .unwrap_or(WireFormat::OpenAiChat);
    Ok(ProviderSpec {
        provider: entry.name.clone(),
        base_url,
        api_key,
        model,
        wire,
        chosen_by,
        key_source,
    })
}

/// The in-process model: the GGUF from `--model x.gguf`, else `model.path`, else a `.gguf`
/// `model.default` (config values only when config.yaml names no other provider), else the
/// default model.
fn local_spec(
    config: &ModelSettings,
    cli: &Overrides,
    config_provider: Option<&str>,
    chosen_by: String,
) -> ProviderSpec {
    let config_applies = config_provider.is_none_or(|p| preset_id(p) == Some(LOCAL_PROVIDER));
    let trimmed = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let path = trimmed(&cli.model)
        .filter(|m| is_gguf(m))
        .or(trimmed(&config.path).filter(|_| config_applies))
        .or(trimmed(&config.default).filter(|m| config_applies && is_gguf(m)))
        .unwrap_or_default();
    let model = std::path::Path::new(&path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| DEFAULT_LOCAL_MODEL.to_string());
    ProviderSpec {
        provider: LOCAL_PROVIDER.to_string(),
        base_url: path,
        api_key: None,
        model,
        wire: WireFormat::OpenAiChat,
        chosen_by,
        key_source: None,
    }
}

fn is_gguf(model: &str) -> bool {
    model.to_ascii_lowercase().ends_with(".gguf")
}

/// Whether the environment holds the key of any known provider.
fn has_provider_key(env: &Environment) -> bool {
    PRESETS
        .iter()
        .flat_map(|p| p.key_env)
        .chain(&["OPENAI_BASE_URL"])
        .any(|var| env.var(var).is_some())
}

fn preset_id(name: &str) -> Option<&'static str> {
    preset(name).map(|p| p.id)
}

/// The host of a URL, lower-cased, without port, user info or IPv6 brackets.
pub fn url_host(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    host.to_ascii_lowercase()
}

/// Whether the URL's host is `domain` or one of its subdomains.
pub fn host_matches(url: &str, domain: &str) -> bool {
    let host = url_host(url);
    host == domain || host.ends_with(&format!(".{domain}"))
}

/// Whether a URL points at this machine (such endpoints need no key).
pub fn is_loopback(url: &str) -> bool {
    let host = url_host(url);
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
        let env = Environment::isolated([("GEMINI_API_KEY", "g")]);
        assert_eq!(
            resolve(&ModelSettings::default(), &env, &Overrides::default()),
            Err(ResolveError::NoProvider),
            "a key no rule picks asks for a provider"
        );
        assert_eq!(
            resolve(
                &settings(None, None, None, Some("anthropic/claude-sonnet-4.5")),
                &no_env(),
                &Overrides::default()
            ),
            Err(ResolveError::NoProvider),
            "a hosted model without a provider asks for one"
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
    fn anthropic_and_named_providers_and_api_mode() {
        let env = Environment::isolated([("ANTHROPIC_API_KEY", "sk-ant")]);
        let spec = resolve(&ModelSettings::default(), &env, &Overrides::default()).unwrap();
        assert_eq!(
            (spec.provider.as_str(), spec.wire),
            ("anthropic", WireFormat::Anthropic)
        );
        assert_eq!(spec.base_url, "https://api.anthropic.com");

        let raw: serde_json::Value = serde_json::json!({
            "custom_providers": [{"name": "Work Proxy", "base_url": "https://proxy.example/v1", "api_key": "k", "api_mode": "codex_responses", "model": "gpt-5.1-codex"}],
            "providers": {"minimax": {"api": "https://api.minimax.io/anthropic", "key_env": "MM_KEY", "default_model": "MiniMax-M2"}}
        });
        let named = named_providers(&raw);
        assert_eq!(named.len(), 2);
        let s = settings(Some("work-proxy"), None, None, None);
        let spec = resolve_with(&s, &no_env(), &Overrides::default(), &named).unwrap();
        assert_eq!(
            (spec.wire, spec.model.as_str(), spec.api_key.as_deref()),
            (WireFormat::Responses, "gpt-5.1-codex", Some("k"))
        );
        let env = Environment::isolated([("MM_KEY", "mm")]);
        let s = settings(Some("custom:minimax"), None, None, None);
        let spec = resolve_with(&s, &env, &Overrides::default(), &named).unwrap();
        assert_eq!(
            (spec.wire, spec.api_key.as_deref()),
            (WireFormat::Anthropic, Some("mm"))
        );

        let mut s = settings(
            Some("custom"),
            Some("http://127.0.0.1:1/v1"),
            None,
            Some("m"),
        );
        s.api_mode = Some("anthropic_messages".into());
        assert_eq!(
            resolve(&s, &no_env(), &Overrides::default()).unwrap().wire,
            WireFormat::Anthropic
        );
        let s = settings(Some("nope"), None, None, None);
        let err = resolve_with(&s, &no_env(), &Overrides::default(), &named).unwrap_err();
        assert!(err.to_string().contains("Work Proxy"), "{err}");
    }

    #[test]
    fn nothing_configured_means_the_default_local_model() {
        let spec = resolve(&ModelSettings::default(), &no_env(), &Overrides::default()).unwrap();
        assert!(spec.is_local());
        assert_eq!(spec.chosen_by, CHOSEN_BY_DEFAULT);
        assert_eq!(
            (spec.base_url.as_str(), spec.model.as_str()),
            ("", DEFAULT_LOCAL_MODEL)
        );
        assert_eq!((spec.api_key, spec.key_source), (None, None));
    }

    #[test]
    fn a_gguf_path_selects_the_local_provider() {
        let mut s = settings(Some("local"), None, None, None);
        s.path = Some("models/qwen3-0.6b-q8_0.gguf".into());
        let spec = resolve(&s, &no_env(), &Overrides::default()).unwrap();
        assert!(spec.is_local());
        assert_eq!(spec.base_url, "models/qwen3-0.6b-q8_0.gguf");
        assert_eq!(spec.model, "qwen3-0.6b-q8_0");

        let s = ModelSettings {
            path: Some("/m/a.gguf".into()),
            ..ModelSettings::default()
        };
        let env = Environment::isolated([("OPENROUTER_API_KEY", "sk-or")]);
        let spec = resolve(&s, &env, &Overrides::default()).unwrap();
        assert_eq!(
            (spec.provider.as_str(), spec.chosen_by.as_str()),
            ("local", "config.yaml model.path"),
            "config beats the environment"
        );

        let cli = Overrides {
            model: Some("/tmp/b.GGUF".into()),
            ..Overrides::default()
        };
        let spec = resolve(&ModelSettings::default(), &env, &cli).unwrap();
        assert_eq!(
            (spec.provider.as_str(), spec.base_url.as_str()),
            ("local", "/tmp/b.GGUF")
        );

        // config.yaml's path belongs to `local` only.
        let mut s = settings(Some("openrouter"), None, None, None);
        s.path = Some("/m/a.gguf".into());
        let cli = Overrides {
            provider: Some("local".into()),
            ..Overrides::default()
        };
        let spec = resolve(&s, &env, &cli).unwrap();
        assert_eq!(
            (spec.base_url.as_str(), spec.model.as_str()),
            ("", DEFAULT_LOCAL_MODEL)
        );
    }

    #[test]
    fn local_servers_get_their_v1() {
        let s = settings(
            Some("ollama"),
            Some("http://localhost:11434"),
            None,
            Some("qwen3"),
        );
        let spec = resolve(&s, &no_env(), &Overrides::default()).unwrap();
        assert_eq!(spec.base_url, "http://localhost:11434/v1");
        let s = settings(
            Some("lmstudio"),
            Some("http://127.0.0.1:1234/"),
            None,
            Some("m"),
        );
        assert_eq!(
            resolve(&s, &no_env(), &Overrides::default())
                .unwrap()
                .base_url,
            "http://127.0.0.1:1234/v1"
        );
        let s = settings(
            Some("custom"),
            Some("http://127.0.0.1:8000"),
            None,
            Some("m"),
        );
        assert_eq!(
            resolve(&s, &no_env(), &Overrides::default())
                .unwrap()
                .base_url,
            "http://127.0.0.1:8000/v1"
        );
        for (preset, url) in [
            ("vllm", "http://localhost:8000/v1"),
            ("ollama", "http://gpu-box:11434/api/openai"),
            ("custom", "https://proxy.example"),
        ] {
            assert_eq!(fix_local_base_url(preset, WireFormat::OpenAiChat, url), url);
        }
        assert_eq!(
            fix_local_base_url("custom", WireFormat::Anthropic, "http://127.0.0.1:9"),
            "http://127.0.0.1:9",
            "only the OpenAI API lives under /v1"
        );
    }

    #[test]
    fn oauth_routes_need_no_key() {
        let s = settings(Some("codex"), None, None, None);
        let spec = resolve(&s, &no_env(), &Overrides::default()).unwrap();
        assert_eq!(
            (spec.provider.as_str(), spec.wire, spec.model.as_str()),
            ("openai-codex", WireFormat::Responses, "gpt-5.5")
        );
        assert_eq!(spec.oauth(), Some(crate::oauth::AuthProvider::Codex));
        assert_eq!(spec.key_source.as_deref(), Some(AUTH_JSON_SOURCE));
        let spec = resolve(
            &settings(Some("nous"), None, None, None),
            &no_env(),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(spec.oauth(), Some(crate::oauth::AuthProvider::Nous));
        let env = Environment::isolated([("NOUS_API_KEY", "nk-1234567")]);
        let spec = resolve(
            &settings(Some("nous"), None, None, None),
            &env,
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(spec.oauth(), None, "a key wins over the sign-in");
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
