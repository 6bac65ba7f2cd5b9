//! [`Runtime`]: one per Hermes home and process. It loads the home once (config.yaml, `.env`)
//! and owns what every session of the process shares: the providers built for each distinct
//! model choice (so their HTTP connections are pooled), the MCP servers (each spawned once,
//! however many sessions use it), the memory store and the tools that hold no session state.
//! [`Runtime::session`] builds a [`Session`](crate::Session) from a [`SessionSpec`]: cheap, and
//! safe to call from many tasks at once. Cloning a runtime clones a handle.
//!
//! Warnings about the setup (a toolset this build lacks, an unusable fallback entry, an MCP
//! server that failed) go through `tracing`, each distinct one once per runtime: a gateway that
//! builds a session per chat does not repeat them per chat.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use hermes_config::{Config, Environment, HermesHome};
use hermes_core::memory::{MemorySettings, MemoryStore};
use hermes_core::prompt;
use hermes_core::skills::{self, Library, SkillSettings};
use hermes_llm::Overrides;
use hermes_tools::{Interaction, Registry, Tool};

use crate::error::SessionError;
use crate::providers::{self, Providers};
use crate::session::Session;
use crate::spec::{Platform, SessionSpec};
use crate::tools::{self, SharedTools};

/// Distinct model choices whose providers are kept (beyond it the least recently used go).
const PROVIDER_CACHE: usize = 8;

/// Distinct warnings remembered (beyond it they are still given, just not deduplicated).
const WARNINGS_KEPT: usize = 256;

#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("home", &self.inner.home.root())
            .finish_non_exhaustive()
    }
}

struct Inner {
    home: HermesHome,
    config: Config,
    env: Environment,
    shared: SharedTools,
    /// Built providers by model choice, most recently used last.
    providers: Mutex<Vec<(Overrides, Arc<Providers>)>>,
    mcp: Mutex<McpServers>,
    /// The one thread writing every session of this process to the home's sessions.db.
    store_writer: OnceLock<hermes_store::StoreWriter>,
    /// Where sessions are kept (`store.backend`).
    store: hermes_store::StoreLocation,
    /// Warnings already given, in order.
    warned: Mutex<Vec<String>>,
    /// Warnings are only remembered, not given (read-only commands show them themselves).
    quiet: AtomicBool,
}

/// The MCP servers connected so far, each once for the whole process.
#[derive(Default)]
struct McpServers {
    hubs: Vec<hermes_mcp::Hub>,
    connected: HashSet<String>,
}

/// The tools and system prompt of a session, before any provider is involved.
pub struct Prepared {
    pub tools: Registry,
    pub system_prompt: String,
    pub skills: Arc<Library>,
}

impl Runtime {
    /// The runtime of the home `profile` selects (`None`: `HERMES_HOME`, the sticky profile,
    /// else `~/.hermes`), created if missing.
    pub fn load(profile: Option<&str>) -> Result<Runtime, SessionError> {
        let home = HermesHome::resolve(profile)?;
        Runtime::open(home)
    }

    /// The runtime of `home`, created if missing.
    pub fn open(home: HermesHome) -> Result<Runtime, SessionError> {
        home.ensure()?;
        let (config, env) = hermes_config::load(&home)?;
        Runtime::with(home, config, env)
    }

    /// The runtime of `home` with its config and environment already loaded; nothing is
    /// created on disk (read-only commands such as `hermes status` use it).
    pub fn with(
        home: HermesHome,
        config: Config,
        env: Environment,
    ) -> Result<Runtime, SessionError> {
        let memory_settings = MemorySettings::from_config(&config)?;
        let web = hermes_web::WebTools::new(&config, &env, &home);
        let kanban: hermes_kanban::KanbanSettings = config.section("kanban")?;
        let kanban = crate::tools::KanbanOptions {
            auto_subscribe: kanban.auto_subscribe_on_create,
            fetcher: hermes_web::net::Fetcher::new(hermes_web::net::UrlPolicy::from_config(
                &config, &env, &home,
            )),
        };
        let store = crate::store_location(&home, &config, &env)?;
        let shared = SharedTools::new(&home, &store, &memory_settings, web, kanban);
        Ok(Runtime {
            inner: Arc::new(Inner {
                home,
                config,
                env,
                shared,
                providers: Mutex::new(Vec::new()),
                mcp: Mutex::new(McpServers::default()),
                store_writer: OnceLock::new(),
                store,
                warned: Mutex::new(Vec::new()),
                quiet: AtomicBool::new(false),
            }),
        })
    }

