//! Building the model providers of a session from config and environment: the primary
//! (resolved command line > config.yaml > environment, named `custom_providers` included),
//! wrapped in a credential pool when several keys are configured (the embedded model in place
//! of an HTTP provider for `local`), signed in through `auth.json` for the OAuth routes
//! (`nous` without a key, `openai-codex`), bounded by the stream limits of its route, and the
//! fallback chain (`fallback_providers`, then the older `fallback_model`) tried in order when
//! it fails for good. The runtime builds one set per distinct choice and shares it between
//! sessions, so their HTTP connections are pooled.

use std::sync::Arc;

use hermes_config::{Config, Environment, HermesHome, ModelSettings};
use hermes_core::ModelTarget;
use hermes_llm::auth_store::AuthStore;
use hermes_llm::oauth::{self, Endpoints, OAuthProvider};
use hermes_llm::pool::{CredentialPool, PooledProvider, Strategy};
use hermes_llm::resolve::{NamedProvider, named_providers, preset};
use hermes_llm::{HttpTimeouts, Overrides, Provider, ProviderOptions, ProviderSpec, StreamLimits};
use serde_json::Value;

use crate::error::SessionError;

/// The providers of a session.
pub struct Providers {
    pub spec: ProviderSpec,
    pub primary: Arc<dyn Provider>,
    pub fallbacks: Vec<ModelTarget>,
    /// Fallback entries that could not be used, and notices about the model, for the user.
    pub warnings: Vec<String>,
}

impl std::fmt::Debug for Providers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Providers")
            .field("provider", &self.spec.provider)
            .field("model", &self.spec.model)
            .field("fallbacks", &self.fallbacks.len())
            .finish_non_exhaustive()
    }
}

impl Providers {
    /// The primary target, then the fallbacks.
    pub fn primary_target(&self) -> ModelTarget {
        ModelTarget {
            provider: self.primary.clone(),
            model: self.spec.model.clone(),
        }
    }
}

pub fn build(
    config: &Config,
    env: &Environment,
    home: &HermesHome,
    overrides: &Overrides,
) -> Result<Providers, SessionError> {
    let named = named_providers(&config.raw);
    let spec = hermes_llm::resolve::resolve_with(&config.model, env, overrides, &named)?;
    #[cfg_attr(not(feature = "bedrock"), allow(unused_mut))]
    let mut options = ProviderOptions::new(
        HttpTimeouts::default(),
        config
            .raw
            .pointer("/prompt_caching/cache_ttl")
            .and_then(Value::as_str)
            .map(str::to_string),
    );
    #[cfg(feature = "bedrock")]
    {
        options.aws = Some(hermes_llm::bedrock::AwsCredentials {
            access_key_id: env.var("AWS_ACCESS_KEY_ID").unwrap_or_default(),
            secret_access_key: env.var("AWS_SECRET_ACCESS_KEY").unwrap_or_default(),
            session_token: env.var("AWS_SESSION_TOKEN"),
            region: env
                .var("AWS_REGION")
                .or_else(|| env.var("AWS_DEFAULT_REGION"))
                .unwrap_or_default(),
        });
    }
    let primary = pooled_or_single(&spec, config, env, home, &options)?;
    let (fallbacks, warnings) = fallbacks(config, env, home, &named, &options);
    Ok(Providers {
        spec,
        primary,
        fallbacks,
        warnings,
    })
}

/// The providers a session talks to: [`build`], with the in-process model (hermes-local) in
/// place of the HTTP provider a `local` choice implies (loaded on first use), prompted tool
/// calling where `model.tool_calling: prompt` asks for it, and the notice about the bundled
/// default model.
pub fn for_session(
    config: &Config,
    env: &Environment,
    home: &HermesHome,
    overrides: &Overrides,
) -> Result<Providers, SessionError> {
    let mut providers = build(config, env, home, overrides)?;
    let spec = &providers.spec;
    providers.primary = if spec.is_local() {
        hermes_local::provider_for(spec, &config.model, home.root())?
    } else {
        hermes_local::with_tool_calling(&config.model, providers.primary.clone())?
    };
    let notice = hermes_local::default_model_notice(spec, &home.config_path());
    providers.warnings.extend(notice);
    Ok(providers)
}

