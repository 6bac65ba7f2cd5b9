//! [`Theme`]: the active skin plus the colour mode, turned into the styles every part of the
//! interactive output uses (titles, accents, ok/error marks, dimmed notes, code). Swapped as a
//! whole when `/skin` changes the look.

use super::skin::Skin;
use super::style::{self, ColorMode, Line, Rgb, Span, Style};

#[derive(Debug, Clone)]
pub struct Theme {
    pub skin: Skin,
    pub mode: ColorMode,
}

impl Theme {
    pub fn new(skin: Skin, mode: ColorMode) -> Theme {
        Theme { skin, mode }
    }

    /// The default skin without colours (tests and plain output).
    pub fn plain() -> Theme {
        Theme::new(Skin::default_skin(), ColorMode::None)
    }

    fn color(&self, key: &str) -> Option<Rgb> {
        self.skin.color(key)
    }

    pub fn title(&self) -> Style {
        Style::fg(self.color("banner_title")).bold()
    }

    pub fn accent(&self) -> Style {
        Style::fg(self.color("ui_accent"))
    }

    pub fn label(&self) -> Style {
        Style::fg(self.color("ui_label"))
    }

    pub fn text(&self) -> Style {
        Style::fg(self.color("banner_text"))
    }

    pub fn border(&self) -> Style {
        Style::fg(self.color("banner_border"))
    }

    pub fn response_border(&self) -> Style {
        Style::fg(self.color("response_border"))
    }

    pub fn ok(&self) -> Style {
        Style::fg(self.color("ui_ok"))
    }

    pub fn error(&self) -> Style {
        Style::fg(self.color("ui_error"))
    }

    pub fn warn(&self) -> Style {
        Style::fg(self.color("ui_warn"))
    }

    pub fn prompt(&self) -> Style {
        Style::fg(self.color("prompt")).bold()
    }

    pub fn dim(&self) -> Style {
        Style::PLAIN.dim()
    }

    /// Inline `code`.
    pub fn code(&self) -> Style {
        Style::fg(self.color("banner_accent"))
    }

    pub fn heading(&self, level: usize) -> Style {
        match level {
            1 => self.title().underline(),
            2 => self.title(),
            _ => self.accent().bold(),
        }
    }

    /// The line as the terminal should receive it.
    pub fn paint(&self, line: &[Span]) -> String {
        style::render(line, self.mode)
    }

    /// One piece of text in one style.
    pub fn paint_str(&self, text: &str, style: Style) -> String {
        style::render(&[Span::new(text, style)], self.mode)
    }

    /// Lines joined with newlines (each line ends with one).
    pub fn paint_lines(&self, lines: &[Line]) -> String {
        let mut out = String::new();
        for line in lines {
            out.push_str(&self.paint(line));
            out.push('\n');
        }
        out
    }
}
