//! `hermes config ...`: reading and changing `config.yaml` from the command line, as the Python
//! Hermes's `hermes config` does: `show` (the default) prints the file as written with secrets
//! masked; `get KEY` one value at a dotted path; `set KEY VALUE` / `unset KEY` edit it through
//! hermes-config's text editor ([`hermes_config::edit`]), so comments, order and quoting
//! survive; `path` / `env-path` name the files; `edit` opens an editor and checks the result
//! with the loader. Honours `-p/--profile` and `HERMES_HOME` like every other subcommand.

use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use hermes_config::edit::{self, EditError};
use hermes_config::{Config, ConfigError, Environment, HermesHome};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::args::CommonArgs;
use crate::error::CliError;

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Without an action: show config.yaml.
    #[command(subcommand)]
    pub action: Option<ConfigAction>,

    /// Use the profile NAME: a separate home under $HERMES_HOME/profiles/NAME.
    #[arg(short = 'p', long = "profile", value_name = "NAME", global = true)]
    pub profile: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Print config.yaml as written, secrets masked (the default action).
    Show,
    /// Print the value at KEY, as written in config.yaml (`${VAR}` not substituted).
    ///
    /// KEY is dotted (model.default); list items go by number (custom_providers.0.name). The
    /// value is the raw one from the file: `${VAR}` references are shown as written, not
    /// substituted, and a key the file does not set is "not set" (exit 1) even when Hermes has
    /// a default for it. Sections and lists print as YAML, with the secrets in them masked.
    Get {
        /// The dotted key path.
        key: String,
    },
    /// Set KEY to VALUE, keeping the file's comments, order and quoting.
    ///
    /// VALUE is read as YAML: true, false, 3, 0.5, null, [a, b] and {k: v} are typed; anything
    /// else is text (quote it, e.g. '"3"', to store a number as text). Missing sections are
    /// created; a section written in flow style ({...}) is left for you to edit by hand.
    /// Secrets are better kept in .env (see env-path) and referenced as ${NAME}.
    Set {
        /// The dotted key path, e.g. model.default or auxiliary.compression.model.
        key: String,
        /// The value.
        #[arg(allow_hyphen_values = true)]
        value: String,
    },
    /// Remove KEY (and sections left empty).
    Unset {
        /// The dotted key path.
        key: String,
    },
    /// Print the path of config.yaml.
    Path,
    /// Print the path of .env (where secrets belong).
    #[command(name = "env-path")]
    EnvPath,
    /// Open config.yaml in an editor, then check that it still loads.
    ///
    /// The editor is $VISUAL, else $EDITOR, else vi. A file broken by the edit is reported
    /// with its line and column (exit 2).
    Edit,
}

/// `common` holds the flags given before the subcommand (`hermes -p NAME config ...`).
pub fn run(common: &CommonArgs, args: &ConfigArgs) -> Result<ExitCode, CliError> {
    let profile = args.profile.clone().or_else(|| common.profile.clone());
    let home =
        HermesHome::resolve(profile.as_deref()).map_err(|e| CliError::config(e.to_string()))?;
    let path = home.config_path();
    match &args.action {
        None | Some(ConfigAction::Show) => show(&path),
        Some(ConfigAction::Get { key }) => get(&path, key),
        Some(ConfigAction::Set { key, value }) => set(&home, key, value),
        Some(ConfigAction::Unset { key }) => unset(&path, key),
        Some(ConfigAction::Path) => {
            println!("{}", path.display());
            Ok(ExitCode::SUCCESS)
        }
        Some(ConfigAction::EnvPath) => {
            println!("{}", home.env_path().display());
            Ok(ExitCode::SUCCESS)
        }
        Some(ConfigAction::Edit) => edit_in_editor(&home),
    }
}

fn show(path: &Path) -> Result<ExitCode, CliError> {
    let Some(text) = read(path)? else {
        println!(
            "No config.yaml at {}: Hermes uses its defaults.\nCreate it with `hermes config set KEY VALUE` (e.g. `hermes config set model.default anthropic/claude-sonnet-4.5`) or `hermes config edit`.",
            path.display()
        );
        return Ok(ExitCode::SUCCESS);
    };
    let masked = mask_text(&text);
    print!("{masked}");
    if !masked.is_empty() && !masked.ends_with('\n') {
        println!();
    }
    println!("# file: {}", path.display());
    load_text(path, &text).map_err(|e| CliError::config(e.to_string()))?;
    Ok(ExitCode::SUCCESS)
}

