//! The slash-command registry (name, aliases, argument hint, help, what the argument is for
//! completion) and the parser: a line starting with `/` names a command exactly, by an alias,
//! or by a unique prefix (`/he` is `/help`; `/re` is ambiguous). `//text` sends `/text` as a
//! message, and so does a line whose first word is a path (`/usr/bin/env is missing`). A
//! skill's `/<skill-name>` is looked up before this parser sees the line (exact command names
//! win over skills, skills over prefixes).

/// What a command's argument is, for completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    None,
    Text,
    Number,
    OnOff,
    /// A reasoning effort level, or show / hide.
    Reasoning,
    Model,
    Provider,
    Toolset,
    Session,
    Skin,
    Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Session,
    Configuration,
    Tools,
    Info,
}

impl Group {
    pub fn title(self) -> &'static str {
        match self {
            Group::Session => "Session",
            Group::Configuration => "Configuration",
            Group::Tools => "Tools & memory",
            Group::Info => "Info & exit",
        }
    }
}

/// One slash command.
#[derive(Debug, PartialEq, Eq)]
pub struct Command {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    /// Shown after the name in help: `[name]`, `[N]`, ...
    pub args: &'static str,
    pub help: &'static str,
    pub group: Group,
    pub arg: Arg,
}

const fn cmd(
    name: &'static str,
    aliases: &'static [&'static str],
    args: &'static str,
    arg: Arg,
    group: Group,
    help: &'static str,
) -> Command {
    Command {
        name,
        aliases,
        args,
        help,
        group,
        arg,
    }
}

/// Every command, in help order.
pub const COMMANDS: &[Command] = &[
    cmd(
        "new",
        &["reset"],
        "[title]",
        Arg::Text,
        Group::Session,
        "Start a new conversation (a new stored session)",
    ),
    cmd(
        "retry",
        &[],
        "",
        Arg::None,
        Group::Session,
        "Send your last message again; its answer is dropped",
    ),
    cmd(
        "undo",
        &[],
        "[N]",
        Arg::Number,
        Group::Session,
        "Take back the last N exchanges (default 1)",
    ),
    cmd(
        "history",
        &[],
        "",
        Arg::None,
        Group::Session,
        "Show the conversation so far",
    ),
    cmd(
        "title",
        &[],
        "[name]",
        Arg::Text,
        Group::Session,
        "Show or set the session's title",
    ),
    cmd(
        "compress",
        &[],
        "[focus]",
        Arg::Text,
        Group::Session,
        "Summarise the conversation now to free context",
    ),
    cmd(
        "sessions",
        &[],
        "",
        Arg::None,
        Group::Session,
        "List recent sessions",
    ),
    cmd(
        "resume",
        &[],
        "[id]",
        Arg::Session,
        Group::Session,
        "Continue a stored session (id, id prefix or title)",
    ),
    cmd(
        "clear",
        &[],
        "",
        Arg::None,
        Group::Session,
        "Clear the screen",
    ),
    cmd(
        "model",
        &[],
        "[name]",
        Arg::Model,
        Group::Configuration,
        "Show the model, or switch to another (the conversation is kept)",
    ),
    cmd(
        "provider",
        &[],
        "[name]",
        Arg::Provider,
        Group::Configuration,
        "Show the provider, or switch to another",
    ),
    cmd(
        "yolo",
        &[],
        "[on|off]",
        Arg::OnOff,
        Group::Configuration,
        "Run dangerous commands without asking (hardline ones stay refused)",
    ),
    cmd(
        "approvals",
        &[],
        "",
        Arg::None,
        Group::Configuration,
        "Show the approval mode, rules and what you allowed",
    ),
    cmd(
        "skin",
        &[],
        "[name]",
        Arg::Skin,
        Group::Configuration,
        "List skins, or switch (saved as display.skin)",
    ),
    cmd(
        "verbose",
        &[],
        "[on|off]",
        Arg::OnOff,
        Group::Configuration,
        "Show each tool's arguments and result",
    ),
    cmd(
        "reasoning",
        &[],
        "[LEVEL|show|hide] [--global]",
        Arg::Reasoning,
        Group::Configuration,
        "Reasoning effort (none .. max) and showing the model's reasoning, dimmed",
    ),
    cmd(
        "tools",
        &[],
        "[toolset]",
        Arg::Toolset,
        Group::Tools,
        "List the tools the model can use",
    ),
    cmd(
        "toolsets",
        &[],
        "",
        Arg::None,
        Group::Tools,
        "List the toolsets and which are enabled",
    ),
    cmd(
        "memory",
        &[],
        "",
        Arg::None,
        Group::Tools,
        "Show what is in MEMORY.md and USER.md",
    ),
    cmd(
        "skills",
        &[],
        "",
        Arg::None,
        Group::Tools,
        "List the skills; /<skill-name> [request] runs one",
    ),
    cmd(
        "kanban",
        &[],
        "[list|show ID|unblock ID answer|...]",
        Arg::Text,
        Group::Tools,
        "The task board shared by all profiles (`hermes kanban` does more)",
    ),
    cmd(
        "cron",
        &[],
        "",
        Arg::None,
        Group::Tools,
        "Scheduled jobs (`hermes cron` adds and runs them)",
    ),
    cmd(
        "reload-mcp",
        &[],
        "",
        Arg::None,
        Group::Tools,
        "Reconnect the MCP servers of config.yaml and rebuild the tool list",
    ),
    cmd(
        "usage",
        &[],
        "",
        Arg::None,
        Group::Info,
        "Tokens and cost of the last turn and the session, and context use",
    ),
    cmd(
        "help",
        &["?"],
        "[command]",
        Arg::Command,
        Group::Info,
        "Show the commands, or the help of one",
    ),
    cmd(
        "quit",
        &["exit", "q"],
        "",
        Arg::None,
        Group::Info,
        "Exit (Ctrl-D does the same)",
    ),
];

