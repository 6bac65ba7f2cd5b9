//! The curator's LLM consolidation pass, the parts that need no model: the Python Hermes's
//! review prompt (adapted to the tools this pass has), the candidate list the model reads, and
//! the `skill_manage` the pass may use ([`CuratorSkillManage`]), which enforces the prompt's
//! hard rules instead of trusting the model with them: only agent-created, unpinned skills
//! that no cron job names can be changed or archived (new umbrella skills may be created and
//! become the agent's), `delete` archives (never deletes) and records what absorbed the skill,
//! and in a dry run nothing is written at all. The pass itself (the model, the session) is the
//! runtime's (`hermes_runtime::curator`).

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use hermes_tools::{Access, Tool, ToolContext, ToolError, ToolResult};
use serde_json::{Value, json};

use super::lifecycle::{PROTECTED, cron_skills, latest_activity};
use crate::skills::provenance::{Origin, Provenance, State};
use crate::skills::usage::iso_at;
use crate::skills::{Library, SkillManageTool, SkillSettings};

/// Put before the prompt in a dry run (the Python Hermes's banner; here the tool refuses
/// writes as well).
pub const DRY_RUN_BANNER: &str = "\
═══════════════════════════════════════════════════════════════
DRY-RUN — REPORT ONLY. DO NOT MUTATE THE SKILL LIBRARY.
═══════════════════════════════════════════════════════════════

This is a PREVIEW pass. Follow every instruction below EXCEPT:

  • DO NOT call skill_manage with action=patch, edit, create, delete, write_file, or remove_file
    (they are refused in this pass).
  • skills_list and skill_view are FINE — read as much as you need.

Your output IS the deliverable. Produce the exact same human-readable summary and structured
YAML block you would produce on a live run — but describe the actions you WOULD take, not
actions you took. A downstream reviewer will read the report and decide whether to approve a
live run with `hermes curator run --consolidate`.
═══════════════════════════════════════════════════════════════";

/// The consolidation prompt: the Python Hermes's `CURATOR_REVIEW_PROMPT`, with its toolset
/// section describing this pass's three tools (no `terminal`: support files are written with
/// `skill_manage action=write_file`) and its rules as the tool enforces them.
pub const REVIEW_PROMPT: &str = "\
You are running as Hermes' background skill CURATOR. This is an UMBRELLA-BUILDING consolidation \
pass, not a passive audit and not a duplicate-finder.

The goal of the skill collection is a LIBRARY OF CLASS-LEVEL INSTRUCTIONS AND EXPERIENTIAL \
KNOWLEDGE. A collection of hundreds of narrow skills where each one captures one session's \
specific bug is a FAILURE of the library — not a feature. An agent searching skills matches on \
descriptions, not on exact names; one broad umbrella skill with labeled subsections beats five \
narrow siblings for discoverability, not the other way around.

The right target shape is CLASS-LEVEL skills with rich SKILL.md bodies + `references/`, \
`templates/`, and `scripts/` subfiles for session-specific detail — not one-session-one-skill \
micro-entries.

Hard rules — do not violate (the tool refuses what breaks them):
1. DO NOT touch bundled, hub-installed, user-written or external-dir skills. The candidate list \
below is already filtered to local curator-managed (agent-created) skills only.
2. DO NOT delete any skill. skill_manage action=delete ARCHIVES the skill (moves its directory \
into ~/.hermes/skills/.archive/); archives are recoverable.
3. DO NOT touch skills shown as pinned=yes. Skip them entirely.
3b. DO NOT archive, delete, consolidate, move, or otherwise modify any skill named in the \
protected built-ins list (currently: plan).
3c. DO NOT archive or prune any skill marked `cron=yes` in the candidate list. A cron job \
depends on it and would fail to load it on its next run.
4. DO NOT use usage counters as a reason to skip consolidation. The counters are new and often \
mostly zero. Judge overlap on CONTENT, not on use_count. 'use=0' is not evidence a skill is \
valuable; it's absence of evidence either way. Corollary: 'use=0' is ALSO not a reason to PRUNE \
a skill. Never archive a never-used skill (use=0) unless it is at least 30 days old (check \
last_activity / created date) AND its content is genuinely obsolete or fully absorbed elsewhere.
5. DO NOT reject consolidation on the grounds that 'each skill has a distinct trigger'. \
Pairwise distinctness is the wrong bar. The right bar is: 'would a human maintainer write this \
as N separate skills, or as one skill with N labeled subsections?' When the answer is the \
latter, merge.