fn get(path: &Path, key: &str) -> Result<ExitCode, CliError> {
    let parts = key_parts(key)?;
    let not_set = || CliError::runtime(format!("{key} is not set in {}", path.display()));
    let Some(text) = read(path)? else {
        return Err(not_set());
    };
    // Only syntax matters here: a value of the wrong type can still be read (and fixed).
    if let Err(e @ ConfigError::Yaml { .. }) = load_text(path, &text) {
        return Err(CliError::config(e.to_string()));
    }
    let root = if text.trim().is_empty() {
        Node::Null
    } else {
        serde_saphyr::from_str::<Node>(&text)
            .map_err(|e| CliError::config(format!("{}: invalid YAML: {e}", path.display())))?
    };
    let mut node = &root;
    for part in &parts {
        node = node.child(part).ok_or_else(not_set)?;
    }
    let leaf_is_secret = parts.last().is_some_and(|k| is_secret_key(k));
    match node {
        Node::Map(m) if !m.is_empty() => print!("{}", block(&mask_node(node, leaf_is_secret))),
        Node::Seq(s) if !s.is_empty() => print!("{}", block(&mask_node(node, leaf_is_secret))),
        // A scalar asked for by name is printed even when it is a secret.
        Node::Str(s) => println!("{s}"),
        other => println!("{}", flow(other, false)),
    }
    Ok(ExitCode::SUCCESS)
}

