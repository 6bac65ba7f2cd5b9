//! The tool registry: every tool Hermes knows, grouped in toolsets; the subset a session
//! enables; availability checks (required env vars, `check_available`) cached for 30 s; and
//! running one call with the `{"error": ...}` shape the model reads, the session's known
//! secrets redacted (the one place every result passes) and the result cap.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use hermes_config::Environment;
use hermes_protocol::ToolSchema;
use serde_json::Value;

use crate::output::truncate_middle;
use crate::{Tool, ToolContext};

/// How long an availability verdict is trusted.
const AVAILABILITY_TTL: Duration = Duration::from_secs(30);

/// Composite toolsets: a name standing for several toolsets.
const COMPOSITES: &[(&str, &[&str])] = &[
    (
        "hermes-cli",
        &[
            "terminal",
            "file",
            "todo",
            "clarify",
            "memory",
            "skills",
            "session_search",
            "delegation",
            "code_execution",
        ],
    ),
    ("all", &[]),
];

/// Toolsets of the Hermes family that this build may not provide yet; naming one is not an
/// error (a config written for the Python Hermes lists them).
const KNOWN_TOOLSETS: &[&str] = &[
    "web",
    "terminal",
    "file",
    "skills",
    "memory",
    "todo",
    "delegation",
    "code_execution",
    "cronjob",
    "session_search",
    "clarify",
    "messaging",
    "browser",
    "vision",
    "image_gen",
    "tts",
    "moa",
];

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("unknown toolset `{name}` (known: {known})")]
pub struct ToolsetError {
    pub name: String,
    pub known: String,
}

/// The outcome of one tool call, ready for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    /// The serialised result (JSON), capped.
    pub content: String,
    pub ok: bool,
}

#[derive(Default)]
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
    availability: Mutex<HashMap<String, (Instant, bool)>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|t| t.name()))
            .finish()
    }
}

impl Clone for Registry {
    /// The same tools (shared); availability is checked afresh.
    fn clone(&self) -> Registry {
        Registry {
            tools: self.tools.clone(),
            availability: Mutex::new(HashMap::new()),
        }
    }
}

impl Registry {
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Every built-in tool.
    pub fn builtin() -> Registry {
        let mut r = Registry::new();
        r.register(Arc::new(crate::terminal::TerminalTool));
        r.register(Arc::new(crate::process::tool::ProcessTool));
        r.register(Arc::new(crate::files::ReadFileTool));
        r.register(Arc::new(crate::files::WriteFileTool));
        r.register(Arc::new(crate::patch::PatchTool));
        r.register(Arc::new(crate::search::SearchFilesTool));
        r.register(Arc::new(crate::todo::TodoTool));
        r.register(Arc::new(crate::clarify::ClarifyTool));
        r
    }

    /// Adds a tool; a tool of the same name is replaced.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.retain(|t| t.name() != tool.name());
        self.tools.push(tool);
    }

    /// The registry restricted to `toolsets` (toolset names or composites such as
    /// `hermes-cli`). Known toolsets this build lacks are reported in the returned warnings.
    pub fn select(&self, toolsets: &[String]) -> Result<(Registry, Vec<String>), ToolsetError> {
        let mut wanted: Vec<&str> = Vec::new();
        let mut warnings = Vec::new();
        let mut all = false;
        for name in toolsets.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
            if let Some((_, members)) = COMPOSITES.iter().find(|(c, _)| *c == name) {
                all |= name == "all";
                wanted.extend(members.iter());
            } else if self.tools.iter().any(|t| t.toolset() == name) {
                wanted.push(name);
            } else if KNOWN_TOOLSETS.contains(&name) || name.starts_with("mcp-") {
                warnings.push(format!("toolset `{name}` is not available in this build"));
            } else {
                return Err(ToolsetError {
                    name: name.to_string(),
                    known: self.toolset_names().join(", "),
                });
            }
        }
        let mut selected = Registry::new();
        for tool in &self.tools {
            if all || wanted.contains(&tool.toolset()) {
                selected.register(tool.clone());
            }
        }
        Ok((selected, warnings))
    }

    /// Toolset names of the registered tools and the composites.
    pub fn toolset_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = COMPOSITES.iter().map(|(c, _)| *c).collect();
        for t in &self.tools {
            if !names.contains(&t.toolset()) {
                names.push(t.toolset());
            }
        }
        names
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Whether a tool can be offered now: its env vars are set and its own check passes.
    pub fn is_available(&self, tool: &dyn Tool, env: &Environment) -> bool {
        let now = Instant::now();
        if let Ok(cache) = self.availability.lock()
            && let Some((at, ok)) = cache.get(tool.name())
            && now.duration_since(*at) < AVAILABILITY_TTL
        {
            return *ok;
        }
        let ok = tool.required_env().iter().all(|v| env.var(v).is_some())
            && tool.check_available().is_ok();
        if let Ok(mut cache) = self.availability.lock() {
            cache.insert(tool.name().to_string(), (now, ok));
        }
        ok
    }

    /// The registry without the tools that are unavailable now.
    pub fn available(&self, env: &Environment) -> Registry {
        let mut r = Registry::new();
        for t in &self.tools {
            if self.is_available(t.as_ref(), env) {
                r.register(t.clone());
            }
        }
        r
    }

    /// The schemas the model is given, in registration order.
    pub fn schemas(&self) -> Vec<ToolSchema> {
        self.tools
            .iter()
            .map(|t| ToolSchema {
                name: t.name().to_string(),
                description: t.description().to_string(),
                parameters: t.parameters(),
            })
            .collect()
    }

    /// Runs one call: errors and panics become `{"error": ...}`, known secrets are redacted,
    /// the result is capped.
    pub async fn execute(tool: &dyn Tool, args: Value, ctx: &ToolContext) -> CallOutcome {
        let result = AssertUnwindSafe(tool.call(args, ctx)).catch_unwind().await;
        let (value, ok) = match result {
            Ok(Ok(value)) => (value, true),
            Ok(Err(e)) => (error_value(&e.0), false),
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown cause".into());
                (error_value(&format!("the tool crashed: {what}")), false)
            }
        };
        let content = match value {
            Value::String(s) => s,
            other => other.to_string(),
        };
        let content = ctx.redactor.redact(&content);
        CallOutcome {
            content: truncate_middle(&content, tool.max_result_chars(), 0.5),
            ok,
        }
    }
}

