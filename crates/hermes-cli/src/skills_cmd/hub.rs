//! `hermes skills search|install|inspect|update|uninstall|audit`: the skills hub from the
//! command line (the core is `hermes_core::skills::hub`). A source is a local folder, a git
//! repository (`owner/repo[/path][@ref]` on GitHub or any git URL) or a tarball URL; a bare
//! name is looked up in the Hermes skills index. Downloads (tarballs, the index) go through
//! the SSRF-safe fetcher of `hermes-web` with the home's URL policy, as the Python Hermes's
//! hub guards its fetches. Every install is scanned and its report printed; a blocked one
//! exits 1.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use hermes_config::{Config, Environment, HermesHome};
use hermes_core::skills::hub::{
    self, Bundle, Hub, HubError, Scan, Source, fetch, guard, index, install::Origin,
};
use hermes_core::skills::{Library, Origin as SkillOrigin, Provenance};
use hermes_web::net::{FetchLimits, Fetcher, UrlPolicy};
use serde_json::Value;

use crate::error::CliError;

/// How a source is named on the command line.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SourceArgs {
    /// A local folder, `owner/repo[/path][@ref]` (GitHub), a git URL, a tarball URL, or a
    /// name in the Hermes skills index.
    pub source: String,
    /// The git branch, tag or commit to fetch (default: the remote's default branch).
    #[arg(long = "ref", value_name = "REF")]
    pub reference: Option<String>,
    /// The folder inside the repository or archive to look in.
    #[arg(long, value_name = "PATH")]
    pub path: Option<String>,
    /// Which skill to take when the source holds several (its name or folder).
    #[arg(long, value_name = "NAME")]
    pub skill: Option<String>,
}

/// Everything a hub command needs of the home.
pub struct Ctx {
    pub home: HermesHome,
    pub config: Config,
    pub env: Environment,
    pub library: Library,
}

impl Ctx {
    fn hub(&self) -> Hub {
        Hub::new(self.library.root())
    }

    fn fetcher(&self) -> Fetcher {
        Fetcher::new(UrlPolicy::from_config(&self.config, &self.env, &self.home))
    }
}

/// A source fetched into a folder.
struct Fetched {
    source: Source,
    /// The folder the skills are looked for in (the source's sub-folder applied).
    root: PathBuf,
    commit: Option<String>,
    archive_sha256: Option<String>,
    /// Keeps a temporary checkout alive while it is read.
    _temp: Option<tempfile::TempDir>,
}

fn hub_err(e: HubError) -> CliError {
    CliError::runtime(e.to_string())
}

fn out(text: &str) -> Result<(), CliError> {
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(|e| CliError::runtime(format!("cannot write the output: {e}")))
}

/// Asks on stderr; only `y`/`yes` agrees (end of input is no, as in Python).
fn confirm(question: &str) -> bool {
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    let _ = std::io::stdin().read_line(&mut answer);
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// The index URL: `HERMES_SKILLS_INDEX_URL`, else `skills.hub.index_url`, else Python's.
fn index_url(ctx: &Ctx) -> String {
    ctx.env
        .var("HERMES_SKILLS_INDEX_URL")
        .filter(|v| !v.trim().is_empty())
        .or_else(|| {
            ctx.config
                .raw
                .pointer("/skills/hub/index_url")
                .and_then(Value::as_str)
                .map(String::from)
        })
        .unwrap_or_else(|| index::DEFAULT_INDEX_URL.to_string())
}

/// The skills index: the fresh cache, else a download, else the stale cache.
async fn load_index(ctx: &Ctx) -> Result<Value, CliError> {
    let hub_dir = ctx.hub().hub_dir();
    if let Some(v) = index::cached(&hub_dir, false) {
        return Ok(v);
    }
    let url = index_url(ctx);
    let limits = FetchLimits {
        max_bytes: index::MAX_INDEX_BYTES,
        ..FetchLimits::default()
    };
    let fetched = ctx.fetcher().get_limited(&url, &limits).await;
    match fetched {
        Ok(f) => index::accept(&hub_dir, &f.body)
            .ok_or_else(|| CliError::runtime(format!("{url} is not a skills index")))
            .or_else(|e| index::cached(&hub_dir, true).ok_or(e)),
        Err(e) => index::cached(&hub_dir, true).ok_or_else(|| {
            CliError::runtime(format!("cannot read the skills index at {url}: {e}"))
        }),
    }
}

/// Parses the source argument; a bare name is looked up in the index.
async fn resolve(ctx: &Ctx, args: &SourceArgs) -> Result<Source, CliError> {
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::runtime(format!("cannot read the current directory: {e}")))?;
    if let Some(s) = Source::parse(
        &args.source,
        args.reference.as_deref(),
        args.path.as_deref(),
        &cwd,
    )
    .map_err(hub_err)?
    {
        return Ok(s);
    }
    let idx = load_index(ctx).await?;
    let entry = index::find(&idx, &args.source).ok_or_else(|| {
        CliError::runtime(format!(
            "'{}' is not a folder, a git repository, a tarball URL or a skill in the index (`hermes skills search` finds one)",
            args.source
        ))
    })?;
    let hit = index::search(&serde_json::json!({"skills": [entry]}), "", 1)
        .pop()
        .ok_or_else(|| CliError::runtime("the index entry is empty"))?;
    let id = hit.install_id(Some(entry));
    Source::parse(&id, args.reference.as_deref(), args.path.as_deref(), &cwd)
        .map_err(hub_err)?
        .ok_or_else(|| {
            CliError::runtime(format!(
                "the index points '{}' at `{id}`, which cannot be fetched",
                args.source
            ))
        })
}

