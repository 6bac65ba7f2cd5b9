//! Styled text for the terminal: [`Span`]s (text plus a [`Style`]) grouped into lines, their
//! display width, and their rendering either with ANSI SGR escapes (true colour or the
//! 256-colour cube) or as plain text when colour is off (`NO_COLOR`, `TERM=dumb`, not a TTY).

use unicode_width::UnicodeWidthStr;

/// A 24-bit colour, written `#RRGGBB` in skins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    /// `#RRGGBB`, `RRGGBB` or `#RGB`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Rgb> {
        let hex = text.trim().trim_start_matches('#');
        let digits: Vec<u8> = hex
            .chars()
            .map(|c| c.to_digit(16).and_then(|d| u8::try_from(d).ok()))
            .collect::<Option<_>>()?;
        match digits.as_slice() {
            [r, g, b] => Some(Rgb(r * 17, g * 17, b * 17)),
            [r1, r2, g1, g2, b1, b2] => Some(Rgb(r1 * 16 + r2, g1 * 16 + g2, b1 * 16 + b2)),
            _ => None,
        }
    }

    /// The nearest entry of the xterm 256-colour palette (cube or grey ramp).
    fn to_256(self) -> u8 {
        let Rgb(r, g, b) = self;
        let level = |c: u8| -> u8 {
            if c < 48 {
                0
            } else if c < 115 {
                1
            } else {
                (c - 35) / 40
            }
        };
        let cube = 16 + 36 * level(r) + 6 * level(g) + level(b);
        let (max, min) = (r.max(g).max(b), r.min(g).min(b));
        if max - min < 12 {
            let avg = (u16::from(r) + u16::from(g) + u16::from(b)) / 3;
            if avg < 8 {
                return 16;
            }
            if avg > 238 {
                return 231;
            }
            return 232 + u8::try_from((avg - 8) / 10).unwrap_or(23).min(23);
        }
        cube
    }
}

/// How text is drawn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    pub fg: Option<Rgb>,
    pub bold: bool,
    pub dim: bool,
    pub italic: bool,
    pub underline: bool,
    pub strike: bool,
}

impl Style {
    pub const PLAIN: Style = Style {
        fg: None,
        bold: false,
        dim: false,
        italic: false,
        underline: false,
        strike: false,
    };

    pub fn fg(color: Option<Rgb>) -> Style {
        Style {
            fg: color,
            ..Style::PLAIN
        }
    }

    pub fn bold(mut self) -> Style {
        self.bold = true;
        self
    }

    pub fn dim(mut self) -> Style {
        self.dim = true;
        self
    }

    pub fn italic(mut self) -> Style {
        self.italic = true;
        self
    }

    pub fn underline(mut self) -> Style {
        self.underline = true;
        self
    }

    pub fn strike(mut self) -> Style {
        self.strike = true;
        self
    }

    /// `other` drawn on top of this style: its colour wins when it has one, flags add up.
    pub fn patch(self, other: Style) -> Style {
        Style {
            fg: other.fg.or(self.fg),
            bold: self.bold || other.bold,
            dim: self.dim || other.dim,
            italic: self.italic || other.italic,
            underline: self.underline || other.underline,
            strike: self.strike || other.strike,
        }
    }

    fn sgr(&self, mode: ColorMode) -> String {
        let mut codes: Vec<String> = Vec::new();
        if self.bold {
            codes.push("1".into());
        }
        if self.dim {
            codes.push("2".into());
        }
        if self.italic {
            codes.push("3".into());
        }
        if self.underline {
            codes.push("4".into());
        }
        if self.strike {
            codes.push("9".into());
        }
        match (self.fg, mode) {
            (Some(Rgb(r, g, b)), ColorMode::TrueColor) => codes.push(format!("38;2;{r};{g};{b}")),
            (Some(c), ColorMode::Ansi256) => codes.push(format!("38;5;{}", c.to_256())),
            _ => {}
        }
        if codes.is_empty() {
            String::new()
        } else {
            format!("\x1b[{}m", codes.join(";"))
        }
    }
}

