//! Answers out over SMTP (lettre on tokio with rustls): one mail per answer, plain text
//! (markdown stays readable as it is), `Re: <subject>`, `In-Reply-To` and `References` that
//! continue the user's thread, a `Message-ID` under the bot's own domain, the agent's files as
//! attachments. Implicit TLS, STARTTLS (required, never a silent fall back to plain) or plain,
//! as the settings say; the bot logs in with its address and password when the server offers
//! AUTH.

use std::path::Path;
use std::time::Duration;

use lettre::message::header::ContentType;
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use super::settings::{EmailSettings, PLATFORM, Security};
use crate::platform::error::PlatformError;

/// Deadline of each SMTP command (connect, TLS, each step of the dialogue).
const SMTP_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest file attached to an answer (mail servers refuse bigger mails anyway).
const MAX_ATTACHMENT_BYTES: u64 = 25 * 1024 * 1024;

/// One mail to send.
#[derive(Debug, Clone)]
pub struct OutgoingMail<'a> {
    pub to: &'a str,
    pub subject: String,
    /// Without angle brackets.
    pub message_id: String,
    pub in_reply_to: Option<String>,
    /// Oldest first, without angle brackets.
    pub references: Vec<String>,
    pub body: &'a str,
    pub files: Vec<&'a Path>,
}

fn invalid(message: impl Into<String>) -> PlatformError {
    PlatformError::Invalid {
        platform: PLATFORM,
        message: message.into(),
    }
}

/// A content type for a file name (what mail clients need to show it; octet-stream else).
fn content_type_for(path: &Path) -> ContentType {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let mime = match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "txt" | "md" | "log" => "text/plain; charset=utf-8",
        "csv" => "text/csv; charset=utf-8",
        "json" => "application/json",
        "html" | "htm" => "text/html; charset=utf-8",
        "zip" => "application/zip",
        "mp3" => "audio/mpeg",
        "ogg" | "oga" => "audio/ogg",
        "wav" => "audio/wav",
        "mp4" => "video/mp4",
        _ => "application/octet-stream",
    };
    ContentType::parse(mime).unwrap_or(ContentType::TEXT_PLAIN)
}

/// The mail as lettre builds it.
pub(crate) async fn build(from: &str, mail: &OutgoingMail<'_>) -> Result<Message, PlatformError> {
    let from: Mailbox = from
        .parse()
        .map_err(|e| invalid(format!("EMAIL_ADDRESS {from:?} is not an address: {e}")))?;
    let to: Mailbox = mail
        .to
        .parse()
        .map_err(|e| invalid(format!("{:?} is not an email address: {e}", mail.to)))?;
    let mut builder = Message::builder()
        .from(from)
        .to(to)
        .subject(mail.subject.clone())
        .message_id(Some(format!("<{}>", mail.message_id)))
        .date_now();
    if let Some(parent) = &mail.in_reply_to {
        builder = builder.in_reply_to(format!("<{parent}>"));
    }
    if !mail.references.is_empty() {
        let refs: Vec<String> = mail.references.iter().map(|r| format!("<{r}>")).collect();
        builder = builder.references(refs.join(" "));
    }
    let text = SinglePart::plain(mail.body.to_string());
    let message = if mail.files.is_empty() {
        builder.singlepart(text)
    } else {
        let mut parts = MultiPart::mixed().singlepart(text);
        for path in &mail.files {
            let meta = tokio::fs::metadata(path)
                .await
                .map_err(|e| PlatformError::io(path, e))?;
            if meta.len() > MAX_ATTACHMENT_BYTES {
                return Err(PlatformError::TooLarge {
                    what: path.display().to_string(),
                    size: meta.len(),
                    limit: MAX_ATTACHMENT_BYTES,
                });
            }
            let bytes = tokio::fs::read(path)
                .await
                .map_err(|e| PlatformError::io(path, e))?;
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "file".into());
            parts = parts.singlepart(Attachment::new(name).body(bytes, content_type_for(path)));
        }
        builder.multipart(parts)
    };
    message.map_err(|e| invalid(format!("cannot build the mail: {e}")))
}