    pub fn home(&self) -> &HermesHome {
        &self.inner.home
    }

    /// Where this home's sessions are kept (`store.backend`).
    pub fn store_location(&self) -> &hermes_store::StoreLocation {
        &self.inner.store
    }

    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    pub fn env(&self) -> &Environment {
        &self.inner.env
    }

    /// Adds `tool` to the catalogue of every session built from now on (a frontend's own
    /// tools: the gateway's `send_message`). Sessions choose it by its toolset as any other.
    pub fn register_tool(&self, tool: Arc<dyn Tool>) {
        self.inner.shared.add(tool);
    }

    /// The thread that writes every session of this runtime to the home's `sessions.db`
    /// (started with the first session that records).
    pub fn store_writer(&self) -> &hermes_store::StoreWriter {
        self.inner.store_writer.get_or_init(|| {
            hermes_store::StoreWriter::start(
                self.inner.store.clone(),
                hermes_store::StoreOptions::default(),
            )
        })
    }

    pub fn memory(&self) -> Option<&Arc<MemoryStore>> {
        self.inner.shared.memory.as_ref()
    }

    /// Builds a session: cheap after the first one (providers and MCP servers are shared).
    /// Blocking: the first session to use an MCP server waits for it to connect (at most its
    /// `connect_timeout`); async callers use [`Runtime::open_session`].
    pub fn session(
        &self,
        spec: &SessionSpec,
        interaction: Arc<dyn Interaction>,
    ) -> Result<Session, SessionError> {
        Session::build(self, spec, interaction)
    }

    /// [`Runtime::session`] off the async threads.
    pub async fn open_session(
        &self,
        spec: SessionSpec,
        interaction: Arc<dyn Interaction>,
    ) -> Result<Session, SessionError> {
        let runtime = self.clone();
        match tokio::task::spawn_blocking(move || runtime.session(&spec, interaction)).await {
            Ok(result) => result,
            Err(e) => Err(SessionError::Setting {
                origin: "session".into(),
                reason: format!("building the session failed: {e}"),
            }),
        }
    }

    /// The providers for `choice`, built once per distinct choice.
    pub fn providers(&self, choice: &Overrides) -> Result<Arc<Providers>, SessionError> {
        if let Ok(mut cache) = self.inner.providers.lock()
            && let Some(i) = cache.iter().position(|(c, _)| c == choice)
        {
            let entry = cache.remove(i);
            let providers = entry.1.clone();
            cache.push(entry);
            return Ok(providers);
        }
        let built = Arc::new(providers::for_session(
            &self.inner.config,
            &self.inner.env,
            &self.inner.home,
            choice,
        )?);
        for w in &built.warnings {
            self.warn(w);
        }
        if let Ok(mut cache) = self.inner.providers.lock() {
            if cache.len() >= PROVIDER_CACHE {
                cache.remove(0);
            }
            cache.push((choice.clone(), built.clone()));
        }
        Ok(built)
    }

    /// Selects a session's tools (the configured toolsets, the MCP servers they name, minus
    /// what its platform may not have; `execute_code` working) and assembles its system prompt, with the skills index
    /// and the memory snapshot of now, fixed for the session.
    pub fn prepare(
        &self,
        spec: &SessionSpec,
        cwd: &Path,
        (model, provider): (&str, &str),
    ) -> Result<Prepared, SessionError> {
        let (tools, skills) = self.select_tools(spec)?;
        // The working `execute_code` is put in here, not later, so that what
        // `hermes prompt-size` counts is the schema a session sends.
        let tools =
            hermes_core::code_exec::install(&tools, self.config().section("code_execution")?);
        let tools = hermes_core::vision::with_browser_vision(&tools);
        let system_prompt = self.system_prompt(spec, cwd, &tools, &skills, (model, provider))?;
        Ok(Prepared {
            tools,
            system_prompt,
            skills,
        })
    }

