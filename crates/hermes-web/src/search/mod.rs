//! `web_search`: the Python Hermes's backends behind one call. [`Backend`] names them and
//! knows their keys; [`select`] picks one as the Python Hermes does (`web.search_backend` when
//! usable, else `web.backend`, else the first backend with a key in the order Tavily, Exa,
//! Parallel, Firecrawl, SearXNG, Brave, and keyless DuckDuckGo last); each backend module
//! speaks its service's documented API and returns [`SearchHit`]s; [`tool`] is the tool.

mod brave;
mod duckduckgo;
mod exa;
mod firecrawl;
mod parallel;
mod searxng;
mod tavily;
pub mod tool;

use hermes_config::{Config, Environment};
use serde::Serialize;
use serde_json::Value;

use crate::api::{ApiClient, ApiError};

pub use tool::WebSearchTool;

/// One result: what the model reads to decide whether to open the page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchHit {
    pub title: String,
    pub url: String,
    pub description: String,
}

/// A search backend of the Python Hermes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Tavily,
    Exa,
    Parallel,
    Firecrawl,
    Searxng,
    Brave,
    DuckDuckGo,
}

/// The order of automatic selection (the Python Hermes's, keyless last).
pub const AUTO_ORDER: &[Backend] = &[
    Backend::Tavily,
    Backend::Exa,
    Backend::Parallel,
    Backend::Firecrawl,
    Backend::Searxng,
    Backend::Brave,
    Backend::DuckDuckGo,
];

impl Backend {
    /// The name used in `web.backend` / `web.search_backend`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Tavily => "tavily",
            Backend::Exa => "exa",
            Backend::Parallel => "parallel",
            Backend::Firecrawl => "firecrawl",
            Backend::Searxng => "searxng",
            Backend::Brave => "brave-free",
            Backend::DuckDuckGo => "ddgs",
        }
    }

    /// A configured name (the Python Hermes's, plus a few obvious spellings).
    pub fn parse(name: &str) -> Option<Backend> {
        match name.trim().to_ascii_lowercase().as_str() {
            "tavily" => Some(Backend::Tavily),
            "exa" => Some(Backend::Exa),
            "parallel" => Some(Backend::Parallel),
            "firecrawl" => Some(Backend::Firecrawl),
            "searxng" => Some(Backend::Searxng),
            "brave-free" | "brave" => Some(Backend::Brave),
            "ddgs" | "duckduckgo" | "ddg" => Some(Backend::DuckDuckGo),
            _ => None,
        }
    }

    /// The variables any one of which makes the backend usable (none: keyless).
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            Backend::Tavily => &["TAVILY_API_KEY"],
            Backend::Exa => &["EXA_API_KEY"],
            Backend::Parallel => &["PARALLEL_API_KEY"],
            Backend::Firecrawl => &["FIRECRAWL_API_KEY", "FIRECRAWL_API_URL"],
            Backend::Searxng => &["SEARXNG_URL"],
            Backend::Brave => &["BRAVE_SEARCH_API_KEY"],
            Backend::DuckDuckGo => &[],
        }
    }

    pub fn is_available(self, env: &Environment) -> bool {
        let keys = self.keys();
        keys.is_empty() || keys.iter().any(|k| env.var(k).is_some())
    }

    /// The variable that overrides the service's base URL (tests, proxies, self-hosting).
    pub fn base_url_var(self) -> &'static str {
        match self {
            Backend::Tavily => "TAVILY_BASE_URL",
            Backend::Exa => "EXA_BASE_URL",
            Backend::Parallel => "PARALLEL_BASE_URL",
            Backend::Firecrawl => "FIRECRAWL_API_URL",
            Backend::Searxng => "SEARXNG_URL",
            Backend::Brave => "BRAVE_SEARCH_BASE_URL",
            Backend::DuckDuckGo => "DUCKDUCKGO_BASE_URL",
        }
    }

    fn default_base_url(self) -> &'static str {
        match self {
            Backend::Tavily => "https://api.tavily.com",
            Backend::Exa => "https://api.exa.ai",
            Backend::Parallel => "https://api.parallel.ai",
            Backend::Firecrawl => "https://api.firecrawl.dev",
            Backend::Searxng => "",
            Backend::Brave => "https://api.search.brave.com",
            Backend::DuckDuckGo => "https://html.duckduckgo.com",
        }
    }

    /// The base URL (override or default), without a trailing slash.
    pub fn base_url(self, env: &Environment) -> String {
        env.var(self.base_url_var())
            .unwrap_or_else(|| self.default_base_url().to_string())
            .trim()
            .trim_end_matches('/')
            .to_string()
    }

    /// The display name in messages.
    pub fn service(self) -> &'static str {
        match self {
            Backend::Tavily => "Tavily",
            Backend::Exa => "Exa",
            Backend::Parallel => "Parallel",
            Backend::Firecrawl => "Firecrawl",
            Backend::Searxng => "SearXNG",
            Backend::Brave => "Brave Search",
            Backend::DuckDuckGo => "DuckDuckGo",
        }
    }
}

/// `web.backend` and `web.search_backend` from config.yaml.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchSettings {
    pub backend: Option<String>,
    pub search_backend: Option<String>,
}

