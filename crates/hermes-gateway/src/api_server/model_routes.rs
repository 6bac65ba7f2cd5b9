//! `model_routes` (the Python Hermes's `platforms.api_server.extra.model_routes`): aliases a
//! client may send as `model`, each mapped to a model and optionally a provider and base URL,
//! so one server answers several clients from different backends. `/v1/models` lists them; a
//! request naming one runs its turn on that route's model. Entries that are not a mapping with
//! a `model` are dropped with a warning, as Python does, so a typo cannot stop the server.

use serde_json::Value;

/// Where a turn whose request names an alias goes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelRoute {
    pub model: String,
    pub provider: Option<String>,
    pub base_url: Option<String>,
}

/// The configured routes in order, alias first, and a warning per dropped entry.
pub fn parse(raw: Option<&Value>) -> (Vec<(String, ModelRoute)>, Vec<String>) {
    let mut routes = Vec::new();
    let mut warnings = Vec::new();
    let entries = match raw {
        None | Some(Value::Null) => return (routes, warnings),
        Some(Value::Object(entries)) => entries,
        Some(_) => {
            warnings.push("api_server model_routes ignored: expected a mapping".to_string());
            return (routes, warnings);
        }
    };
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    for (alias, entry) in entries {
        let alias = alias.trim();
        let Some(cfg) = entry.as_object().filter(|_| !alias.is_empty()) else {
            warnings.push(format!(
                "api_server model_routes: dropping invalid route entry `{alias}`"
            ));
            continue;
        };
        let Some(model) = text(cfg.get("model")) else {
            warnings.push(format!(
                "api_server model_routes: route `{alias}` has no 'model'; dropping"
            ));
            continue;
        };
        if text(cfg.get("api_key")).is_some() {
            warnings.push(format!(
                "api_server model_routes: route `{alias}`: a per-route api_key is not supported by this build; the provider's configured key is used"
            ));
        }
        routes.push((
            alias.to_string(),
            ModelRoute {
                model,
                provider: text(cfg.get("provider")),
                base_url: text(cfg.get("base_url")),
            },
        ));
    }
    (routes, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn routes_need_a_model_and_keep_their_order() {
        let raw = json!({
            "fast": {"model": " m1 ", "provider": "openrouter"},
            "broken": {"provider": "x"},
            "odd": "text",
            "local": {"model": "m2", "base_url": "http://127.0.0.1:1/v1"},
        });
        let (routes, warnings) = parse(Some(&raw));
        let aliases: Vec<&str> = routes.iter().map(|(a, _)| a.as_str()).collect();
        assert!(aliases.contains(&"fast") && aliases.contains(&"local"));
        assert_eq!(routes.len(), 2);
        let fast = &routes.iter().find(|(a, _)| a == "fast").unwrap().1;
        assert_eq!(fast.model, "m1");
        assert_eq!(fast.provider.as_deref(), Some("openrouter"));
        assert_eq!(warnings.len(), 2);
        assert!(parse(Some(&json!([1]))).0.is_empty());
        assert_eq!(parse(None), (Vec::new(), Vec::new()));
    }
}
