//! The three tools of the `skills` toolset. `skills_list` and `skill_view` only read (they run
//! in parallel with other reads); `skill_manage` writes the skills folder, so calls touching it
//! queue up. Schemas are kept lean: they are sent with every request. Disk work runs on the
//! blocking pool.

use std::path::PathBuf;
use std::sync::Arc;

use hermes_tools::{Access, Tool, ToolContext, ToolError, ToolResult};
use serde_json::{Value, json};

use super::manage::{self, Request, WriteOrigin};
use super::view;
use super::{Library, SkillError};

fn roots(library: &Library) -> Vec<PathBuf> {
    library.roots().into_iter().map(PathBuf::from).collect()
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, SkillError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ToolError::new(format!("skills: {e}")))?
        .map_err(|e| ToolError::new(e.to_string()))
}

fn str_arg(args: &Value, key: &str) -> Option<String> {
    args.get(key).and_then(Value::as_str).map(str::to_string)
}

/// `skills_list {category?}`.
pub struct SkillsListTool {
    library: Arc<Library>,
}

impl SkillsListTool {
    pub fn new(library: Arc<Library>) -> SkillsListTool {
        SkillsListTool { library }
    }
}

#[async_trait::async_trait]
impl Tool for SkillsListTool {
    fn name(&self) -> &str {
        "skills_list"
    }
    fn toolset(&self) -> &str {
        "skills"
    }
    fn description(&self) -> &str {
        "List the skills with their categories and full descriptions, optionally of one category."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"category": {"type": "string"}}})
    }
    fn access(&self, _args: &Value, _ctx: &ToolContext) -> Access {
        Access::Read(roots(&self.library))
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolResult {
        let library = self.library.clone();
        let category = str_arg(&args, "category").filter(|c| !c.trim().is_empty());
        blocking(move || {
            let loaded = library.load();
            let mut categories: Vec<&str> = Vec::new();
            let mut skills = Vec::new();
            for s in loaded.active() {
                if let Some(c) = s.category.as_deref()
                    && !categories.contains(&c)
                {
                    categories.push(c);
                }
                if category
                    .as_deref()
                    .is_some_and(|c| s.category.as_deref() != Some(c.trim()))
                {
                    continue;
                }
                let mut entry = json!({"name": s.name, "description": s.description});
                if let Some(c) = &s.category {
                    entry["category"] = json!(c);
                }
                skills.push(entry);
            }
            let mut out =
                json!({"count": skills.len(), "skills": skills, "categories": categories});
            if skills.is_empty() {
                out["message"] = json!(match &category {
                    Some(c) => format!("No skills in category `{c}`."),
                    None => "No skills yet: create one with skill_manage.".to_string(),
                });
            }
            Ok(out)
        })
        .await
    }
}

/// `skill_view {name, file_path?}`.
pub struct SkillViewTool {
    library: Arc<Library>,
}

impl SkillViewTool {
    pub fn new(library: Arc<Library>) -> SkillViewTool {
        SkillViewTool { library }
    }
}

#[async_trait::async_trait]
impl Tool for SkillViewTool {
    fn name(&self) -> &str {
        "skill_view"
    }
    fn toolset(&self) -> &str {
        "skills"
    }
    fn description(&self) -> &str {
        "Load a skill: its SKILL.md instructions and the list of its files; with file_path, one of those files (e.g. references/api.md)."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "file_path": {"type": "string", "description": "A file inside the skill; omit for SKILL.md"}
            },
            "required": ["name"]
        })
    }
    fn access(&self, _args: &Value, _ctx: &ToolContext) -> Access {
        Access::Read(roots(&self.library))
    }
    fn preview(&self, args: &Value) -> String {
        let name = str_arg(args, "name").unwrap_or_default();
        match str_arg(args, "file_path").filter(|p| !p.is_empty()) {
            Some(p) => format!("{name} {p}"),
            None => name,
        }
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let library = self.library.clone();
        let name = str_arg(&args, "name").unwrap_or_default();
        let file = str_arg(&args, "file_path");
        let session = ctx.session.id();
        blocking(move || {
            let (skill, out) = view::view(&library, &name, file.as_deref(), &session)?;
            let usage = library.usage();
            usage.viewed(&skill.name);
            usage.used(&skill.name);
            Ok(out)
        })
        .await
    }
}

/// `skill_manage {action, name, ...}`.
pub struct SkillManageTool {
    library: Arc<Library>,
    origin: WriteOrigin,
}

impl SkillManageTool {
    /// The tool of a conversation: what it creates is the user's.
    pub fn new(library: Arc<Library>) -> SkillManageTool {
        SkillManageTool {
            library,
            origin: WriteOrigin::Foreground,
        }
    }

    /// The tool of the background review: what it creates is the agent's (curated).
    pub fn for_review(library: Arc<Library>) -> SkillManageTool {
        SkillManageTool {
            library,
            origin: WriteOrigin::BackgroundReview,
        }
    }
}

#[async_trait::async_trait]
impl Tool for SkillManageTool {
    fn name(&self) -> &str {
        "skill_manage"
    }
    fn toolset(&self) -> &str {
        "skills"
    }
    fn description(&self) -> &str {
        "Create and improve skills. create: content is the whole SKILL.md (--- name: <name>, description: <one line> ---, then when to use it, numbered steps with exact commands, pitfalls). edit: replace SKILL.md. patch: old_string -> new_string in SKILL.md or file_path. write_file / remove_file: file_path under references/, templates/, scripts/ or assets/. delete: archive the skill."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["create", "edit", "patch", "delete", "write_file", "remove_file"]},
                "name": {"type": "string", "description": "lowercase-hyphenated; the folder's name"},
                "content": {"type": "string"},
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
                "file_path": {"type": "string"},
                "file_content": {"type": "string"}
            },
            "required": ["action", "name"]
        })
    }
    fn access(&self, _args: &Value, _ctx: &ToolContext) -> Access {
        Access::Write(roots(&self.library))
    }
    fn preview(&self, args: &Value) -> String {
        let action = str_arg(args, "action").unwrap_or_default();
        let name = str_arg(args, "name").unwrap_or_default();
        match str_arg(args, "file_path").filter(|p| !p.is_empty()) {
            Some(p) => format!("{action} {name} {p}"),
            None => format!("{action} {name}"),
        }
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolResult {
        let library = self.library.clone();
        let req = Request {
            action: str_arg(&args, "action").unwrap_or_default(),
            name: str_arg(&args, "name").unwrap_or_default(),
            content: str_arg(&args, "content"),
            old_string: str_arg(&args, "old_string"),
            new_string: str_arg(&args, "new_string"),
            file_path: str_arg(&args, "file_path"),
            file_content: str_arg(&args, "file_content"),
            category: str_arg(&args, "category"),
            replace_all: args
                .get("replace_all")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            origin: self.origin,
        };
        blocking(move || manage::run(&library, &req)).await
    }
}
