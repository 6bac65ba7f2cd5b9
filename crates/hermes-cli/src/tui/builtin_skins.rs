//! The skins that ship with the binary (as documents in the same shape as a user's YAML file),
//! the spinner's default faces and verbs, and the default emoji of each tool.

use serde_json::{Value, json};

/// Built-in skin names, `default` first.
pub const NAMES: &[&str] = &["default", "ares", "mono", "slate", "daylight"];

/// Faces shown while waiting for the model.
pub const DEFAULT_WAITING_FACES: &[&str] = &[
    "(｡◕‿◕｡)",
    "(◕‿◕✿)",
    "٩(◕‿◕｡)۶",
    "(✿◠‿◠)",
    "( ˘▽˘)っ",
    "♪(´ε` )",
    "(◕ᴗ◕✿)",
    "ヾ(＾∇＾)",
];

/// Faces shown while the model reasons.
pub const DEFAULT_THINKING_FACES: &[&str] = &[
    "(◔_◔)",
    "(¬‿¬)",
    "(⌐■_■)",
    "◉_◉",
    "(°ロ°)",
    "(⊙_⊙)",
    "ಠ_ಠ",
    "( ˘⌣˘)♡",
];

/// What the spinner says it is doing.
pub const DEFAULT_VERBS: &[&str] = &[
    "pondering",
    "contemplating",
    "musing",
    "cogitating",
    "ruminating",
    "deliberating",
    "mulling",
    "reflecting",
    "processing",
    "reasoning",
    "analyzing",
    "synthesizing",
    "formulating",
];

/// The emoji of a tool when the skin does not choose one.
pub fn tool_emoji(tool: &str) -> &'static str {
    match tool {
        "terminal" => "💻",
        "process" => "⚙",
        "read_file" => "📖",
        "write_file" => "✍",
        "patch" => "🔧",
        "search_files" => "🔎",
        "todo" => "📋",
        "clarify" => "❓",
        "memory" => "🧠",
        "session_search" | "web_search" => "🔍",
        "web_extract" => "📄",
        "delegate_task" => "🔀",
        "execute_code" => "🐍",
        "cronjob" => "⏰",
        "send_message" => "📨",
        "skills_list" | "skill_view" | "skill_manage" => "📚",
        t if t.starts_with("browser_") => "🌐",
        _ => "⚡",
    }
}

/// The built-in skin `name`, as a document.
pub fn get(name: &str) -> Option<Value> {
    Some(match name {
        "default" => json!({
            "name": "default",
            "description": "Classic Hermes: gold on dark, kawaii spinner",
            "colors": {
                "banner_border": "#CD7F32", "banner_title": "#FFD700", "banner_accent": "#FFBF00",
                "banner_dim": "#B8860B", "banner_text": "#FFF8DC", "ui_accent": "#FFBF00",
                "ui_label": "#DAA520", "ui_ok": "#4caf50", "ui_error": "#ef5350",
                "ui_warn": "#ffa726", "prompt": "#FFF8DC", "input_rule": "#CD7F32",
                "response_border": "#FFD700", "session_label": "#DAA520",
                "session_border": "#8B8682"
            },
            "branding": {
                "agent_name": "Hermes Agent",
                "welcome": "Welcome to Hermes Agent! Type your message or /help for commands.",
                "goodbye": "Goodbye! ⚕",
                "response_label": " ⚕ Hermes ",
                "prompt_symbol": "❯",
                "help_header": "(^_^)? Available Commands"
            },
            "tool_prefix": "┊"
        }),
        "ares" => json!({
            "name": "ares",
            "description": "Crimson and bronze, for battles with the build",
            "colors": {
                "banner_border": "#9F1C1C", "banner_title": "#C7A96B", "banner_accent": "#DD4A3A",
                "banner_dim": "#6B1717", "banner_text": "#F1E6CF", "ui_accent": "#DD4A3A",
                "ui_label": "#C7A96B", "prompt": "#F1E6CF", "input_rule": "#9F1C1C",
                "response_border": "#C7A96B", "session_label": "#C7A96B",
                "session_border": "#6E584B"
            },
            "spinner": {
                "waiting_faces": ["(⚔)", "(⛨)", "(▲)", "(<>)"],
                "thinking_faces": ["(⚔)", "(⛨)", "(⌁)", "(<>)"],
                "thinking_verbs": ["forging", "marching", "holding the line", "tempering steel",
                                   "raising the shield", "plotting the charge"],
                "wings": [["⟪⚔", "⚔⟫"], ["⟪▲", "▲⟫"], ["⟪⛨", "⛨⟫"]]
            },
            "branding": {
                "agent_name": "Ares Agent",
                "welcome": "Ares Agent is ready. Type your message or /help for commands.",
                "goodbye": "Farewell, warrior! ⚔",
                "response_label": " ⚔ Ares ",
                "prompt_symbol": "⚔",
                "help_header": "(⚔) Available Commands"
            },
            "tool_prefix": "╎"
        }),
        "mono" => json!({
            "name": "mono",
            "description": "Greyscale, nothing else",
            "colors": {
                "banner_border": "#555555", "banner_title": "#e6edf3", "banner_accent": "#aaaaaa",
                "banner_dim": "#444444", "banner_text": "#c9d1d9", "ui_accent": "#aaaaaa",
                "ui_label": "#888888", "ui_ok": "#888888", "ui_error": "#cccccc",
                "ui_warn": "#999999", "prompt": "#c9d1d9", "input_rule": "#444444",
                "response_border": "#aaaaaa", "session_label": "#888888",
                "session_border": "#555555"
            },
            "branding": {"help_header": "[?] Available Commands"}
        }),
        "slate" => json!({
            "name": "slate",
            "description": "Cool blues for long sessions",
            "colors": {
                "banner_border": "#4169e1", "banner_title": "#7eb8f6", "banner_accent": "#8EA8FF",
                "banner_dim": "#4b5563", "banner_text": "#c9d1d9", "ui_accent": "#7eb8f6",
                "ui_label": "#8EA8FF", "ui_ok": "#63D0A6", "ui_error": "#F7A072",
                "ui_warn": "#e6a855", "prompt": "#c9d1d9", "input_rule": "#4169e1",
                "response_border": "#7eb8f6", "session_label": "#7eb8f6",
                "session_border": "#4b5563"
            }
        }),
        "daylight" => json!({
            "name": "daylight",
            "description": "Dark text and blue accents for light terminals",
            "colors": {
                "banner_border": "#2563EB", "banner_title": "#0F172A", "banner_accent": "#1D4ED8",
                "banner_dim": "#475569", "banner_text": "#111827", "ui_accent": "#2563EB",
                "ui_label": "#0F766E", "ui_ok": "#15803D", "ui_error": "#B91C1C",
                "ui_warn": "#B45309", "prompt": "#111827", "input_rule": "#93C5FD",
                "response_border": "#2563EB", "session_label": "#1D4ED8",
                "session_border": "#64748B"
            }
        }),
        _ => return None,
    })
}