/// Brings `source` onto the machine.
async fn fetch_source(ctx: &Ctx, source: Source) -> Result<Fetched, CliError> {
    match &source {
        Source::Local { path } => {
            if !path.is_dir() {
                return Err(CliError::runtime(format!(
                    "{} is not a folder",
                    path.display()
                )));
            }
            Ok(Fetched {
                root: path.clone(),
                source,
                commit: None,
                archive_sha256: None,
                _temp: None,
            })
        }
        Source::Git { url, reference, .. } => {
            let temp = tempfile::tempdir()
                .map_err(|e| CliError::runtime(format!("cannot make a temporary folder: {e}")))?;
            eprintln!(
                "Fetching {url}{}...",
                reference
                    .as_deref()
                    .map(|r| format!(" @ {r}"))
                    .unwrap_or_default()
            );
            let commit =
                fetch::git_checkout(url, reference.as_deref(), temp.path()).map_err(hub_err)?;
            let root = sub(temp.path(), source.subpath());
            Ok(Fetched {
                root,
                commit: Some(commit),
                archive_sha256: None,
                _temp: Some(temp),
                source,
            })
        }
        Source::Tarball { url, .. } => {
            eprintln!("Downloading {url}...");
            let limits = FetchLimits {
                max_bytes: 32 * 1024 * 1024,
                ..FetchLimits::default()
            };
            let body = ctx
                .fetcher()
                .get_limited(url, &limits)
                .await
                .map_err(|e| CliError::runtime(format!("cannot download {url}: {e}")))?
                .body;
            let temp = tempfile::tempdir()
                .map_err(|e| CliError::runtime(format!("cannot make a temporary folder: {e}")))?;
            fetch::unpack_tarball(&body, temp.path()).map_err(hub_err)?;
            let root = sub(temp.path(), source.subpath());
            Ok(Fetched {
                root,
                commit: None,
                archive_sha256: Some(hub::lock::sha256_hex(&body)),
                _temp: Some(temp),
                source,
            })
        }
    }
}

fn sub(root: &Path, subpath: Option<&str>) -> PathBuf {
    subpath.map_or_else(|| root.to_path_buf(), |s| root.join(s))
}

