//! The interactive terminal's display and input, nothing else: styled text and skins
//! (`style`, `theme`, `skin`, `builtin_skins`), streaming markdown (`markdown`, `inline`,
//! `table`, `wrap`, `highlight`), the live output of a turn (`console` with its spinner, `live`,
//! `progress`), prompts (`prompts`), input (`input`, `editor`, `history`, `complete`) and the
//! banner. What the chat does with what is typed (the slash commands) is the REPL's
//! (`crate::repl`). Nothing here runs on the one-shot path.

pub mod banner;
pub mod builtin_skins;
pub mod complete;
pub mod console;
pub mod editor;
pub mod highlight;
pub mod history;
pub mod inline;
pub mod input;
pub mod live;
pub mod markdown;
pub mod progress;
pub mod prompts;
pub mod skin;
#[cfg(test)]
mod snapshot_tests;
pub mod style;
pub mod table;
pub mod theme;
pub mod wrap;