fn set(home: &HermesHome, key: &str, raw: &str) -> Result<ExitCode, CliError> {
    key_parts(key)?;
    let value = parse_value(raw)?;
    home.ensure().map_err(|e| CliError::config(e.to_string()))?;
    let path = home.config_path();
    edit::set(&path, key, &value).map_err(edit_error)?;
    let reference = value.as_str().is_some_and(|s| s.contains("${"));
    let secret = key.rsplit('.').next().is_some_and(is_secret_key) && !reference;
    if secret {
        println!("Set {key} = (hidden) in {}", path.display());
        eprintln!(
            "hermes: note: secrets are safer in {} (NAME=value), referenced here as ${{NAME}}",
            home.env_path().display()
        );
    } else {
        let shown = flow(&mask_node(&Node::from_value(&value), false), false);
        println!("Set {key} = {shown} in {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn unset(path: &Path, key: &str) -> Result<ExitCode, CliError> {
    key_parts(key)?;
    if edit::unset(path, key).map_err(edit_error)? {
        println!("Unset {key} in {}", path.display());
        Ok(ExitCode::SUCCESS)
    } else {
        Err(CliError::runtime(format!(
            "{key} is not set in {}",
            path.display()
        )))
    }
}

fn edit_in_editor(home: &HermesHome) -> Result<ExitCode, CliError> {
    home.ensure().map_err(|e| CliError::config(e.to_string()))?;
    let path = home.config_path();
    let created = !path.exists();
    if created {
        hermes_config::atomic_write(&path, b"")
            .map_err(|e| CliError::runtime(format!("cannot create {}: {e}", path.display())))?;
    }
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "vi".to_string());
    // Through the shell, so an editor given with arguments (`code --wait`) works.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("hermes-config-edit")
        .arg(&path)
        .status()
        .map_err(|e| CliError::runtime(format!("cannot start the editor `{editor}`: {e}")))?;
    if !status.success() {
        return Err(CliError::runtime(format!(
            "the editor `{editor}` failed ({status}); {} was not checked",
            path.display()
        )));
    }
    if created && std::fs::metadata(&path).is_ok_and(|m| m.len() == 0) {
        let _ = std::fs::remove_file(&path);
        println!("Nothing written: {} was not created", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    hermes_config::load(home)
        .map_err(|e| CliError::config(format!("{e}; run `hermes config edit` again to fix it")))?;
    println!("{} is valid", path.display());
    Ok(ExitCode::SUCCESS)
}

/// The file's text; `None` when there is no file.
fn read(path: &Path) -> Result<Option<String>, CliError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(_) if path.is_dir() => Err(CliError::config(
            ConfigError::IsDirectory {
                path: path.to_path_buf(),
            }
            .to_string(),
        )),
        Err(e) => Err(CliError::runtime(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

/// Loads the text as Hermes would (without `${VAR}` substitution): YAML errors come with their
/// line and column, settings of the wrong type with their key.
fn load_text(path: &Path, text: &str) -> Result<(), ConfigError> {
    let env = Environment::isolated(std::iter::empty::<(String, String)>());
    Config::from_yaml(path, text, &env).map(|_| ())
}

fn key_parts(key: &str) -> Result<Vec<&str>, CliError> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty() || p.trim() != *p) {
        return Err(CliError::config(format!(
            "`{key}` is not a key path: names separated by dots, like model.default"
        )));
    }
    Ok(parts)
}

fn edit_error(e: EditError) -> CliError {
    match &e {
        EditError::Config(ConfigError::Read { .. } | ConfigError::Write { .. }) => {
            CliError::runtime(e.to_string())
        }
        _ => CliError::config(e.to_string()),
    }
}

/// VALUE as YAML: `true`/`false` (and `yes`/`no`/`on`/`off`), numbers, `null`/`~`, flow lists
/// and mappings, and quoted strings are typed; anything else is the text as given.
fn parse_value(raw: &str) -> Result<Value, CliError> {
    let t = raw.trim();
    if t.starts_with(['[', '{']) {
        return serde_saphyr::from_str::<Value>(t).map_err(|e| {
            let why = e.to_string();
            let why = why.lines().next().unwrap_or_default().to_string();
            CliError::config(format!(
                "`{raw}` is not a valid YAML list or mapping ({why}); quote it to set it as text"
            ))
        });
    }
    if t.starts_with(['"', '\''])
        && let Ok(s) = serde_saphyr::from_str::<String>(t)
    {
        return Ok(Value::String(s));
    }
    if t.is_empty() || raw.contains('\n') || t.contains(" #") {
        return Ok(Value::String(raw.to_string()));
    }
    let parsed = serde_saphyr::from_str::<Value>(t).ok();
    Ok(match parsed {
        Some(Value::Null) if matches!(t, "null" | "Null" | "NULL" | "~") => Value::Null,
        Some(Value::Bool(b))
            if matches!(
                t.to_ascii_lowercase().as_str(),
                "true" | "false" | "yes" | "no" | "on" | "off"
            ) =>
        {
            Value::Bool(b)
        }
        Some(n @ Value::Number(_)) => n,
        _ => Value::String(raw.to_string()),
    })
}

/// Whether a key's value is a credential (`api_key`, `token`, `client_secret`, ...).
fn is_secret_key(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "key",
        "keys",
        "api_key",
        "api_keys",
        "apikey",
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "secret",
        "client_secret",
        "password",
        "passwd",
        "auth",
        "authorization",
        "bearer",
        "jwt",
        "private_key",
    ];
    const SUFFIXES: &[&str] = &[
        "_api_key",
        "_api_keys",
        "_apikey",
        "_token",
        "_secret",
        "_secret_key",
        "_access_key",
        "_private_key",
        "_password",
        "_passwd",
    ];
    let name = name.to_ascii_lowercase();
    NAMES.contains(&name.as_str()) || SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// A secret for display: its first and last 4 characters when it is long, else `***`.
fn mask(secret: &str) -> String {
    let chars: Vec<char> = secret.chars().collect();
    if chars.len() < 12 {
        return "***".into();
    }
    let head: String = chars[..4].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}...{tail}")
}

/// The config text with the values of secret keys masked; `${VAR}` references, comments and
/// everything else as written.
fn mask_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut block: Option<usize> = None;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        out.push_str(&mask_line(body, &mut block));
        out.push_str(&line[body.len()..]);
    }
    out
}

/// One line of [`mask_text`]; `block` is the column of a secret key whose value follows on
/// the next lines (a list of keys, a block scalar).
fn mask_line(line: &str, block: &mut Option<usize>) -> String {
    let trimmed = line.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return line.to_string();
    }
    let indent = line.len() - line.trim_start_matches(' ').len();
    // `- key: value` list items: the key starts after the dashes.
    let mut start = indent;
    while line[start..].starts_with("- ") {
        start += 2;
        start += line[start..].len() - line[start..].trim_start_matches(' ').len();
    }
    let is_item = start > indent || line[indent..].trim_end() == "-";
    let key = edit::parse_key_line(&line[start..]);
    if let Some(column) = *block {
        if indent > column || (indent == column && is_item) {
            if key.is_none() {
                return if is_item {
                    format!("{}{}", &line[..start], mask_value(line[start..].trim_end()))
                } else {
                    format!("{}***", &line[..indent])
                };
            }
        } else {
            *block = None;
        }
    }
    let Some(key) = key else {
        return line.to_string();
    };
    if !is_secret_key(&key.key) {
        return line.to_string();
    }
    let range = (start + key.value.start)..(start + key.value.end);
    let value = &line[range.clone()];
    if value.is_empty() || value.starts_with(['|', '>']) {
        *block = Some(start);
        return line.to_string();
    }
    format!(
        "{}{}{}",
        &line[..range.start],
        mask_value(value),
        &line[range.end..]
    )
}