/// The provider for `spec`, drawing from a credential pool when more than one key is known,
/// or from the sign-in in `auth.json` for an OAuth route; bounded by the limits configured for
/// its route (`providers.<name>.*timeout*`, `agent.stream_max_*`, `HERMES_STREAM_*`).
fn pooled_or_single(
    spec: &ProviderSpec,
    config: &Config,
    env: &Environment,
    home: &HermesHome,
    options: &ProviderOptions,
) -> Result<Arc<dyn Provider>, hermes_llm::LlmError> {
    let mut options = options.clone();
    options.limits = StreamLimits::from_config(
        &config.raw,
        env,
        &spec.provider,
        &spec.model,
        &spec.base_url,
    );
    let options = &options;
    if let Some(kind) = spec.oauth() {
        let store = AuthStore::for_home(home.root());
        oauth::check_signed_in(kind, &store)
            .map_err(|e| hermes_llm::LlmError::Auth(e.to_string()))?;
        // The sign-in names its inference endpoint unless the user chose one.
        let base_from_login = preset(&spec.provider).is_some_and(|p| p.base_url == spec.base_url);
        return Ok(Arc::new(OAuthProvider::new(
            kind,
            spec,
            options,
            store,
            Endpoints::from_env(env),
            base_from_login,
        )?));
    }
    let (keys, strategy) = pool_keys(spec, config, env);
    if keys.len() < 2 {
        return hermes_llm::build_provider_with(spec, options);
    }
    let pool = Arc::new(CredentialPool::new(
        &spec.provider,
        keys,
        strategy,
        Some(home.join("credential_pool.json")),
    ));
    let template = spec.clone();
    let options = options.clone();
    let endpoint = hermes_llm::build_provider_with(spec, &options)?
        .endpoint()
        .to_string();
    Ok(Arc::new(PooledProvider::new(
        pool,
        &spec.provider,
        &endpoint,
        move |key| {
            let spec = ProviderSpec {
                api_key: Some(key.to_string()),
                ..template.clone()
            };
            hermes_llm::build_provider_with(&spec, &options)
        },
    )))
}

/// Every key known for the provider: the resolved one first, then `credential_pool.<provider>`
/// in config.yaml (a list, or `{keys: [...], strategy}`), then `<KEY_ENV>_1..n`.
fn pool_keys(spec: &ProviderSpec, config: &Config, env: &Environment) -> (Vec<String>, Strategy) {
    let mut keys: Vec<String> = spec.api_key.iter().cloned().collect();
    let entry = config
        .raw
        .pointer(&format!("/credential_pool/{}", spec.provider));
    let listed = entry.and_then(|e| {
        e.as_array()
            .or_else(|| e.get("keys").and_then(Value::as_array))
    });
    keys.extend(
        listed
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|k| env.substitute(k)),
    );
    if let Some(p) = preset(&spec.provider) {
        for var in p.key_env {
            for n in 1..=32 {
                match env.var(&format!("{var}_{n}")) {
                    Some(k) => keys.push(k),
                    None => break,
                }
            }
        }
    }
    let strategy = entry
        .and_then(|e| e.get("strategy"))
        .or_else(|| {
            config
                .raw
                .pointer(&format!("/credential_pool_strategies/{}", spec.provider))
        })
        .and_then(Value::as_str)
        .and_then(Strategy::parse)
        .unwrap_or_default();
    (keys, strategy)
}

/// One entry of the fallback chain and where it came from (`fallback_providers[1]`).
pub struct FallbackEntry {
    pub label: String,
    pub entry: Value,
}

impl FallbackEntry {
    fn text(&self, key: &str) -> Option<String> {
        self.entry
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    }
}

/// The fallback chain: `fallback_providers` in order, then the Python Hermes's older
/// `fallback_model` (one entry or a list) so configs written for it keep working. An entry
/// naming the same provider, model and base URL as an earlier one is skipped.
pub fn fallback_chain(config: &Config) -> Vec<FallbackEntry> {
    let mut seen = std::collections::HashSet::new();
    let mut chain = Vec::new();
    for key in ["fallback_providers", "fallback_model"] {
        let entries: Vec<(String, Value)> = match config.raw.get(key) {
            Some(Value::Array(list)) => list
                .iter()
                .enumerate()
                .map(|(i, e)| (format!("{key}[{i}]"), e.clone()))
                .collect(),
            Some(Value::Null) | None => Vec::new(),
            Some(one) => vec![(key.to_string(), one.clone())],
        };
        for (label, entry) in entries {
            let entry = FallbackEntry { label, entry };
            let route = (
                entry.text("provider").unwrap_or_default().to_lowercase(),
                entry.text("model").unwrap_or_default().to_lowercase(),
                entry
                    .text("base_url")
                    .unwrap_or_default()
                    .trim_end_matches('/')
                    .to_lowercase(),
            );
            if !entry.entry.is_object() || seen.insert(route) {
                chain.push(entry);
            }
        }
    }
    chain
}