    /// The tools a session gets, and the skills library of its platform.
    pub fn select_tools(
        &self,
        spec: &SessionSpec,
    ) -> Result<(Registry, Arc<Library>), SessionError> {
        let config = &self.inner.config;
        let home = &self.inner.home;
        let (mut toolsets, source) =
            tools::configured_toolsets(spec.toolsets.as_deref(), &spec.platform, config);
        let skills = Arc::new(Library::for_home(
            home,
            SkillSettings::from_config(config, home.root(), spec.platform.name()),
        ));
        let registry = self.inner.shared.registry(skills.clone());
        // A chat platform also sends messages (`send_message`, when its frontend offers it)
        // and schedules jobs the gateway runs (`cronjob`), unless its toolsets are explicit.
        // A worker the kanban dispatcher started always gets its task tools, whatever its
        // profile's toolsets (as in Python).
        if hermes_kanban::WorkerScope::from_env().is_some()
            && !toolsets.iter().any(|t| t == "kanban")
        {
            toolsets.push("kanban".to_string());
        }
        if matches!(spec.platform, Platform::Gateway(_)) && source == "toolsets" {
            for extra in ["messaging", "cronjob"] {
                let offered = registry
                    .names()
                    .iter()
                    .any(|n| registry.get(n).is_some_and(|t| t.toolset() == extra));
                if offered && !toolsets.iter().any(|t| t == extra) {
                    toolsets.push(extra.to_string());
                }
            }
        }
        let (toolsets, mcp_servers, mcp_warnings) = tools::mcp_selection(toolsets, config);
        let (selected, warnings) = registry.select(&toolsets)?;
        let mut tools = selected.available(&self.inner.env);
        for w in warnings.iter().chain(&mcp_warnings) {
            self.warn(w);
        }
        for tool in self.mcp_tools(&mcp_servers) {
            tools.register(tool);
        }
        let tools = if spec.platform == Platform::Cron {
            tools::without_cron_tools(tools)
        } else {
            tools
        };
        Ok((tools, skills))
    }

    /// The system prompt of a session with `tools` talking to `model`: the layers in their
    /// fixed order, the skills index and the memory snapshot of now.
    pub fn system_prompt(
        &self,
        spec: &SessionSpec,
        cwd: &Path,
        tools: &Registry,
        skills: &Library,
        (model, provider): (&str, &str),
    ) -> Result<String, SessionError> {
        let tool_names = tools.names();
        let mut toolset_names: Vec<&str> = Vec::new();
        for name in &tool_names {
            if let Some(ts) = tools.get(name).map(|t| t.toolset())
                && !toolset_names.contains(&ts)
            {
                toolset_names.push(ts);
            }
        }
        let index = skills::index::session_index(skills, &tool_names, &toolset_names);
        for w in &index.warnings {
            self.warn(w);
        }
        let date = prompt::today();
        let assembled = prompt::assemble(prompt::SessionPromptInputs {
            home: &self.inner.home,
            config: &self.inner.config,
            cwd,
            model,
            provider,
            tool_names: &tool_names,
            platform: spec.platform.name(),
            ignore_rules: spec.ignore_rules,
            memory: self.memory().map(Arc::as_ref),
            skills_index: index.text.as_deref(),
            date: &date,
        })?;
        for w in &assembled.warnings {
            self.warn(w);
        }
        Ok(match spec.instructions.as_deref().map(str::trim) {
            Some(extra) if !extra.is_empty() => format!("{}\n\n{extra}", assembled.text),
            _ => assembled.text,
        })
    }

