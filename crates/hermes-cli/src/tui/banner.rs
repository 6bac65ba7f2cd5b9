//! The welcome banner: a box with the skin's agent name and the session's model, provider,
//! toolsets, working directory and session id, at most 80 columns wide (narrower terminals get
//! a narrower box; long values are cut with `…`), then the skin's welcome line.

use super::style::{Line, Span, pad, truncate, width};
use super::theme::Theme;

/// What the banner shows.
#[derive(Debug, Clone)]
pub struct BannerInfo {
    pub model: String,
    pub provider: String,
    pub toolsets: Vec<String>,
    pub tool_count: usize,
    pub cwd: String,
    pub session_id: String,
}

/// The banner's lines for a terminal `columns` wide.
pub fn banner(info: &BannerInfo, theme: &Theme, columns: usize) -> Vec<Line> {
    let outer = columns.clamp(30, 80);
    let inner = outer - 4;
    let border = theme.border();
    let title = format!(" ⚕ {} ", theme.skin.agent_name());
    let title = truncate(&title, inner);
    let top_rule = "─".repeat(outer.saturating_sub(3 + width(&title)));
    let mut lines: Vec<Line> = vec![vec![
        Span::new("╭─", border),
        Span::new(title, theme.title()),
        Span::new(format!("{top_rule}╮"), border),
    ]];
    let toolsets = if info.toolsets.is_empty() {
        "none".to_string()
    } else {
        info.toolsets.join(", ")
    };
    let rows = [
        ("model", format!("{} via {}", info.model, info.provider)),
        (
            "tools",
            format!(
                "{} ({} tool{})",
                toolsets,
                info.tool_count,
                if info.tool_count == 1 { "" } else { "s" }
            ),
        ),
        ("cwd", info.cwd.clone()),
        ("session", info.session_id.clone()),
    ];
    const KEY: usize = 9;
    for (key, value) in rows {
        let value = truncate(&value, inner.saturating_sub(KEY));
        let used = KEY + width(&value);
        lines.push(vec![
            Span::new("│ ", border),
            Span::new(pad(key, KEY), theme.label()),
            Span::new(value, theme.text()),
            Span::plain(" ".repeat(inner.saturating_sub(used))),
            Span::new(" │", border),
        ]);
    }
    lines.push(vec![Span::new(
        format!("╰{}╯", "─".repeat(outer - 2)),
        border,
    )]);
    let welcome = theme.skin.brand(
        "welcome",
        "Welcome to Hermes Agent! Type your message or /help for commands.",
    );
    lines.push(vec![Span::new(welcome.to_string(), theme.accent())]);
    lines
}

/// `~/src/project` for paths under the home directory.
pub fn short_path(path: &std::path::Path) -> String {
    let shown = path.display().to_string();
    match std::env::var("HOME") {
        Ok(home) if !home.is_empty() && shown.starts_with(&home) => {
            format!("~{}", &shown[home.len()..])
        }
        _ => shown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::style::line_width;

    #[test]
    fn the_banner_fits_narrow_and_wide_terminals() {
        let info = BannerInfo {
            model: "anthropic/claude-sonnet-4.5".into(),
            provider: "openrouter".into(),
            toolsets: vec!["terminal".into(), "file".into()],
            tool_count: 9,
            cwd: format!("/home/user/{}", "deep/".repeat(30)),
            session_id: "20251130_120000_abcdef".into(),
        };
        let theme = Theme::plain();
        for columns in [40, 80, 200] {
            let lines = banner(&info, &theme, columns);
            for l in &lines[..lines.len() - 1] {
                assert_eq!(line_width(l), columns.min(80), "{}", theme.paint(l));
            }
        }
    }
}
