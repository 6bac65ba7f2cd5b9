//! The DingTalk Stream protocol's frames
//! (<https://open.dingtalk.com/document/direction/stream-mode-protocol-access-description>):
//! every frame is JSON `{"specVersion", "type": "SYSTEM" | "EVENT" | "CALLBACK", "headers":
//! {"messageId", "topic", "contentType", "time", …}, "data": "<a JSON string>"}`, and each one
//! is acknowledged with `{"code": 200, "headers": {"contentType": "application/json",
//! "messageId"}, "message": "OK", "data": "…"}`. SYSTEM `ping` is answered with its own data;
//! SYSTEM `disconnect` announces the server closes the connection soon (a new one is opened).
//! The robot's messages are CALLBACKs on `/v1.0/im/bot/messages/get`, whose data is the
//! message ([`BotMessage`]).

use serde_json::{Value, json};

use super::api::BOT_TOPIC;

/// What a frame asks of the client.
#[derive(Debug, PartialEq)]
pub(crate) enum Frame {
    /// Answer `ack`; nothing else.
    Ack { ack: String },
    /// Answer `ack`, then open a new connection.
    Disconnect { ack: String },
    /// Answer `ack`, then handle the robot's message.
    Message {
        ack: String,
        message: Box<BotMessage>,
    },
    /// Not a frame of the protocol.
    Invalid,
}

fn ack(message_id: &str, code: u16, message: &str, data: String) -> String {
    json!({
        "code": code,
        "headers": {"contentType": "application/json", "messageId": message_id},
        "message": message,
        "data": data,
    })
    .to_string()
}

/// Reads one text frame.
pub(crate) fn parse(text: &str) -> Frame {
    let Ok(frame) = serde_json::from_str::<Value>(text) else {
        return Frame::Invalid;
    };
    let headers = &frame["headers"];
    let Some(id) = headers["messageId"].as_str() else {
        return Frame::Invalid;
    };
    let topic = headers["topic"].as_str().unwrap_or_default();
    let data = frame["data"].as_str().unwrap_or_default();
    match frame["type"].as_str() {
        Some("SYSTEM") => {
            let ack = ack(id, 200, "OK", data.to_string());
            if topic == "disconnect" {
                Frame::Disconnect { ack }
            } else {
                // `ping`, and any system topic added later: acknowledged as the SDK does.
                Frame::Ack { ack }
            }
        }
        Some("EVENT") => Frame::Ack {
            ack: ack(
                id,
                200,
                "OK",
                json!({"status": "SUCCESS", "message": "success"}).to_string(),
            ),
        },
        Some("CALLBACK") if topic == BOT_TOPIC => {
            let ok = ack(id, 200, "OK", json!({"response": null}).to_string());
            match serde_json::from_str::<Value>(data)
                .ok()
                .and_then(|d| BotMessage::from_data(&d))
            {
                Some(message) => Frame::Message {
                    ack: ok,
                    message: Box::new(message),
                },
                // Acknowledged all the same: DingTalk would only redeliver it.
                None => Frame::Ack { ack: ok },
            }
        }
        Some("CALLBACK") => Frame::Ack {
            ack: ack(id, 404, "not implement", data.to_string()),
        },
        _ => Frame::Invalid,
    }
}

/// A file in a message: its download code and kind.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Media {
    pub download_code: String,
    /// `picture`, `video`, `audio`, `file`.
    pub kind: String,
    pub file_name: Option<String>,
}

/// A message to the robot
/// (<https://open.dingtalk.com/document/orgapp/receive-message>).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BotMessage {
    pub msg_id: String,
    pub conversation_id: String,
    pub group: bool,
    pub conversation_title: Option<String>,
    pub sender_id: String,
    pub sender_staff_id: String,
    pub sender_nick: String,
    pub session_webhook: String,
    /// Milliseconds since the epoch; 0 when not given.
    pub session_webhook_expires: u64,
    pub create_at: u64,
    pub in_at_list: bool,
    pub text: String,
    pub media: Vec<Media>,
}

fn str_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