/// A secret's value as written, masked: `${VAR}` references and null stay as they are.
fn mask_value(value: &str) -> String {
    if value.starts_with(['[', '{']) {
        return match serde_saphyr::from_str::<Node>(value) {
            Ok(node) => flow(&mask_node(&node, true), false),
            Err(_) => "***".into(),
        };
    }
    if value.contains("${") || matches!(value, "~" | "null" | "Null" | "NULL" | "\"\"" | "''") {
        return value.to_string();
    }
    let text = serde_saphyr::from_str::<String>(value).unwrap_or_else(|_| value.to_string());
    match value.chars().next() {
        Some(q @ ('"' | '\'')) => format!("{q}{}{q}", mask(&text)),
        _ => mask(&text),
    }
}

/// A YAML value that keeps the order of mapping keys (for printing sections as written).
#[derive(Debug, Clone, PartialEq)]
enum Node {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(String, Node)>),
}

impl Node {
    fn child(&self, part: &str) -> Option<&Node> {
        match self {
            Node::Map(entries) => entries.iter().find(|(k, _)| k == part).map(|(_, v)| v),
            Node::Seq(items) => part.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        }
    }

    fn from_value(value: &Value) -> Node {
        match value {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => Node::Number(n.clone()),
            Value::String(s) => Node::Str(s.clone()),
            Value::Array(items) => Node::Seq(items.iter().map(Node::from_value).collect()),
            Value::Object(map) => Node::Map(
                map.iter()
                    .map(|(k, v)| (k.clone(), Node::from_value(v)))
                    .collect(),
            ),
        }
    }

    fn is_block(&self) -> bool {
        match self {
            Node::Map(m) => !m.is_empty(),
            Node::Seq(s) => !s.is_empty(),
            _ => false,
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Node, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a YAML value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Node::Null, Node::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::Str(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::Str(v))
    }

    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        // Keys as text, as the settings loader reads them (`n:` and `1:` are names here).
        while let Some((k, v)) = map.next_entry::<String, Node>()? {
            entries.push((k, v));
        }
        Ok(Node::Map(entries))
    }
}

