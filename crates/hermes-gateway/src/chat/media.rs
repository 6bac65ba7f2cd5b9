//! Files a turn made for the user, sent to the chat after the answer as the Python Hermes
//! sends them: the image of each successful `image_generate` as a photo, the audio of each
//! `text_to_speech` as a voice message. Only this turn's results of those two tools count
//! (a path quoted in a web page or an old result never becomes an attachment), each file once,
//! and only files that exist.

use std::collections::HashMap;
use std::path::PathBuf;

use hermes_protocol::{Message, Role};
use serde_json::Value;

use crate::platform::{OutboundFile, OutboundFileKind};

/// The most files one answer sends.
const MAX_FILES: usize = 10;

/// The deliverable files among `added` (the messages of one turn).
pub fn produced_files(added: &[Message]) -> Vec<OutboundFile> {
    let tool_of: HashMap<&str, &str> = added
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.tool_calls.iter())
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect();
    let mut files: Vec<OutboundFile> = Vec::new();
    for m in added.iter().filter(|m| m.role == Role::Tool) {
        let Some(tool) = m.tool_call_id.as_deref().and_then(|id| tool_of.get(id)) else {
            continue;
        };
        let (field, kind) = match *tool {
            "image_generate" => ("image", OutboundFileKind::Photo),
            "text_to_speech" => ("path", OutboundFileKind::Voice),
            _ => continue,
        };
        let Ok(result) = serde_json::from_str::<Value>(&m.content) else {
            continue;
        };
        let Some(path) = result.get(field).and_then(Value::as_str).map(PathBuf::from) else {
            continue;
        };
        if path.is_absolute() && path.is_file() && !files.iter().any(|f| f.path == path) {
            files.push(OutboundFile { kind, path });
        }
        if files.len() == MAX_FILES {
            break;
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_protocol::ToolCall;

    fn call(id: &str, name: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn only_this_turns_images_and_speech_become_files() {
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("image_1.png");
        let audio = dir.path().join("speech_1.ogg");
        std::fs::write(&image, b"png").unwrap();
        std::fs::write(&audio, b"ogg").unwrap();
        let quoted = dir.path().join("quoted.png");
        std::fs::write(&quoted, b"png").unwrap();
        let added = vec![
            Message::assistant_with_tools(
                "",
                vec![
                    call("a", "image_generate"),
                    call("b", "text_to_speech"),
                    call("c", "web_extract"),
                    call("d", "image_generate"),
                ],
            ),
            Message::tool_result(
                "a",
                "image_generate",
                serde_json::json!({"image": image.display().to_string()}).to_string(),
            ),
            Message::tool_result(
                "b",
                "text_to_speech",
                serde_json::json!({"path": audio.display().to_string(), "media": "MEDIA:x"})
                    .to_string(),
            ),
            // A page that quotes a path is not a deliverable.
            Message::tool_result(
                "c",
                "web_extract",
                serde_json::json!({"image": quoted.display().to_string()}).to_string(),
            ),
            // A failed generation or a missing file sends nothing.
            Message::tool_result("d", "image_generate", r#"{"error":"quota"}"#),
        ];
        assert_eq!(
            produced_files(&added),
            vec![
                OutboundFile {
                    kind: OutboundFileKind::Photo,
                    path: image
                },
                OutboundFile {
                    kind: OutboundFileKind::Voice,
                    path: audio
                },
            ]
        );
    }
}