impl BotMessage {
    fn from_data(d: &Value) -> Option<BotMessage> {
        let msg_id = str_of(&d["msgId"]);
        let sender_id = str_of(&d["senderId"]);
        if msg_id.is_empty() || sender_id.is_empty() {
            return None;
        }
        let mut text = d["text"]["content"]
            .as_str()
            .unwrap_or_default()
            .trim()
            .to_string();
        let mut media = Vec::new();
        let content = &d["content"];
        // Rich text: text items joined by spaces (Python), pictures as files.
        if let Some(items) = content["richText"].as_array() {
            let mut parts = Vec::new();
            for item in items {
                if let Some(t) = item["text"].as_str().filter(|t| !t.is_empty()) {
                    parts.push(t.to_string());
                }
                if let Some(code) = item["downloadCode"].as_str().filter(|c| !c.is_empty()) {
                    media.push(Media {
                        download_code: code.to_string(),
                        kind: item["type"].as_str().unwrap_or("picture").to_string(),
                        file_name: None,
                    });
                }
            }
            if text.is_empty() {
                text = parts.join(" ").trim().to_string();
            }
        } else if let Some(code) = content["downloadCode"].as_str().filter(|c| !c.is_empty()) {
            media.push(Media {
                download_code: code.to_string(),
                kind: d["msgtype"].as_str().unwrap_or("file").to_string(),
                file_name: content["fileName"].as_str().map(str::to_string),
            });
        }
        let conversation_id = str_of(&d["conversationId"]);
        Some(BotMessage {
            conversation_id: if conversation_id.is_empty() {
                sender_id.clone()
            } else {
                conversation_id
            },
            group: str_of(&d["conversationType"]) == "2",
            conversation_title: d["conversationTitle"].as_str().map(str::to_string),
            sender_staff_id: str_of(&d["senderStaffId"]),
            sender_nick: str_of(&d["senderNick"]),
            session_webhook: str_of(&d["sessionWebhook"]),
            session_webhook_expires: d["sessionWebhookExpiredTime"].as_u64().unwrap_or(0),
            create_at: d["createAt"].as_u64().unwrap_or(0),
            in_at_list: d["isInAtList"].as_bool().unwrap_or(false),
            msg_id,
            sender_id,
            text,
            media,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: &str, topic: &str, data: &Value) -> String {
        json!({"specVersion": "1.0", "type": kind,
               "headers": {"appId": "a", "connectionId": "c", "contentType": "application/json",
                           "messageId": "m-1", "time": "1690000000000", "topic": topic},
               "data": data.to_string()})
        .to_string()
    }

    #[test]
    fn system_frames() {
        let ping = parse(&frame("SYSTEM", "ping", &json!({"opaque": "x"})));
        let Frame::Ack { ack } = ping else {
            panic!("{ping:?}")
        };
        let ack: Value = serde_json::from_str(&ack).unwrap();
        assert_eq!(ack["code"], 200);
        assert_eq!(ack["headers"]["messageId"], "m-1");
        assert_eq!(ack["data"], r#"{"opaque":"x"}"#);
        assert!(matches!(
            parse(&frame(
                "SYSTEM",
                "disconnect",
                &json!({"reason": "upgrade"})
            )),
            Frame::Disconnect { .. }
        ));
        assert_eq!(parse("nope"), Frame::Invalid);
        assert_eq!(parse(r#"{"type":"SYSTEM"}"#), Frame::Invalid);
    }

    #[test]
    fn robot_messages() {
        let data = json!({
            "conversationId": "cidX", "conversationType": "2", "msgId": "msgA",
            "senderId": "$:LWCP_v1:$abc", "senderStaffId": "manager1", "senderNick": "Ann",
            "sessionWebhook": "https://oapi.dingtalk.com/robot/sendBySession?session=s",
            "sessionWebhookExpiredTime": 1_690_000_000_000u64, "createAt": 1_689_000_000_000u64,
            "isInAtList": true, "msgtype": "text", "text": {"content": " hello "},
        });
        let Frame::Message { ack, message } = parse(&frame("CALLBACK", BOT_TOPIC, &data)) else {
            panic!()
        };
        let ack: Value = serde_json::from_str(&ack).unwrap();
        assert_eq!(ack["data"], r#"{"response":null}"#);
        assert_eq!(message.text, "hello");
        assert!(message.group && message.in_at_list);
        assert_eq!(message.sender_staff_id, "manager1");
        let rich = json!({"msgId": "m2", "senderId": "s", "msgtype": "richText",
            "content": {"richText": [{"text": "look"}, {"type": "picture", "downloadCode": "dc1"}]}});
        let Frame::Message { message, .. } = parse(&frame("CALLBACK", BOT_TOPIC, &rich)) else {
            panic!()
        };
        assert_eq!(message.text, "look");
        assert_eq!(message.media[0].download_code, "dc1");
        assert_eq!(message.conversation_id, "s");
        let other = parse(&frame(
            "CALLBACK",
            "/v1.0/card/instances/callback",
            &json!({}),
        ));
        assert!(matches!(other, Frame::Ack { ack } if ack.contains("404")));
    }
}
