//! `hermes skills list|show NAME`, and the hub's `search|install|inspect|update|uninstall|
//! audit` ([`hub`]): the skills of a home from the command line. `list` shows
//! every skill found (the Python Hermes's too: same folders, same format) with its category,
//! origin (agent, user, hub, bundled), curator state (active, stale, pinned) and description,
//! names the archived ones, and says which ones a chat does not offer and why (disabled in config.yaml,
//! made for another OS or runtime, blocked by the injection scanner); `show` prints one
//! skill's `SKILL.md` and its supporting files. Skills that cannot be read are reported on
//! stderr by `list`. `list` and `show` change nothing.

pub mod hub;

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use hermes_core::skills::{
    Availability, Library, Loaded, Provenance, Skill, SkillSettings, Status, view,
};

use crate::args::CommonArgs;
use crate::error::CliError;

#[derive(Debug, Args)]
pub struct SkillsArgs {
    /// Without an action: list.
    #[command(subcommand)]
    pub action: Option<SkillsAction>,

    /// Use the profile NAME: a separate home under $HERMES_HOME/profiles/NAME.
    #[arg(short = 'p', long = "profile", value_name = "NAME")]
    pub profile: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum SkillsAction {
    /// Every skill, with its category and description, and why any is not offered.
    List {
        /// Print the skills as a JSON array: `{name, category, description, version, path,
        /// offered, not_offered_because}`.
        #[arg(long)]
        json: bool,
    },
    /// One skill's SKILL.md and its supporting files.
    Show {
        /// The skill's name (or its folder's).
        name: String,
    },
    /// Search the Hermes skills index, or the skills inside a source (`--in`).
    Search {
        /// Words to look for in names, descriptions, tags and identifiers.
        #[arg(default_value = "")]
        query: String,
        /// Search the skills inside this source (folder, git repository, tarball URL) instead.
        #[arg(long = "in", value_name = "SOURCE")]
        within: Option<String>,
        /// The most results shown.
        #[arg(long, default_value_t = 25)]
        limit: usize,
        /// Print the results as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Scan and install a skill from a folder, a git repository, a tarball URL or the index.
    Install {
        #[command(flatten)]
        source: hub::SourceArgs,
        /// Install into skills/CATEGORY/NAME.
        #[arg(long, value_name = "CATEGORY")]
        category: Option<String>,
        /// Install under this name instead of the skill's own.
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
        /// Install despite a blocking verdict (never a dangerous one), or reinstall.
        #[arg(long)]
        force: bool,
        /// Do not ask for confirmation.
        #[arg(short = 'y', long)]
        yes: bool,
    },
    /// Show a source's skills (frontmatter, files, guard report) without installing.
    Inspect {
        #[command(flatten)]
        source: hub::SourceArgs,
    },
    /// Fetch hub-installed skills again, show the diff, and replace them.
    Update {
        /// One skill (default: every hub-installed skill).
        name: Option<String>,
        /// Every hub-installed skill.
        #[arg(long, conflicts_with = "name")]
        all: bool,
        /// Do not ask for confirmation.
        #[arg(short = 'y', long)]
        yes: bool,
        /// Update despite a blocking verdict (never a dangerous one).
        #[arg(long)]
        force: bool,
    },
    /// Remove a hub-installed skill (user and agent skills are refused).
    Uninstall {
        name: String,
        /// Do not ask for confirmation.
        #[arg(short = 'y', long)]
        yes: bool,
    },
    /// Run the guard again over hub-installed skills.
    Audit {
        /// One skill (default: all of them).
        name: Option<String>,
    },
}

/// `top` holds the flags given before the subcommand (`hermes -p NAME skills ...`).
pub async fn run(top: &CommonArgs, args: &SkillsArgs) -> Result<ExitCode, CliError> {
    let common = CommonArgs {
        profile: args.profile.clone().or_else(|| top.profile.clone()),
        ..CommonArgs::default()
    };
    let (home, config, env) = crate::session::load_home(&common)?;
    let library = Library::for_home(
        &home,
        SkillSettings::from_config(&config, home.root(), "cli"),
    );
    let ctx = hub::Ctx {
        home,
        config,
        env,
        library: library.clone(),
    };
    let text = match args
        .action
        .as_ref()
        .unwrap_or(&SkillsAction::List { json: false })
    {
        SkillsAction::List { json } => {
            let loaded = library.load();
            for w in &loaded.warnings {
                eprintln!("hermes: {w}");
            }
            if *json {
                crate::json_out::print(&list_json(&library, &loaded))?;
                return Ok(ExitCode::SUCCESS);
            }
            list(&library, &loaded)
        }
        SkillsAction::Show { name } => show(&library, name)?,
        SkillsAction::Search {
            query,
            within,
            limit,
            json,
        } => {
            let within = within.as_ref().map(|s| hub::SourceArgs {
                source: s.clone(),
                ..hub::SourceArgs::default()
            });
            return hub::search(&ctx, query, within.as_ref(), *limit, *json).await;
        }
        SkillsAction::Install {
            source,
            category,
            name,
            force,
            yes,
        } => {
            let opts = hub::InstallOpts {
                category: category.clone(),
                name: name.clone(),
                force: *force,
                yes: *yes,
            };
            return hub::install(&ctx, source, &opts).await;
        }
        SkillsAction::Inspect { source } => return hub::inspect(&ctx, source).await,
        SkillsAction::Update {
            name,
            all,
            yes,
            force,
        } => return hub::update(&ctx, name.as_deref(), *all, *yes, *force).await,
        SkillsAction::Uninstall { name, yes } => return hub::uninstall(&ctx, name, *yes),
        SkillsAction::Audit { name } => return hub::audit(&ctx, name.as_deref()),
    };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(|e| CliError::runtime(format!("cannot write the output: {e}")))?;
    Ok(ExitCode::SUCCESS)
}

/// Why a skill is not offered in a chat, if it is not.
fn not_offered(skill: &Skill) -> Option<String> {
    match &skill.availability {
        Availability::Disabled => Some("disabled in config.yaml".into()),
        Availability::OtherPlatform(p) => Some(format!("{} only", p.join(", "))),
        Availability::OtherEnvironment(e) => Some(format!("{} only", e.join(", "))),
        Availability::Active => skill.scan().map(|f| {
            format!(
                "blocked: potential prompt injection ({})",
                f.kinds.join(", ")
            )
        }),
    }
}

/// `skills list --json`: each skill with its origin and curator state (`origin`, `state`,
/// `pinned`) and whether a chat offers it.
fn list_json(library: &Library, loaded: &Loaded) -> Vec<serde_json::Value> {
    let statuses = statuses(library, &loaded.skills);
    loaded
        .skills
        .iter()
        .zip(statuses)
        .map(|(s, status)| {
            let why = not_offered(s);
            let mut record = serde_json::json!({
                "name": s.name,
                "category": s.category,
                "description": s.description,
                "version": s.version(),
                "path": s.dir.display().to_string(),
                "offered": why.is_none(),
                "not_offered_because": why,
            });
            if let (Some(record), serde_json::Value::Object(status)) =
                (record.as_object_mut(), status.to_json())
            {
                record.extend(status);
            }
            record
        })
        .collect()
}

fn list(library: &Library, loaded: &Loaded) -> String {
    let root = library.root().display();
    if loaded.skills.is_empty() {
        return format!(
            "No skills in {root} yet. A skill is a folder with a SKILL.md; the agent saves them with skill_manage.\n"
        );
    }
    let name_w = loaded
        .skills
        .iter()
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let cat_w = loaded
        .skills
        .iter()
        .map(|s| s.category.as_deref().unwrap_or("-").chars().count())
        .max()
        .unwrap_or(8)
        .max(8);
    let statuses = statuses(library, &loaded.skills);
    let state_w = statuses
        .iter()
        .map(|s| s.state_label().len())
        .max()
        .unwrap_or(5)
        .max(5);
    let mut out = format!(
        "{:<name_w$}  {:<cat_w$}  ORIGIN   {:<state_w$}  DESCRIPTION\n",
        "NAME", "CATEGORY", "STATE"
    );
    let mut offered = 0;
    for (s, st) in loaded.skills.iter().zip(&statuses) {
        let mut description = hermes_core::skills::index::one_line(&s.description);
        match not_offered(s) {
            Some(why) => description.push_str(&format!(" [{why}]")),
            None => offered += 1,
        }
        out.push_str(
            format!(
                "{:<name_w$}  {:<cat_w$}  {:<7}  {:<state_w$}  {description}",
                s.name,
                s.category.as_deref().unwrap_or("-"),
                st.origin.as_str(),
                st.state_label(),
            )
            .trim_end(),
        );
        out.push('\n');
    }
    let n = loaded.skills.len();
    out.push_str(&format!(
        "{n} skill{} in {root}; {offered} offered in chats (/NAME runs one). `hermes skills show NAME` prints one.\n",
        if n == 1 { "" } else { "s" },
    ));
    let archived = hermes_core::skills::curator::archive::archived_names(library.root());
    if !archived.is_empty() {
        out.push_str(&format!(
            "Archived (`hermes curator restore NAME` brings one back): {}\n",
            archived.join(", ")
        ));
    }
    out
}

/// Each skill's origin and curator state, for the table and `--json` ([`Status::to_json`]).
pub fn statuses(library: &Library, skills: &[Skill]) -> Vec<Status> {
    let provenance = Provenance::read(library.root());
    skills.iter().map(|s| provenance.status(&s.name)).collect()
}

fn show(library: &Library, name: &str) -> Result<String, CliError> {
    let skill = library
        .find(name)
        .map_err(|e| CliError::runtime(e.to_string()))?;
    let mut head = vec![skill.name.clone()];
    if let Some(c) = &skill.category {
        head.push(c.clone());
    }
    if let Some(v) = skill.version() {
        head.push(format!("version {v}"));
    }
    head.push(skill.dir.display().to_string());
    let mut out = format!("{}\n", head.join(" · "));
    if let Some(why) = not_offered(&skill) {
        out.push_str(&format!("Not offered in chats: {why}.\n"));
    }
    out.push('\n');
    out.push_str(skill.text.trim_end());
    out.push('\n');
    let files = view::supporting_files(&skill.dir);
    if !files.is_empty() {
        out.push_str(&format!("\nFiles: {}\n", files.join(", ")));
    }
    Ok(out)
}