/// What a typed line is.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// Text for the model.
    Message(&'a str),
    Command {
        command: &'static Command,
        args: &'a str,
    },
    /// `/name` that is no command (possibly a skill's name).
    Unknown(&'a str),
    /// A prefix shared by several commands.
    Ambiguous {
        typed: &'a str,
        candidates: Vec<&'static str>,
    },
}

/// Parses one line (already trimmed of surrounding whitespace).
pub fn parse(line: &str) -> Parsed<'_> {
    let Some(rest) = line.strip_prefix('/') else {
        return Parsed::Message(line);
    };
    if rest.starts_with('/') {
        return Parsed::Message(rest);
    }
    let (word, args) = match rest.find(char::is_whitespace) {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest, ""),
    };
    let name_like = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || c == '-' || c == '_' || c == '?');
    if !name_like && !word.is_empty() {
        return Parsed::Message(line);
    }
    match resolve(word) {
        Ok(command) => Parsed::Command { command, args },
        Err(candidates) if candidates.is_empty() => Parsed::Unknown(word),
        Err(candidates) => Parsed::Ambiguous {
            typed: word,
            candidates,
        },
    }
}

/// The command `word` names exactly, by alias, or by a unique prefix; else the candidates
/// (none: unknown).
pub fn resolve(word: &str) -> Result<&'static Command, Vec<&'static str>> {
    let word = word.to_ascii_lowercase();
    if word.is_empty() {
        return Err(Vec::new());
    }
    if let Some(c) = COMMANDS
        .iter()
        .find(|c| c.name == word || c.aliases.contains(&word.as_str()))
    {
        return Ok(c);
    }
    let matches: Vec<&'static Command> = COMMANDS
        .iter()
        .filter(|c| c.name.starts_with(&word) || c.aliases.iter().any(|a| a.starts_with(&word)))
        .collect();
    match matches.as_slice() {
        [one] => Ok(one),
        many => Err(many.iter().map(|c| c.name).collect()),
    }
}

/// `on`/`off` (and their synonyms) as a switch; no argument toggles `current`.
pub fn switch(args: &str, current: bool) -> Result<bool, String> {
    match args.trim().to_ascii_lowercase().as_str() {
        "" | "toggle" => Ok(!current),
        "on" | "true" | "yes" | "1" | "show" | "enable" => Ok(true),
        "off" | "false" | "no" | "0" | "hide" | "disable" => Ok(false),
        other => Err(format!("expected on or off, not `{other}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(p: Parsed<'_>) -> String {
        match p {
            Parsed::Command { command, args } => format!("{} [{args}]", command.name),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn names_aliases_and_unique_prefixes() {
        assert_eq!(name(parse("/help")), "help []");
        assert_eq!(name(parse("/he")), "help []");
        assert_eq!(name(parse("/reset")), "new []");
        assert_eq!(name(parse("/new Deploy work")), "new [Deploy work]");
        assert_eq!(name(parse("/q")), "quit []");
        assert_eq!(name(parse("/exit")), "quit []");
        assert_eq!(name(parse("/USAGE")), "usage []");
        assert_eq!(name(parse("/undo   3 ")), "undo [3]");
        assert_eq!(
            name(parse("/comp focus on tests")),
            "compress [focus on tests]"
        );
        assert_eq!(
            name(parse("/tools")),
            "tools []",
            "exact beats prefix of toolsets"
        );
        assert_eq!(name(parse("/rel")), "reload-mcp []");
    }

    #[test]
    fn ambiguous_unknown_and_messages() {
        assert_eq!(
            parse("/re"),
            Parsed::Ambiguous {
                typed: "re",
                candidates: vec!["new", "retry", "resume", "reasoning", "reload-mcp"]
            }
        );
        assert_eq!(parse("/deploy-app now"), Parsed::Unknown("deploy-app"));
        assert_eq!(parse("hello /help"), Parsed::Message("hello /help"));
        assert_eq!(parse("//help"), Parsed::Message("/help"));
        assert_eq!(
            parse("/usr/bin/env is missing"),
            Parsed::Message("/usr/bin/env is missing")
        );
        assert_eq!(parse("/"), Parsed::Unknown(""));
    }

    #[test]
    fn every_name_and_alias_resolves_to_itself() {
        for c in COMMANDS {
            assert_eq!(resolve(c.name).map(|r| r.name), Ok(c.name));
            for a in c.aliases {
                assert_eq!(resolve(a).map(|r| r.name), Ok(c.name));
            }
        }
    }

    #[test]
    fn switches() {
        assert_eq!(switch("", false), Ok(true));
        assert_eq!(switch("off", true), Ok(false));
        assert_eq!(switch("show", false), Ok(true));
        assert!(switch("maybe", false).is_err());
    }
}