/// The fallback chain ([`fallback_chain`]: `{provider, model, base_url, api_key | key_env,
/// api_mode}` each), resolved and built; entries that cannot be used become warnings instead
/// of failing the run.
fn fallbacks(
    config: &Config,
    env: &Environment,
    home: &HermesHome,
    named: &[NamedProvider],
    options: &ProviderOptions,
) -> (Vec<ModelTarget>, Vec<String>) {
    let mut targets = Vec::new();
    let mut warnings = Vec::new();
    for entry in fallback_chain(config) {
        if !entry.entry.is_object() {
            warnings.push(format!(
                "{} is skipped: expected a mapping with provider and model",
                entry.label
            ));
            continue;
        }
        // `key_env` (or `api_key_env`) names the variable holding the key, as for
        // `custom_providers`.
        let key_from_env = || {
            entry
                .text("key_env")
                .or_else(|| entry.text("api_key_env"))
                .and_then(|name| env.var(&name))
                .filter(|k| !k.trim().is_empty())
        };
        let settings = ModelSettings {
            provider: entry.text("provider"),
            default: entry.text("model").or_else(|| entry.text("default")),
            base_url: entry.text("base_url"),
            api_key: entry.text("api_key").or_else(key_from_env),
            api_mode: entry.text("api_mode"),
            ..ModelSettings::default()
        };
        let built = hermes_llm::resolve::resolve_with(&settings, env, &Overrides::default(), named)
            .map_err(|e| e.to_string())
            .and_then(|spec| {
                pooled_or_single(&spec, config, env, home, options)
                    .map(|provider| ModelTarget {
                        provider,
                        model: spec.model.clone(),
                    })
                    .map_err(|e| e.to_string())
            });
        match built {
            Ok(t) => targets.push(t),
            Err(e) => warnings.push(format!("{} is skipped: {e}", entry.label)),
        }
    }
    (targets, warnings)
}

/// The model for an auxiliary task (`auxiliary.<task>.model`, `.provider`, `.base_url`,
/// `.api_key`): by default the session's own provider and model.
pub fn auxiliary(
    config: &Config,
    env: &Environment,
    home: &HermesHome,
    task: &str,
    primary: &Arc<dyn Provider>,
    main_model: &str,
) -> Result<ModelTarget, SessionError> {
    let entry = config.raw.pointer(&format!("/auxiliary/{task}"));
    let text = |k: &str| {
        entry
            .and_then(|e| e.get(k))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let model = text("model");
    if text("provider").is_none() && text("base_url").is_none() {
        return Ok(ModelTarget {
            provider: primary.clone(),
            model: model.unwrap_or_else(|| main_model.to_string()),
        });
    }
    let settings = ModelSettings {
        provider: text("provider"),
        default: model,
        base_url: text("base_url"),
        api_key: text("api_key"),
        api_mode: text("api_mode"),
        ..ModelSettings::default()
    };
    let named = named_providers(&config.raw);
    let setting = |reason: String| SessionError::Setting {
        origin: format!("auxiliary.{task}"),
        reason,
    };
    let spec = hermes_llm::resolve::resolve_with(&settings, env, &Overrides::default(), &named)
        .map_err(|e| setting(e.to_string()))?;
    let options = ProviderOptions::default();
    let provider =
        pooled_or_single(&spec, config, env, home, &options).map_err(|e| setting(e.to_string()))?;
    Ok(ModelTarget {
        provider,
        model: spec.model,
    })
}

/// The models of `mixture_of_agents` panels: a `provider:model` slot resolved like a fallback
/// entry (a provider preset or a `custom_providers` name, its key from the environment or the
/// credential pool), each time the tool runs.
pub struct PanelModels {
    config: Config,
    env: Environment,
    home: HermesHome,
}

impl PanelModels {
    pub fn new(config: &Config, env: &Environment, home: &HermesHome) -> PanelModels {
        PanelModels {
            config: config.clone(),
            env: env.clone(),
            home: home.clone(),
        }
    }
}

impl hermes_core::moa::SlotResolver for PanelModels {
    fn resolve(
        &self,
        slot: &hermes_core::moa::presets::Slot,
    ) -> Result<ModelTarget, hermes_core::moa::SlotError> {
        let settings = ModelSettings {
            provider: Some(slot.provider.clone()),
            default: Some(slot.model.clone()),
            ..ModelSettings::default()
        };
        let named = named_providers(&self.config.raw);
        let spec =
            hermes_llm::resolve::resolve_with(&settings, &self.env, &Overrides::default(), &named)?;
        let provider = pooled_or_single(
            &spec,
            &self.config,
            &self.env,
            &self.home,
            &ProviderOptions::default(),
        )?;
        Ok(ModelTarget {
            provider,
            model: spec.model,
        })
    }
}
