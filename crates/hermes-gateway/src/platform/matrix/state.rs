//! What the Matrix adapter keeps across restarts, in `<home>/matrix/state.json` (written 0600,
//! atomically): the account it belongs to, the device id of the password login (so a restart
//! reuses the device instead of piling up new ones) and the `/sync` `next_batch` token, so
//! messages that arrived while the gateway was down are answered after it starts again and
//! nothing is answered twice.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// Largest state file read (it holds three short strings).
const MAX_STATE_FILE: u64 = 64 * 1024;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SavedState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_batch: Option<String>,
}

impl SavedState {
    /// The saved state; empty when there is none or it cannot be read (a fresh start is
    /// always safe: the first sync then skips history).
    pub fn load(path: &Path) -> SavedState {
        let Ok(meta) = std::fs::metadata(path) else {
            return SavedState::default();
        };
        if meta.len() > MAX_STATE_FILE {
            return SavedState::default();
        }
        std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Writes the state (a temporary file renamed over the old one).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let tmp = path.with_extension("json.tmp");
        let body = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        {
            use std::io::Write;
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create(true).truncate(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(0o600);
            }
            let mut f = options.open(&tmp)?;
            f.write_all(&body)?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_and_bad_files_start_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("matrix/state.json");
        assert_eq!(SavedState::load(&path), SavedState::default());
        let s = SavedState {
            user_id: Some("@bot:localhost".into()),
            device_id: Some("DEV".into()),
            next_batch: Some("s72_1".into()),
        };
        s.save(&path).unwrap();
        assert_eq!(SavedState::load(&path), s);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(&path, "not json").unwrap();
        assert_eq!(SavedState::load(&path), SavedState::default());
    }
}