    /// The tools of `servers`, connecting the ones not connected yet (concurrently, each at
    /// most its `connect_timeout`). Each server is spawned once per runtime.
    fn mcp_tools(&self, servers: &[hermes_mcp::ServerConfig]) -> Vec<Arc<dyn Tool>> {
        if servers.is_empty() {
            return Vec::new();
        }
        let Ok(mut mcp) = self.inner.mcp.lock() else {
            return Vec::new();
        };
        let missing: Vec<hermes_mcp::ServerConfig> = servers
            .iter()
            .filter(|s| !mcp.connected.contains(&s.name))
            .cloned()
            .collect();
        if !missing.is_empty() {
            let hub = hermes_mcp::Hub::connect(&missing, self.hub_options());
            for w in hub.warnings() {
                self.warn(&w);
            }
            mcp.connected.extend(missing.into_iter().map(|s| s.name));
            mcp.hubs.push(hub);
        }
        let wanted: Vec<String> = servers.iter().map(|s| s.toolset()).collect();
        mcp.hubs
            .iter()
            .flat_map(hermes_mcp::Hub::tools)
            .filter(|t| wanted.iter().any(|w| w == t.toolset()))
            .collect()
    }

    /// How this runtime's MCP servers connect: stderr to the home's log, OAuth tokens in the
    /// home, browser sign-in only from a terminal, sampling requests (where a server's policy
    /// allows them) answered by the configured model; the session waits until each server is
    /// connected or gave up (each bounded by its own `connect_timeout`).
    fn hub_options(&self) -> hermes_mcp::HubOptions {
        use std::io::IsTerminal;
        let sampling = self
            .providers(&hermes_llm::Overrides::default())
            .ok()
            .map(|p| {
                Arc::new(hermes_mcp::llm::ProviderSampler::new(
                    p.primary.clone(),
                    p.spec.model.clone(),
                )) as Arc<dyn hermes_mcp::SamplingHandler>
            });
        let auth_prompt: Option<Arc<dyn hermes_mcp::AuthPrompt>> = std::io::stdin()
            .is_terminal()
            .then(|| Arc::new(hermes_mcp::ConsolePrompt) as Arc<dyn hermes_mcp::AuthPrompt>);
        hermes_mcp::HubOptions {
            stderr_log: Some(self.inner.home.join("logs/mcp-stderr.log")),
            home: Some(self.inner.home.root().to_path_buf()),
            sampling,
            auth_prompt,
            wait: Some(std::time::Duration::MAX),
        }
    }

    /// Says `message` once per runtime (through `tracing`).
    pub fn warn(&self, message: &str) {
        let first = match self.inner.warned.lock() {
            Ok(warned) if warned.iter().any(|w| w == message) => false,
            Ok(mut warned) => {
                if warned.len() < WARNINGS_KEPT {
                    warned.push(message.to_string());
                }
                true
            }
            Err(_) => true,
        };
        if first && !self.inner.quiet.load(Ordering::Relaxed) {
            tracing::warn!("{message}");
        }
    }

    /// Keeps warnings to [`Runtime::warnings`] instead of giving them (`hermes status` and
    /// `hermes doctor` report them as their own findings).
    pub fn set_quiet(&self, quiet: bool) {
        self.inner.quiet.store(quiet, Ordering::Relaxed);
    }

    /// The distinct warnings given (or kept) so far, in order.
    pub fn warnings(&self) -> Vec<String> {
        self.inner
            .warned
            .lock()
            .map(|w| w.clone())
            .unwrap_or_default()
    }
}

/// The whole tool catalogue of `runtime`'s home for `platform` (what `hermes tools` lists).
pub fn catalogue(runtime: &Runtime, platform: &Platform) -> Registry {
    let home = runtime.home();
    let skills = Arc::new(Library::for_home(
        home,
        SkillSettings::from_config(runtime.config(), home.root(), platform.name()),
    ));
    runtime.inner.shared.registry(skills)
}