/// The transport for the settings (a new connection per mail: answers are rare and a pooled
/// connection would time out in between).
pub(crate) fn transport(
    s: &EmailSettings,
) -> Result<AsyncSmtpTransport<Tokio1Executor>, PlatformError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let tls = match s.smtp_security {
        Security::Plain => Tls::None,
        security => {
            let params = TlsParameters::new(s.smtp_host.clone())
                .map_err(|e| invalid(format!("TLS setup for {}: {e}", s.smtp_host)))?;
            if security == Security::Tls {
                Tls::Wrapper(params)
            } else {
                Tls::Required(params)
            }
        }
    };
    Ok(
        AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&s.smtp_host)
            .port(s.smtp_port)
            .tls(tls)
            .credentials(Credentials::new(s.address.clone(), s.password.clone()))
            .timeout(Some(SMTP_TIMEOUT))
            .build(),
    )
}

/// Sends `mail` from the bot's address.
pub(crate) async fn send(s: &EmailSettings, mail: &OutgoingMail<'_>) -> Result<(), PlatformError> {
    let message = build(&s.address, mail).await?;
    let transport = transport(s)?;
    transport.send(message).await.map_err(|e| {
        if e.is_permanent() {
            PlatformError::Api {
                platform: PLATFORM,
                status: e.status().map_or(0, u16::from),
                message: e.to_string(),
            }
        } else {
            PlatformError::Network {
                platform: PLATFORM,
                message: format!("SMTP {}:{}: {e}", s.smtp_host, s.smtp_port),
            }
        }
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn replies_carry_the_threading_headers() {
        let mail = OutgoingMail {
            to: "ann@example.test",
            subject: "Re: Plans".into(),
            message_id: "hermes-1@example.org".into(),
            in_reply_to: Some("second@example.test".into()),
            references: vec!["root@example.test".into(), "second@example.test".into()],
            body: "**four**\n\n- one",
            files: Vec::new(),
        };
        let raw =
            String::from_utf8(build("bot@example.org", &mail).await.unwrap().formatted()).unwrap();
        for want in [
            "From: bot@example.org\r\n",
            "To: ann@example.test\r\n",
            "Subject: Re: Plans\r\n",
            "Message-ID: <hermes-1@example.org>\r\n",
            "In-Reply-To: <second@example.test>\r\n",
            "References: <root@example.test> <second@example.test>\r\n",
            "Content-Type: text/plain; charset=utf-8\r\n",
            "**four**",
        ] {
            assert!(raw.contains(want), "{want:?} missing from\n{raw}");
        }
    }

    #[tokio::test]
    async fn files_become_attachments_beside_the_text() {
        let dir = tempfile::tempdir().unwrap();
        let chart = dir.path().join("chart.png");
        std::fs::write(&chart, b"\x89PNG fake").unwrap();
        let mail = OutgoingMail {
            to: "ann@example.test",
            subject: "Hermes Agent".into(),
            message_id: "hermes-2@example.org".into(),
            in_reply_to: None,
            references: Vec::new(),
            body: "Here is the chart.",
            files: vec![chart.as_path()],
        };
        let raw =
            String::from_utf8(build("bot@example.org", &mail).await.unwrap().formatted()).unwrap();
        assert!(raw.contains("Content-Type: multipart/mixed;"), "{raw}");
        assert!(raw.contains("Here is the chart."), "{raw}");
        assert!(raw.contains("Content-Type: image/png"), "{raw}");
        assert!(
            raw.contains("Content-Disposition: attachment; filename=\"chart.png\""),
            "{raw}"
        );
        assert!(!raw.contains("In-Reply-To"), "{raw}");
        let missing = OutgoingMail {
            files: vec![Path::new("/nonexistent/file.txt")],
            ..mail
        };
        assert!(build("bot@example.org", &missing).await.is_err());
    }
}
