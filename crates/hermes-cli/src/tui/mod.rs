//! The interactive terminal experience: styled text and skins (`style`, `theme`, `skin`,
//! `builtin_skins`, `config_edit`), streaming markdown (`markdown`, `inline`, `table`, `wrap`,
//! `highlight`), the live output of a turn (`console` with its spinner, `live`, `progress`),
//! prompts (`prompts`), input (`input`, `editor`, `history`, `complete`), the banner, and the
//! slash commands (`slash` for the registry and parser, `commands` and `settings` for what
//! they do). Nothing here runs on the one-shot path.

pub mod banner;
pub mod builtin_skins;
pub mod commands;
pub mod complete;
pub mod config_edit;
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
pub mod settings;
pub mod skin;
pub mod slash;
#[cfg(test)]
mod snapshot_tests;
pub mod style;
pub mod table;
pub mod theme;
pub mod wrap;