/// `node` with the values of secret keys masked (`secret`: `node` is such a value).
fn mask_node(node: &Node, secret: bool) -> Node {
    match node {
        Node::Str(s) if secret && !s.is_empty() && !s.contains("${") => Node::Str(mask(s)),
        Node::Number(_) | Node::Bool(_) if secret => Node::Str("***".into()),
        Node::Seq(items) => Node::Seq(items.iter().map(|i| mask_node(i, secret)).collect()),
        Node::Map(entries) => Node::Map(
            entries
                .iter()
                .map(|(k, v)| (k.clone(), mask_node(v, is_secret_key(k))))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn text(s: &str, in_flow: bool) -> String {
    if edit::is_plain_safe(s, in_flow) {
        s.to_string()
    } else {
        serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
    }
}

/// `node` as YAML on one line.
fn flow(node: &Node, in_flow: bool) -> String {
    match node {
        Node::Null => "null".into(),
        Node::Bool(b) => b.to_string(),
        Node::Number(n) => n.to_string(),
        Node::Str(s) => text(s, in_flow),
        Node::Seq(items) => {
            let items: Vec<String> = items.iter().map(|i| flow(i, true)).collect();
            format!("[{}]", items.join(", "))
        }
        Node::Map(entries) => {
            let pairs: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}: {}", text(k, true), flow(v, true)))
                .collect();
            format!("{{{}}}", pairs.join(", "))
        }
    }
}

/// A non-empty mapping or list as block YAML, in the file's order.
fn block(node: &Node) -> String {
    let mut out = String::new();
    write_block(node, 0, &mut out);
    out
}

fn write_block(node: &Node, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match node {
        Node::Map(entries) => {
            for (k, v) in entries {
                if v.is_block() {
                    out.push_str(&format!("{pad}{}:\n", text(k, false)));
                    write_block(v, indent + 2, out);
                } else {
                    out.push_str(&format!("{pad}{}: {}\n", text(k, false), flow(v, false)));
                }
            }
        }
        Node::Seq(items) => {
            for item in items {
                if item.is_block() {
                    let mut inner = String::new();
                    write_block(item, indent + 2, &mut inner);
                    out.push_str(&format!("{pad}- {}", &inner[indent + 2..]));
                } else {
                    out.push_str(&format!("{pad}- {}\n", flow(item, false)));
                }
            }
        }
        other => out.push_str(&format!("{pad}{}\n", flow(other, false))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_read_as_yaml_scalars_or_text() {
        let cases = [
            ("true", Value::Bool(true)),
            ("off", Value::Bool(false)),
            ("y", Value::String("y".into())),
            ("3", serde_json::json!(3)),
            ("0.5", serde_json::json!(0.5)),
            ("null", Value::Null),
            ("~", Value::Null),
            ("gpt-5.1", Value::String("gpt-5.1".into())),
            ("\"3\"", Value::String("3".into())),
            ("'true'", Value::String("true".into())),
            ("\"a #b\"", Value::String("a #b".into())),
            ("'x' y", Value::String("'x' y".into())),
            ("a: b", Value::String("a: b".into())),
            ("- x", Value::String("- x".into())),
            ("x # y", Value::String("x # y".into())),
            ("#x", Value::String("#x".into())),
            ("", Value::String(String::new())),
            ("-1", serde_json::json!(-1)),
            ("[a, 2]", serde_json::json!(["a", 2])),
            ("{k: v}", serde_json::json!({"k": "v"})),
        ];
        for (raw, want) in cases {
            assert_eq!(parse_value(raw).unwrap(), want, "{raw}");
        }
        assert_eq!(parse_value("[oops").unwrap_err().code, 2);
    }

    #[test]
    fn secrets_are_masked_in_text_and_references_kept() {
        let text = "model:\n  api_key: sk-or-v1-0123456789abcdef  # mine\n  max_tokens: 100\n  default: x\ncustom_providers:\n  - name: work\n    api_key: ${WORK_KEY}\n  - api_key: \"short\"\ncredential_pool:\n  openrouter:\n    keys:\n      - sk-or-aaaaaaaaaaaaaaaa\n      - ${OR_KEY_2}\n    strategy: round_robin\n  other:\n    keys: [sk-bbbbbbbbbbbbbbbbbb, \"${K}\"]\ntoken: ~\n";
        assert_eq!(
            mask_text(text),
            "model:\n  api_key: sk-o...cdef  # mine\n  max_tokens: 100\n  default: x\ncustom_providers:\n  - name: work\n    api_key: ${WORK_KEY}\n  - api_key: \"***\"\ncredential_pool:\n  openrouter:\n    keys:\n      - sk-o...aaaa\n      - ${OR_KEY_2}\n    strategy: round_robin\n  other:\n    keys: [sk-b...bbbb, \"${K}\"]\ntoken: ~\n"
        );
    }

    #[test]
    fn sections_print_as_block_yaml_in_file_order() {
        let node: Node = serde_saphyr::from_str(
            "zeta: 1\nalpha:\n  list: [a, 'b c']\n  items:\n    - name: x\n      api_key: sk-0123456789abcdef\n    - plain\n  empty: {}\n",
        )
        .unwrap();
        assert_eq!(
            block(&mask_node(&node, false)),
            "zeta: 1\nalpha:\n  list:\n    - a\n    - b c\n  items:\n    - name: x\n      api_key: sk-0...cdef\n    - plain\n  empty: {}\n"
        );
    }

    #[test]
    fn secret_key_names() {
        for k in [
            "api_key",
            "OPENAI_API_KEY",
            "token",
            "client_secret",
            "keys",
            "password",
        ] {
            assert!(is_secret_key(k), "{k}");
        }
        for k in ["max_tokens", "key_env", "default", "base_url", "tokenizer"] {
            assert!(!is_secret_key(k), "{k}");
        }
    }
}