How to work — not optional:
1. Scan the full candidate list. Identify PREFIX CLUSTERS (skills sharing a first word or domain \
keyword).
2. For each cluster with 2+ members, ask 'what is the UMBRELLA CLASS these skills all serve? \
Would a maintainer name that class and write one skill for it?' If yes, pick (or create) the \
umbrella and absorb the siblings into it.
3. Three ways to consolidate — use the right one per cluster:
   a. MERGE INTO EXISTING UMBRELLA — one skill in the cluster is already broad enough to be the \
umbrella. Patch it to add a labeled section for each sibling's unique insight, then archive the \
siblings.
   b. CREATE A NEW UMBRELLA SKILL.md — no existing member is broad enough. Use skill_manage \
action=create to write a new class-level skill whose SKILL.md covers the shared workflow and \
has short labeled subsections. Archive the now-absorbed narrow siblings.
   c. DEMOTE TO REFERENCES/TEMPLATES/SCRIPTS — a sibling has narrow-but-valuable \
session-specific content. Write it into the umbrella's support directory with skill_manage \
action=write_file (`references/<topic>.md`, `templates/<name>.<ext>`, `scripts/<name>.<ext>`), \
then archive the old sibling.
Package integrity: before archiving a skill, look at it as a complete package (skill_view lists \
its support files). Never leave instructions pointing at files that were left behind under the \
archived skill: re-home every support file the umbrella needs with write_file and rewrite its \
paths, or keep the skill.
4. Also flag skills whose NAME is too narrow (contains a PR number, a feature codename, a \
specific error string, an 'audit' / 'diagnosis' / 'salvage' session artifact). These almost \
always belong as a subsection or support file under a class-level umbrella.
5. Iterate. After one consolidation round, scan the remaining set and look for the NEXT \
umbrella opportunity.

Your toolset:
  - skills_list, skill_view        — read the current landscape
  - skill_manage action=patch      — add sections to the umbrella
  - skill_manage action=create     — create a new umbrella SKILL.md
  - skill_manage action=write_file — add a references/, templates/, or scripts/ file under an \
existing skill
  - skill_manage action=delete     — archive a skill. MUST pass `absorbed_into=<umbrella>` when \
you've merged its content into another skill, or `absorbed_into=\"\"` when you're truly pruning \
with no forwarding target.

'keep' is a legitimate decision ONLY when the skill is already a class-level umbrella and none \
of the proposed merges would improve discoverability.

When done, write a human summary AND a structured machine-readable block so downstream tooling \
can distinguish consolidation from pruning. Format EXACTLY:

## Structured summary (required)
```yaml
consolidations:
  - from: <old-skill-name>
    into: <umbrella-skill-name>
    reason: <one short sentence — why merged, not just 'similar'>
prunings:
  - name: <skill-name>
    reason: <one short sentence — why archived with no merge target>
```

Every skill you archived MUST appear in exactly one of the two lists. Leave a list empty \
(`consolidations: []`) if none. Do not omit the block. The block comes AFTER your \
human-readable summary of clusters processed, patches made, and decisions left alone.";

/// One skill the pass may work on, with what the model is told about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub name: String,
    pub state: State,
    pub pinned: bool,
    /// A cron job names it.
    pub cron: bool,
    pub use_count: u64,
    pub view_count: u64,
    pub patch_count: u64,
    /// The newest use, view or patch (seconds since the epoch).
    pub last_activity: Option<f64>,
}