/// The skills of a fetched source, `--skill` applied: `(folder below the root, bundle)`.
fn skills_in(
    fetched: &Fetched,
    pick: Option<&str>,
    name: Option<&str>,
) -> Result<Vec<(String, Bundle)>, CliError> {
    let folders = fetch::find_skills(&fetched.root);
    if folders.is_empty() {
        return Err(CliError::runtime(format!(
            "no skill (a folder with SKILL.md) in {}",
            fetched.source.url("")
        )));
    }
    let mut found = Vec::new();
    for rel in folders {
        let dir = sub(&fetched.root, (!rel.is_empty()).then_some(rel.as_str()));
        let bundle = Bundle::read(&dir, name).map_err(hub_err)?;
        let folder = rel.rsplit('/').next().unwrap_or_default();
        if pick.is_none_or(|p| p == bundle.name || p == folder) {
            found.push((rel, bundle));
        }
    }
    if found.is_empty() {
        return Err(CliError::runtime(format!(
            "no skill named '{}' in the source",
            pick.unwrap_or_default()
        )));
    }
    Ok(found)
}

/// `hermes skills search QUERY [--in SOURCE]`.
pub async fn search(
    ctx: &Ctx,
    query: &str,
    within: Option<&SourceArgs>,
    limit: usize,
    json: bool,
) -> Result<ExitCode, CliError> {
    if let Some(args) = within {
        let source = resolve(ctx, args).await?;
        let fetched = fetch_source(ctx, source).await?;
        let hits = index::search_tree(&fetched.root, query);
        if json {
            let list: Vec<Value> = hits
                .iter()
                .take(limit)
                .map(|(rel, name, d)| {
                    serde_json::json!({
                        "name": name,
                        "identifier": fetched.source.identifier(rel),
                        "source": fetched.source.kind(),
                        "trust_level": fetched.source.trust(rel).as_str(),
                        "description": d,
                        "path": rel,
                    })
                })
                .collect();
            crate::json_out::print(&list)?;
            return Ok(ExitCode::SUCCESS);
        }
        if hits.is_empty() {
            out("No skills in the source match.\n")?;
            return Ok(ExitCode::SUCCESS);
        }
        let mut text = String::new();
        for (rel, name, d) in hits.iter().take(limit) {
            let folder = if rel.is_empty() { "." } else { rel.as_str() };
            text.push_str(&format!(
                "{name}  {}  ({folder})\n",
                hermes_core::skills::index::one_line(d)
            ));
        }
        text.push_str(&format!(
            "{} skill(s) in {}. Install one with `hermes skills install {} --skill NAME`.\n",
            hits.len().min(limit),
            fetched.source.url(""),
            args.source
        ));
        out(&text)?;
        return Ok(ExitCode::SUCCESS);
    }
    let idx = load_index(ctx).await?;
    let hits = index::search(&idx, query, limit);
    if json {
        crate::json_out::print(&hits.iter().map(index::Hit::to_json).collect::<Vec<_>>())?;
        return Ok(ExitCode::SUCCESS);
    }
    if hits.is_empty() {
        out("No skills found matching your query.\n")?;
        return Ok(ExitCode::SUCCESS);
    }
    let w = hits
        .iter()
        .map(|h| h.name.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut text = format!(
        "{:<w$}  {:<9}  {:<60}  IDENTIFIER\n",
        "NAME", "TRUST", "DESCRIPTION"
    );
    for h in &hits {
        let trust = if h.source == "official" {
            "official"
        } else {
            h.trust_level.as_str()
        };
        text.push_str(&format!(
            "{:<w$}  {:<9}  {:<60}  {}\n",
            h.name,
            trust,
            guard::clip(&hermes_core::skills::index::one_line(&h.description), 60),
            h.identifier
        ));
    }
    text.push_str("Use: hermes skills inspect <identifier> to preview, hermes skills install <identifier> to install.\n");
    out(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `hermes skills inspect SOURCE`: each skill with its frontmatter, files and guard report.
pub async fn inspect(ctx: &Ctx, args: &SourceArgs) -> Result<ExitCode, CliError> {
    let source = resolve(ctx, args).await?;
    let fetched = fetch_source(ctx, source).await?;
    let skills = skills_in(&fetched, args.skill.as_deref(), None)?;
    let mut text = String::new();
    for (rel, bundle) in &skills {
        let dir = sub(&fetched.root, (!rel.is_empty()).then_some(rel.as_str()));
        let scan = guard::scan_skill(
            &dir,
            &bundle.name,
            &fetched.source.identifier(rel),
            fetched.source.trust(rel),
        );
        text.push_str(&format!("Name:        {}\n", bundle.name));
        text.push_str(&format!("Description: {}\n", bundle.description));
        text.push_str(&format!(
            "Source:      {} ({})\n",
            fetched.source.url(rel),
            fetched.source.kind()
        ));
        text.push_str(&format!(
            "Identifier:  {}\n",
            fetched.source.identifier(rel)
        ));
        text.push_str(&format!("Trust:       {}\n", scan.trust.as_str()));
        if let Some(c) = &fetched.commit {
            text.push_str(&format!("Commit:      {c}\n"));
        }
        if let Some(s) = &fetched.archive_sha256 {
            text.push_str(&format!("Archive:     sha256:{s}\n"));
        }
        text.push_str(&format!(
            "Files:       {}\n",
            bundle.files.keys().cloned().collect::<Vec<_>>().join(", ")
        ));
        text.push_str("\n--- SKILL.md ---\n");
        let md = bundle.skill_md();
        let lines: Vec<&str> = md.lines().collect();
        for l in lines.iter().take(50) {
            text.push_str(l);
            text.push('\n');
        }
        if lines.len() > 50 {
            text.push_str(&format!("... ({} more lines)\n", lines.len() - 50));
        }
        text.push('\n');
        text.push_str(&scan.report(false));
        text.push('\n');
    }
    if skills.len() > 1 {
        text.push_str(&format!(
            "{} skills in this source; install one with --skill NAME.\n",
            skills.len()
        ));
    }
    out(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Options of `install`.
#[derive(Debug, Clone, Default)]
pub struct InstallOpts {
    pub category: Option<String>,
    pub name: Option<String>,
    pub force: bool,
    pub yes: bool,
}

/// `hermes skills install SOURCE`.
pub async fn install(
    ctx: &Ctx,
    args: &SourceArgs,
    opts: &InstallOpts,
) -> Result<ExitCode, CliError> {
    let source = resolve(ctx, args).await?;
    let fetched = fetch_source(ctx, source).await?;
    let mut skills = skills_in(&fetched, args.skill.as_deref(), opts.name.as_deref())?;
    if skills.len() > 1 {
        let names: Vec<&str> = skills.iter().map(|(_, b)| b.name.as_str()).collect();
        return Err(CliError::runtime(format!(
            "the source holds {} skills ({}); pick one with --skill NAME",
            names.len(),
            names.join(", ")
        )));
    }
    let Some((rel, bundle)) = skills.pop() else {
        return Err(CliError::runtime("no skill found"));
    };
    let hub = ctx.hub();
    let existing = hub.lock().get(&bundle.name);
    let install_path = match (&existing, &opts.category) {
        (Some(e), None) => e
            .get("install_path")
            .and_then(Value::as_str)
            .map(String::from)
            .ok_or_else(|| CliError::runtime("the lock entry has no install_path"))?,
        _ => hub
            .target(&bundle.name, opts.category.as_deref())
            .map_err(hub_err)?,
    };
    if let Some(e) = &existing {
        let at = e.get("install_path").and_then(Value::as_str).unwrap_or("?");
        if !opts.force {
            eprintln!(
                "'{}' is already installed at {at}. Use --force to reinstall, or `hermes skills update {}`.",
                bundle.name, bundle.name
            );
            return Ok(ExitCode::from(1));
        }
    } else {
        refuse_taken(ctx, &bundle.name, &install_path)?;
    }
    let origin = Origin {
        source: &fetched.source,
        skill_path: &rel,
        commit: fetched.commit.clone(),
        archive_sha256: fetched.archive_sha256.clone(),
    };
    guarded_install(
        ctx,
        &bundle,
        &install_path,
        &origin,
        opts.force,
        opts.yes,
        None,
    )
}

/// A skill of that name or folder the hub does not own blocks an install.
fn refuse_taken(ctx: &Ctx, name: &str, install_path: &str) -> Result<(), CliError> {
    let target = ctx.library.root().join(install_path);
    if std::fs::symlink_metadata(&target).is_ok() {
        return Err(CliError::runtime(format!(
            "{} already exists and was not installed by the hub; remove or rename it first",
            target.display()
        )));
    }
    if let Ok(skill) = ctx.library.find(name) {
        let origin = Provenance::read(ctx.library.root()).origin(&skill.name);
        if origin != SkillOrigin::Hub {
            return Err(CliError::runtime(format!(
                "a {} skill named '{name}' already exists at {}; install under another name with --name",
                origin.as_str(),
                skill.dir.display()
            )));
        }
    }
    Ok(())
}

/// Quarantine, scan, report, decide, confirm, install.
fn guarded_install(
    ctx: &Ctx,
    bundle: &Bundle,
    install_path: &str,
    origin: &Origin<'_>,
    force: bool,
    yes: bool,
    question: Option<&str>,
) -> Result<ExitCode, CliError> {
    let hub = ctx.hub();
    let quarantined = hub.quarantine(bundle).map_err(hub_err)?;
    let scan: Scan = hub.scan(&quarantined, bundle, origin);
    out(&scan.report(force))?;
    let decision = scan.decision(force);
    if !decision.is_allowed() {
        hub.discard(&quarantined);
        hub.log_blocked(bundle, origin, &scan);
        eprintln!("Installation blocked: {}", decision.reason());
        return Ok(ExitCode::from(1));
    }
    if !yes && !force {
        let q = question.map_or_else(
            || format!(
                "You are installing a third-party skill at your own risk; review its files before use.\nFiles will be at: {}\nInstall '{}'?",
                ctx.library.root().join(install_path).display(),
                bundle.name
            ),
            String::from,
        );
        if !confirm(&q) {
            hub.discard(&quarantined);
            out("Installation cancelled.\n")?;
            return Ok(ExitCode::from(1));
        }
    }
    let dir = hub
        .install(&quarantined, bundle, install_path, origin, &scan)
        .map_err(|e| {
            hub.discard(&quarantined);
            hub_err(e)
        })?;
    let pin = origin
        .commit
        .as_deref()
        .map(|c| format!(" at commit {}", &c[..c.len().min(12)]))
        .or_else(|| {
            origin
                .archive_sha256
                .as_deref()
                .map(|s| format!(" (archive sha256:{})", &s[..16]))
        })
        .unwrap_or_default();
    out(&format!(
        "Installed: {}{pin}\nFiles: {}\n",
        dir.strip_prefix(ctx.library.root())
            .unwrap_or(&dir)
            .display(),
        bundle.files.keys().cloned().collect::<Vec<_>>().join(", ")
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// `hermes skills update [NAME | --all]`.
pub async fn update(
    ctx: &Ctx,
    name: Option<&str>,
    all: bool,
    yes: bool,
    force: bool,
) -> Result<ExitCode, CliError> {
    let hub = ctx.hub();
    let installed = hub.lock().installed();
    let targets: Vec<(String, Value)> = match name {
        Some(n) => vec![(
            n.to_string(),
            installed
                .get(n)
                .cloned()
                .ok_or_else(|| CliError::runtime(format!("'{n}' is not a hub-installed skill")))?,
        )],
        None if all || !installed.is_empty() => installed.into_iter().collect(),
        None => Vec::new(),
    };
    if targets.is_empty() {
        out("No hub-installed skills.\n")?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut code = ExitCode::SUCCESS;
    let mut updated = 0;
    for (skill, entry) in targets {
        let Some(source) = Source::from_lock(&entry) else {
            eprintln!(
                "{skill}: its source ({}) cannot be fetched by this build",
                entry.get("source").and_then(Value::as_str).unwrap_or("?")
            );
            code = ExitCode::from(1);
            continue;
        };
        let fetched = match fetch_source(ctx, source).await {
            Ok(f) => f,
            Err(e) => {
                eprintln!("{skill}: unavailable: {}", e.message);
                code = ExitCode::from(1);
                continue;
            }
        };
        if !fetched.root.join("SKILL.md").is_file() {
            eprintln!(
                "{skill}: the source no longer has the skill at {}",
                fetched.source.url("")
            );
            code = ExitCode::from(1);
            continue;
        }
        let bundle = Bundle::read(&fetched.root, Some(&skill)).map_err(hub_err)?;
        let (dir, _) = hub.installed_dir(&skill).map_err(hub_err)?;
        let current = Bundle::read(&dir, Some(&skill)).ok();
        let old_files = current.map(|b| b.files).unwrap_or_default();
        let diff = hub::diff::unified(&old_files, &bundle.files);
        let old_commit = entry.pointer("/metadata/commit").and_then(Value::as_str);
        if diff.is_empty() {
            out(&format!(
                "{skill}: up to date{}\n",
                old_commit
                    .map(|c| format!(" ({})", &c[..c.len().min(12)]))
                    .unwrap_or_default()
            ))?;
            continue;
        }
        let install_path = entry
            .get("install_path")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        out(&format!(
            "{skill}: update available{}\n{diff}\n",
            match (old_commit, fetched.commit.as_deref()) {
                (Some(a), Some(b)) =>
                    format!(" ({} -> {})", &a[..a.len().min(12)], &b[..b.len().min(12)]),
                _ => String::new(),
            }
        ))?;
        let origin = Origin {
            source: &fetched.source,
            skill_path: "",
            commit: fetched.commit.clone(),
            archive_sha256: fetched.archive_sha256.clone(),
        };
        let question = format!("Update '{skill}' with these changes?");
        let result = guarded_install(
            ctx,
            &bundle,
            &install_path,
            &origin,
            force,
            yes,
            Some(&question),
        )?;
        if result == ExitCode::SUCCESS {
            updated += 1;
        } else {
            code = result;
        }
    }
    if updated > 0 {
        out(&format!("Updated {updated} skill(s).\n"))?;
    }
    Ok(code)
}

/// `hermes skills uninstall NAME`.
pub fn uninstall(ctx: &Ctx, name: &str, yes: bool) -> Result<ExitCode, CliError> {
    let hub = ctx.hub();
    if hub.lock().get(name).is_none() {
        let what = match ctx.library.find(name) {
            Ok(s) => format!(
                "'{name}' is a {} skill, not one the hub installed; the hub removes only its own",
                Provenance::read(ctx.library.root())
                    .origin(&s.name)
                    .as_str()
            ),
            Err(_) => format!("'{name}' is not a hub-installed skill"),
        };
        eprintln!("Error: {what}");
        return Ok(ExitCode::from(1));
    }
    if !yes && !confirm(&format!("Uninstall '{name}'?")) {
        out("Cancelled.\n")?;
        return Ok(ExitCode::from(1));
    }
    let msg = hub.uninstall(name).map_err(hub_err)?;
    out(&format!("{msg}\n"))?;
    Ok(ExitCode::SUCCESS)
}

/// `hermes skills audit [NAME]`: the guard again over installed hub skills; exits 1 when
/// one of them would now be blocked.
pub fn audit(ctx: &Ctx, name: Option<&str>) -> Result<ExitCode, CliError> {
    let hub = ctx.hub();
    let installed = hub.lock().installed();
    if installed.is_empty() {
        out("No hub-installed skills to audit.\n")?;
        return Ok(ExitCode::SUCCESS);
    }
    let targets: Vec<(&String, &Value)> = installed
        .iter()
        .filter(|(n, _)| name.is_none_or(|w| w == n.as_str()))
        .collect();
    if targets.is_empty() {
        eprintln!(
            "Error: '{}' is not a hub-installed skill.",
            name.unwrap_or_default()
        );
        return Ok(ExitCode::from(1));
    }
    let mut text = format!("Auditing {} skill(s)...\n\n", targets.len());
    let mut blocked = false;
    for (skill, entry) in targets {
        let dir = match hub.installed_dir(skill) {
            Ok((d, _)) if d.is_dir() => d,
            _ => {
                text.push_str(&format!(
                    "Warning: {skill} — path missing: {}\n\n",
                    entry
                        .get("install_path")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                ));
                continue;
            }
        };
        let text_of = |k: &str| entry.get(k).and_then(Value::as_str).unwrap_or_default();
        let id = if text_of("identifier").is_empty() {
            text_of("source")
        } else {
            text_of("identifier")
        };
        let trust = guard::Trust::parse(text_of("trust_level"));
        let scan = guard::scan_skill(&dir, skill, id, trust);
        blocked |= !scan.decision(false).is_allowed();
        text.push_str(&scan.report(false));
        text.push('\n');
    }
    out(&text)?;
    Ok(if blocked {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