impl SearchSettings {
    pub fn from_config(config: &Config) -> SearchSettings {
        let get = |key: &str| {
            config
                .raw
                .pointer(&format!("/web/{key}"))
                .and_then(Value::as_str)
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        };
        SearchSettings {
            backend: get("backend"),
            search_backend: get("search_backend"),
        }
    }
}

/// The backend a search uses: `web.search_backend` when it names a usable backend, else
/// `web.backend` when it names a backend (used even without its key: the error then says which
/// key is missing), else the first usable backend of [`AUTO_ORDER`].
pub fn select(settings: &SearchSettings, env: &Environment) -> Backend {
    if let Some(b) = settings.search_backend.as_deref().and_then(Backend::parse)
        && b.is_available(env)
    {
        return b;
    }
    if let Some(b) = settings.backend.as_deref().and_then(Backend::parse) {
        return b;
    }
    AUTO_ORDER
        .iter()
        .copied()
        .find(|b| b.is_available(env))
        .unwrap_or(Backend::DuckDuckGo)
}

/// Runs one search on `backend`.
pub async fn search(
    api: &ApiClient,
    env: &Environment,
    backend: Backend,
    query: &str,
    limit: usize,
) -> Result<Vec<SearchHit>, ApiError> {
    let base = backend.base_url(env);
    let key = |var: &str| {
        env.var(var)
            .ok_or_else(|| ApiError::missing_key(backend.service(), var))
    };
    let mut hits = match backend {
        Backend::Tavily => {
            tavily::search(api, &base, &key("TAVILY_API_KEY")?, query, limit).await?
        }
        Backend::Exa => exa::search(api, &base, &key("EXA_API_KEY")?, query, limit).await?,
        Backend::Parallel => {
            let mode = env.var("PARALLEL_SEARCH_MODE").unwrap_or_default();
            parallel::search(api, &base, &key("PARALLEL_API_KEY")?, &mode, query, limit).await?
        }
        Backend::Firecrawl => {
            let key = env.var("FIRECRAWL_API_KEY");
            if key.is_none() && env.var("FIRECRAWL_API_URL").is_none() {
                return Err(ApiError::missing_key("Firecrawl", "FIRECRAWL_API_KEY"));
            }
            firecrawl::search(api, &base, key.as_deref(), query, limit).await?
        }
        Backend::Searxng => {
            if base.is_empty() {
                return Err(ApiError::missing_key("SearXNG", "SEARXNG_URL"));
            }
            searxng::search(api, &base, query, limit).await?
        }
        Backend::Brave => {
            brave::search(api, &base, &key("BRAVE_SEARCH_API_KEY")?, query, limit).await?
        }
        Backend::DuckDuckGo => duckduckgo::search(api, &base, query, limit).await?,
    };
    hits.retain(|h| !h.url.is_empty());
    hits.truncate(limit);
    for h in &mut hits {
        h.title = clean(&h.title, 200);
        h.description = clean(&h.description, 400);
    }
    Ok(hits)
}

/// One line of at most `max` characters: whitespace runs collapsed.
fn clean(text: &str, max: usize) -> String {
    let one = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > max {
        format!("{}…", one.chars().take(max - 1).collect::<String>())
    } else {
        one
    }
}

/// A string field of a JSON object, or empty.
fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

/// The strings of an array field joined by spaces (Exa highlights, Parallel excerpts).
fn joined(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Environment {
        Environment::isolated(pairs.iter().copied())
    }

    fn settings(backend: Option<&str>, search: Option<&str>) -> SearchSettings {
        SearchSettings {
            backend: backend.map(str::to_string),
            search_backend: search.map(str::to_string),
        }
    }

    #[test]
    fn selection_follows_the_python_order() {
        let none = settings(None, None);
        assert_eq!(select(&none, &env(&[])), Backend::DuckDuckGo);
        assert_eq!(
            select(&none, &env(&[("BRAVE_SEARCH_API_KEY", "k")])),
            Backend::Brave
        );
        assert_eq!(
            select(
                &none,
                &env(&[("BRAVE_SEARCH_API_KEY", "k"), ("SEARXNG_URL", "http://s")])
            ),
            Backend::Searxng
        );
        assert_eq!(
            select(&none, &env(&[("FIRECRAWL_API_URL", "http://f")])),
            Backend::Firecrawl
        );
        assert_eq!(
            select(
                &none,
                &env(&[("EXA_API_KEY", "k"), ("PARALLEL_API_KEY", "k")])
            ),
            Backend::Exa
        );
        assert_eq!(
            select(
                &none,
                &env(&[("TAVILY_API_KEY", "k"), ("EXA_API_KEY", "k")])
            ),
            Backend::Tavily
        );
    }

    #[test]
    fn configured_backends_win() {
        let e = env(&[("TAVILY_API_KEY", "k")]);
        assert_eq!(
            select(&settings(Some("brave-free"), None), &e),
            Backend::Brave
        );
        // search_backend only when usable; then web.backend.
        assert_eq!(
            select(&settings(Some("ddgs"), Some("exa")), &e),
            Backend::DuckDuckGo
        );
        assert_eq!(select(&settings(None, Some("tavily")), &e), Backend::Tavily);
        assert_eq!(
            select(&settings(Some("nonsense"), None), &e),
            Backend::Tavily
        );
    }

    #[test]
    fn snippets_are_one_bounded_line() {
        assert_eq!(clean("a\n  b\tc", 10), "a b c");
        assert_eq!(clean(&"x".repeat(50), 10).chars().count(), 10);
    }
}