/// The agent-created skills of `root` (not archived, not protected), by name.
pub fn candidates(root: &Path, home: &Path) -> Vec<Candidate> {
    let provenance = Provenance::read(root);
    let cron = cron_skills(home);
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for skill in Library::new(root, SkillSettings::default()).load().skills {
        let name = skill.name;
        if skill.external
            || !seen.insert(name.clone())
            || provenance.origin(&name) != Origin::Agent
            || PROTECTED.contains(&name.as_str())
        {
            continue;
        }
        let status = provenance.status(&name);
        let record = provenance.record(&name);
        let count = |key: &str| {
            record
                .and_then(|r| r.get(key))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        out.push(Candidate {
            cron: cron.contains(&name),
            state: status.state,
            pinned: status.pinned,
            use_count: count("use_count"),
            view_count: count("view_count"),
            patch_count: count("patch_count"),
            last_activity: record.and_then(latest_activity),
            name,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The candidate list as the model reads it (the Python Hermes's format).
pub fn render_candidates(candidates: &[Candidate]) -> String {
    if candidates.is_empty() {
        return "No agent-created skills to review.".into();
    }
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let mut lines = vec![format!("Agent-created skills ({}):\n", candidates.len())];
    for c in candidates {
        lines.push(format!(
            "- {}  state={}  pinned={}  cron={}  activity={}  use={}  view={}  patches={}  last_activity={}",
            c.name,
            c.state.as_str(),
            yes_no(c.pinned),
            yes_no(c.cron),
            c.use_count + c.view_count + c.patch_count,
            c.use_count,
            c.view_count,
            c.patch_count,
            c.last_activity.map_or_else(|| "never".to_string(), iso_at),
        ));
    }
    lines.join("\n")
}

/// The whole first message of the pass.
pub fn prompt(candidates: &[Candidate], dry_run: bool) -> String {
    let list = render_candidates(candidates);
    if dry_run {
        format!("{DRY_RUN_BANNER}\n\n{REVIEW_PROMPT}\n\n{list}")
    } else {
        format!("{REVIEW_PROMPT}\n\n{list}")
    }
}

/// What the pass did with `skill_manage`, in order (refused calls are not listed).
#[derive(Debug, Clone, PartialEq)]
pub enum CuratorAction {
    Created(String),
    /// `edit`, `patch`, `write_file` or `remove_file` on the skill.
    Changed(String),
    /// Archived; `into` is the skill that absorbed it (`None`: pruned).
    Archived {
        name: String,
        into: Option<String>,
    },
}

/// `skill_manage` for the curator's pass: the hard rules enforced, every change recorded.
pub struct CuratorSkillManage {
    inner: SkillManageTool,
    root: std::path::PathBuf,
    home: std::path::PathBuf,
    dry_run: bool,
    actions: Arc<Mutex<Vec<CuratorAction>>>,
}

impl CuratorSkillManage {
    /// The tool over `library` (the home's skills at `home/skills`); `actions` collects what
    /// it did.
    pub fn new(
        library: Arc<Library>,
        home: &Path,
        dry_run: bool,
        actions: Arc<Mutex<Vec<CuratorAction>>>,
    ) -> CuratorSkillManage {
        CuratorSkillManage {
            root: library.root().to_path_buf(),
            inner: SkillManageTool::for_review(library),
            home: home.to_path_buf(),
            dry_run,
            actions,
        }
    }

    /// Why the call breaks a rule, if it does.
    fn refusal(&self, action: &str, name: &str) -> Option<String> {
        if self.dry_run {
            return Some(format!(
                "dry run: `{action}` is not carried out; describe what you would do in your summary instead"
            ));
        }
        if action == "create" {
            return None;
        }
        let candidate = candidates(&self.root, &self.home)
            .into_iter()
            .find(|c| c.name == name);
        match candidate {
            None => Some(format!(
                "'{name}' is not a curator-managed skill (only agent-created skills in the candidate list may be changed)"
            )),
            Some(c) if c.pinned => Some(format!("'{name}' is pinned; skip it")),
            Some(c) if c.cron && action == "delete" => Some(format!(
                "'{name}' is used by a cron job (cron=yes) and must not be archived"
            )),
            Some(_) => None,
        }
    }
}

#[async_trait::async_trait]
impl Tool for CuratorSkillManage {
    fn name(&self) -> &str {
        "skill_manage"
    }
    fn toolset(&self) -> &str {
        "skills"
    }
    fn description(&self) -> &str {
        "Curate agent-created skills. create: a new umbrella skill (content is the whole SKILL.md). edit / patch: change SKILL.md or file_path. write_file / remove_file: a file under references/, templates/, scripts/ or assets/. delete: archive the skill; pass absorbed_into (the umbrella, or \"\" when pruning)."
    }
    fn parameters(&self) -> Value {
        let mut schema = self.inner.parameters();
        schema["properties"]["absorbed_into"] = json!({
            "type": "string",
            "description": "delete only: the skill that absorbed this one, or \"\" when pruned"
        });
        schema
    }
    fn access(&self, args: &Value, ctx: &ToolContext) -> Access {
        self.inner.access(args, ctx)
    }
    fn preview(&self, args: &Value) -> String {
        self.inner.preview(args)
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let text = |key: &str| {
            args.get(key)
                .and_then(Value::as_str)
                .map(str::trim)
                .unwrap_or_default()
                .to_string()
        };
        let (action, name) = (text("action"), text("name"));
        if let Some(why) = self.refusal(&action, &name) {
            return Err(ToolError::new(why));
        }
        let absorbed_into = Some(text("absorbed_into")).filter(|s| !s.is_empty());
        let result = self.inner.call(args, ctx).await?;
        let done = match action.as_str() {
            "create" => CuratorAction::Created(name),
            "delete" => CuratorAction::Archived {
                name,
                into: absorbed_into,
            },
            _ => CuratorAction::Changed(name),
        };
        self.actions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(done);
        Ok(result)
    }
}

/// What a consolidation pass did, for its report.
#[derive(Debug, Clone)]
pub struct Report<'a> {
    pub provider: &'a str,
    pub model: &'a str,
    pub dry_run: bool,
    /// The lifecycle part's summary (`1 archived`, `no changes`).
    pub auto_summary: &'a str,
    pub actions: &'a [CuratorAction],
    /// The model's final answer (its summary and YAML block).
    pub final_text: &'a str,
    /// Why the model part failed, if it did.
    pub error: Option<&'a str>,
}

/// Writes the report of a pass at `now` as `logs/curator/<YYYYMMDD-HHMMSS>/run.json` and
/// `REPORT.md` under `home` (the Python Hermes's place); returns the `REPORT.md` path.
pub fn write_report(
    home: &Path,
    now: f64,
    report: &Report<'_>,
) -> std::io::Result<std::path::PathBuf> {
    let stamp: String = iso_at(now)
        .chars()
        .take(19)
        .filter(char::is_ascii_digit)
        .collect();
    let stamp = format!(
        "{}-{}",
        &stamp[..8.min(stamp.len())],
        &stamp[8.min(stamp.len())..]
    );
    let dir = home.join("logs").join("curator").join(stamp);
    std::fs::create_dir_all(&dir)?;
    let action_json: Vec<Value> = report
        .actions
        .iter()
        .map(|a| match a {
            CuratorAction::Created(n) => json!({"action": "create", "name": n}),
            CuratorAction::Changed(n) => json!({"action": "change", "name": n}),
            CuratorAction::Archived { name, into } => {
                json!({"action": "archive", "name": name, "absorbed_into": into})
            }
        })
        .collect();
    let run = json!({
        "started_at": iso_at(now),
        "provider": report.provider,
        "model": report.model,
        "dry_run": report.dry_run,
        "auto_summary": report.auto_summary,
        "actions": action_json,
        "final": report.final_text,
        "error": report.error,
    });
    let json_text = serde_json::to_string_pretty(&run).map_err(std::io::Error::other)?;
    std::fs::write(dir.join("run.json"), json_text)?;
    let mut md = format!(
        "# Curator run {}

Model: {} ({}){}

Lifecycle: {}

## Actions

",
        iso_at(now),
        report.model,
        report.provider,
        if report.dry_run { " — dry run" } else { "" },
        report.auto_summary
    );
    if report.actions.is_empty() {
        md.push_str(
            "None.
",
        );
    }
    for a in report.actions {
        md.push_str(&match a {
            CuratorAction::Created(n) => format!(
                "- created `{n}`
"
            ),
            CuratorAction::Changed(n) => format!(
                "- changed `{n}`
"
            ),
            CuratorAction::Archived {
                name,
                into: Some(into),
            } => format!(
                "- archived `{name}`, absorbed into `{into}`
"
            ),
            CuratorAction::Archived { name, into: None } => format!(
                "- archived `{name}` (pruned)
"
            ),
        });
    }
    if let Some(error) = report.error {
        md.push_str(&format!(
            "
## Error

{error}
"
        ));
    }
    md.push_str(&format!(
        "
## The model's summary

{}
",
        report.final_text.trim()
    ));
    let path = dir.join("REPORT.md");
    std::fs::write(&path, md)?;
    Ok(path)
}

/// The summary line of a pass's model part: its final answer cut to 240 characters (the
/// Python Hermes's cap), or `no change`.
pub fn llm_summary(final_text: &str) -> String {
    let text = final_text.trim();
    if text.is_empty() {
        return "no change".into();
    }
    match text.char_indices().nth(240) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(root: &Path, name: &str) {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: d\n---\nbody\n"),
        )
        .unwrap();
    }

    #[test]
    fn the_candidate_list_has_only_agent_skills_with_their_flags() {
        let home = tempfile::tempdir().unwrap();
        let root = home.path().join("skills");
        for name in ["git-a", "git-b", "mine", "plan"] {
            skill(&root, name);
        }
        std::fs::write(
            root.join(".usage.json"),
            r#"{"git-a": {"created_by": "agent", "use_count": 2, "last_used_at": "2026-11-01T00:00:00+00:00"},
                "git-b": {"created_by": "agent", "pinned": true},
                "plan": {"created_by": "agent"}}"#,
        )
        .unwrap();
        std::fs::create_dir_all(home.path().join("cron")).unwrap();
        std::fs::write(
            home.path().join("cron/jobs.json"),
            r#"{"jobs": [{"id": "j", "skills": ["git-a"]}]}"#,
        )
        .unwrap();
        let list = candidates(&root, home.path());
        let text = render_candidates(&list);
        assert_eq!(
            text,
            "Agent-created skills (2):\n\n- git-a  state=active  pinned=no  cron=yes  activity=2  use=2  view=0  patches=0  last_activity=2026-11-01T00:00:00.000000+00:00\n- git-b  state=active  pinned=yes  cron=no  activity=0  use=0  view=0  patches=0  last_activity=never"
        );
        assert_eq!(render_candidates(&[]), "No agent-created skills to review.");
        assert!(prompt(&list, true).starts_with("═══"));
        assert!(
            prompt(&list, false).starts_with("You are running as Hermes' background skill CURATOR")
        );
    }

    #[tokio::test]
    async fn the_tool_enforces_the_hard_rules_and_records_what_it_did() {
        let home = tempfile::tempdir().unwrap();
        let root = home.path().join("skills");
        for name in ["git-a", "git-b", "git-c", "mine"] {
            skill(&root, name);
        }
        std::fs::write(
            root.join(".usage.json"),
            r#"{"git-a": {"created_by": "agent"}, "git-b": {"created_by": "agent", "pinned": true},
                "git-c": {"created_by": "agent"}}"#,
        )
        .unwrap();
        std::fs::create_dir_all(home.path().join("cron")).unwrap();
        std::fs::write(
            home.path().join("cron/jobs.json"),
            r#"{"jobs": [{"id": "j", "skill": "git-a"}]}"#,
        )
        .unwrap();
        let library = Arc::new(Library::new(&root, SkillSettings::default()));
        let actions = Arc::new(Mutex::new(Vec::new()));
        let tool = CuratorSkillManage::new(library.clone(), home.path(), false, actions.clone());
        let ctx = ToolContext::new(home.path().to_path_buf());
        let call = |args: Value| {
            let tool = &tool;
            let ctx = &ctx;
            async move { tool.call(args, ctx).await }
        };
        let patch = |name: &str| json!({"action": "patch", "name": name, "old_string": "body", "new_string": "better body"});
        let refused = call(patch("mine")).await.unwrap_err().to_string();
        assert!(
            refused.contains("'mine' is not a curator-managed skill"),
            "{refused}"
        );
        let refused = call(patch("git-b")).await.unwrap_err().to_string();
        assert!(refused.contains("'git-b' is pinned"), "{refused}");
        let refused = call(json!({"action": "delete", "name": "git-a", "absorbed_into": ""}))
            .await
            .unwrap_err()
            .to_string();
        assert!(refused.contains("cron job"), "{refused}");
        call(patch("git-c")).await.unwrap();
        call(json!({"action": "create", "name": "git", "content": "---\nname: git\ndescription: git work\n---\n## a\n## c\n"}))
            .await
            .unwrap();
        call(json!({"action": "delete", "name": "git-c", "absorbed_into": "git"}))
            .await
            .unwrap();
        assert_eq!(
            *actions.lock().unwrap(),
            vec![
                CuratorAction::Changed("git-c".into()),
                CuratorAction::Created("git".into()),
                CuratorAction::Archived {
                    name: "git-c".into(),
                    into: Some("git".into())
                },
            ]
        );
        assert!(!root.join("git-c").exists());
        assert!(root.join(".archive").read_dir().unwrap().count() > 0);
        assert_eq!(Provenance::read(&root).origin("git"), Origin::Agent);
        // The user's skill is as it was.
        assert!(
            std::fs::read_to_string(root.join("mine/SKILL.md"))
                .unwrap()
                .ends_with("body\n")
        );

        let dry = CuratorSkillManage::new(library, home.path(), true, actions.clone());
        let refused = dry
            .call(patch("git-a"), &ctx)
            .await
            .unwrap_err()
            .to_string();
        assert!(refused.starts_with("dry run:"), "{refused}");
        assert_eq!(actions.lock().unwrap().len(), 3);
    }

    #[test]
    fn summaries_are_capped() {
        assert_eq!(llm_summary("  "), "no change");
        assert_eq!(llm_summary("merged two"), "merged two");
        let long = "é".repeat(300);
        let cut = llm_summary(&long);
        assert_eq!(cut.chars().count(), 241);
        assert!(cut.ends_with('…'));
    }
}