/// Whether and how colours are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorMode {
    /// Plain text: no escape codes at all.
    None,
    Ansi256,
    TrueColor,
}

impl ColorMode {
    /// The mode for stdout: none when it is not a terminal, `NO_COLOR` is set (to anything
    /// non-empty) or `TERM=dumb`; true colour when `COLORTERM` says so; else 256 colours.
    pub fn detect(is_tty: bool) -> ColorMode {
        let var = |k: &str| std::env::var(k).unwrap_or_default();
        if !is_tty || !var("NO_COLOR").is_empty() || var("TERM") == "dumb" {
            ColorMode::None
        } else if matches!(var("COLORTERM").as_str(), "truecolor" | "24bit") {
            ColorMode::TrueColor
        } else {
            ColorMode::Ansi256
        }
    }

    pub fn enabled(self) -> bool {
        self != ColorMode::None
    }
}

/// A run of text in one style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub text: String,
    pub style: Style,
}

impl Span {
    pub fn new(text: impl Into<String>, style: Style) -> Span {
        Span {
            text: text.into(),
            style,
        }
    }

    pub fn plain(text: impl Into<String>) -> Span {
        Span::new(text, Style::PLAIN)
    }
}

/// One line of output.
pub type Line = Vec<Span>;

/// Columns `text` takes on screen.
pub fn width(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

/// Columns a line takes on screen.
pub fn line_width(line: &[Span]) -> usize {
    line.iter().map(|s| width(&s.text)).sum()
}

/// The line as the terminal should receive it: escapes around styled spans in colour modes,
/// the bare text otherwise.
pub fn render(line: &[Span], mode: ColorMode) -> String {
    let mut out = String::new();
    for span in line {
        let sgr = if mode.enabled() {
            span.style.sgr(mode)
        } else {
            String::new()
        };
        if sgr.is_empty() {
            out.push_str(&span.text);
        } else {
            out.push_str(&sgr);
            out.push_str(&span.text);
            out.push_str("\x1b[0m");
        }
    }
    out
}

/// `text` cut to at most `max` columns, ending in `…` when something was cut.
pub fn truncate(text: &str, max: usize) -> String {
    if width(text) <= max {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        out.push(c);
        used += w;
    }
    if max > 0 {
        out.push('…');
    }
    out
}

/// `text` padded with spaces to `columns` (never cut).
pub fn pad(text: &str, columns: usize) -> String {
    let w = width(text);
    format!("{text}{}", " ".repeat(columns.saturating_sub(w)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_colours_parse_and_map_to_the_256_palette() {
        assert_eq!(Rgb::parse("#FFD700"), Some(Rgb(255, 215, 0)));
        assert_eq!(Rgb::parse("fff"), Some(Rgb(255, 255, 255)));
        assert_eq!(Rgb::parse("gold"), None);
        assert_eq!(Rgb::parse("#12345"), None);
        assert_eq!(Rgb(255, 0, 0).to_256(), 196);
        assert_eq!(Rgb(0, 0, 0).to_256(), 16);
        assert_eq!(Rgb(128, 128, 128).to_256(), 244);
    }

    #[test]
    fn plain_mode_writes_no_escapes() {
        let line = vec![
            Span::new("bold", Style::fg(Rgb::parse("#ff0000")).bold()),
            Span::plain(" text"),
        ];
        assert_eq!(render(&line, ColorMode::None), "bold text");
        assert_eq!(
            render(&line, ColorMode::TrueColor),
            "\x1b[1;38;2;255;0;0mbold\x1b[0m text"
        );
        assert_eq!(
            render(&line, ColorMode::Ansi256),
            "\x1b[1;38;5;196mbold\x1b[0m text"
        );
    }

    #[test]
    fn widths_count_columns_not_bytes() {
        assert_eq!(width("héllo"), 5);
        assert_eq!(width("日本"), 4);
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
        assert_eq!(pad("ab", 4), "ab  ");
    }
}