/// `{"error": "..."}`
pub fn error_value(message: &str) -> Value {
    serde_json::json!({ "error": message })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolError, ToolResult};

    struct Boom;
    #[async_trait::async_trait]
    impl Tool for Boom {
        fn name(&self) -> &str {
            "boom"
        }
        fn toolset(&self) -> &str {
            "test"
        }
        fn description(&self) -> &str {
            "fails"
        }
        fn parameters(&self) -> Value {
            serde_json::json!({"type": "object"})
        }
        fn required_env(&self) -> &'static [&'static str] {
            &["BOOM_KEY"]
        }
        async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolResult {
            match args.get("mode").and_then(Value::as_str) {
                Some("panic") => panic!("kaboom"),
                Some("big") => Ok(Value::String("x".repeat(200_000))),
                _ => Err(ToolError::new("bad argument")),
            }
        }
    }

    #[tokio::test]
    async fn errors_and_panics_become_error_results() {
        let ctx = ToolContext::new(std::env::temp_dir());
        let out = Registry::execute(&Boom, serde_json::json!({}), &ctx).await;
        assert_eq!(out.content, r#"{"error":"bad argument"}"#);
        assert!(!out.ok);
        let out = Registry::execute(&Boom, serde_json::json!({"mode": "panic"}), &ctx).await;
        assert!(
            out.content.contains("the tool crashed: kaboom"),
            "{}",
            out.content
        );
        let out = Registry::execute(&Boom, serde_json::json!({"mode": "big"}), &ctx).await;
        assert!(out.content.len() < 100_200 && out.content.contains("characters omitted"));
    }

    #[test]
    fn required_env_hides_a_tool() {
        let mut r = Registry::builtin();
        r.register(Arc::new(Boom));
        let without = r.available(&Environment::isolated::<&str, &str>([]));
        assert!(without.get("boom").is_none());
        let r2 = {
            let mut r = Registry::builtin();
            r.register(Arc::new(Boom));
            r
        };
        let with = r2.available(&Environment::isolated([("BOOM_KEY", "1")]));
        assert!(with.get("boom").is_some());
    }

    #[test]
    fn toolset_selection() {
        let r = Registry::builtin();
        let (sel, warn) = r.select(&["terminal".to_string()]).unwrap();
        assert_eq!(sel.names(), ["terminal", "process"]);
        assert!(warn.is_empty());
        let (sel, _) = r.select(&["hermes-cli".to_string()]).unwrap();
        assert_eq!(
            sel.names(),
            [
                "terminal",
                "process",
                "read_file",
                "write_file",
                "patch",
                "search_files",
                "todo",
                "clarify"
            ]
        );
        let (_, warn) = r.select(&["web".to_string()]).unwrap();
        assert_eq!(warn.len(), 1);
        let err = r.select(&["nonsense".to_string()]).unwrap_err();
        assert!(err.to_string().contains("hermes-cli"), "{err}");
    }
}
