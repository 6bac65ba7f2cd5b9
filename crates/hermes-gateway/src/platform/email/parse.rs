//! One raw mail as the gateway sees it ([`parse`]): the sender, the subject, the threading
//! headers and the thread it belongs to (the root of `References`, else `In-Reply-To`, else
//! its own `Message-ID`), the text (the `text/plain` body, else the HTML body converted to
//! markdown by the web extractor), the attachments; and the filters the Python plugin applies
//! before anything reaches the agent: automated senders ([`is_automated`]) and unauthenticated
//! `From:` domains ([`sender_authenticated`], read from the receiving server's
//! `Authentication-Results`).

use std::sync::Arc;

use mail_parser::{HeaderValue, MessageParser, MimeHeaders};

/// Parts of an address that mark a machine, not a person (the plugin's `_NOREPLY_PATTERNS`).
const NOREPLY_PATTERNS: &[&str] = &[
    "noreply",
    "no-reply",
    "no_reply",
    "donotreply",
    "do-not-reply",
    "mailer-daemon",
    "postmaster",
    "bounce",
    "notifications@",
    "automated@",
    "auto-confirm",
    "auto-reply",
    "automailer",
];

/// A file that came with a mail, with its bytes (they are in the mail already).
#[derive(Debug, Clone)]
pub struct MailAttachment {
    pub file_name: Option<String>,
    pub mime: Option<String>,
    pub bytes: Arc<[u8]>,
}

/// What the gateway needs of one mail.
#[derive(Debug, Clone)]
pub struct ParsedMail {
    /// The sender's address, lower-cased.
    pub from: String,
    pub from_name: Option<String>,
    pub subject: String,
    /// Without angle brackets; `None` when the mail has none.
    pub message_id: Option<String>,
    pub in_reply_to: Option<String>,
    /// Oldest first.
    pub references: Vec<String>,
    pub text: String,
    /// The body was HTML only (and `text` is its conversion).
    pub from_html: bool,
    pub attachments: Vec<MailAttachment>,
    /// `Auto-Submitted`, `Precedence`, `X-Auto-Response-Suppress`, `List-Unsubscribe`.
    pub automated_headers: bool,
    /// The `Authentication-Results` headers, top (the receiving server's) first.
    pub auth_results: Vec<String>,
}

impl ParsedMail {
    /// The thread this mail belongs to: the first `References` entry (the conversation's
    /// root), else `In-Reply-To`, else its own id.
    pub fn thread_root(&self) -> Option<&str> {
        self.references
            .first()
            .or(self.in_reply_to.as_ref())
            .or(self.message_id.as_ref())
            .map(String::as_str)
    }
}

fn text_list(value: &HeaderValue<'_>) -> Vec<String> {
    match value {
        HeaderValue::Text(t) => vec![t.to_string()],
        HeaderValue::TextList(list) => list.iter().map(|t| t.to_string()).collect(),
        _ => Vec::new(),
    }
    .into_iter()
    .map(|id| id.trim().trim_matches(['<', '>']).to_string())
    .filter(|id| !id.is_empty())
    .collect()
}

/// Parses a raw mail (RFC 5322 with MIME); `None` when it is not one.
pub fn parse(raw: &[u8], skip_attachments: bool) -> Option<ParsedMail> {
    let message = MessageParser::default().parse(raw)?;
    let sender = message.from().and_then(|a| a.first());
    let from = sender
        .and_then(|a| a.address())
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let from_name = sender
        .and_then(|a| a.name())
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty());
    let plain = message
        .text_bodies()
        .find(|p| !p.is_text_html())
        .and_then(|p| p.text_contents().map(str::to_string));
    let (text, from_html) = match plain {
        Some(text) => (text, false),
        None => match message.html_bodies().next().and_then(|p| p.text_contents()) {
            Some(html) => (html_to_text(html), true),
            None => (String::new(), false),
        },
    };
    let attachments = if skip_attachments {
        Vec::new()
    } else {
        message
            .attachments()
            .filter(|p| !p.contents().is_empty())
            .map(|p| MailAttachment {
                file_name: p.attachment_name().map(str::to_string),
                mime: p.content_type().map(|c| match c.subtype() {
                    Some(sub) => format!("{}/{sub}", c.ctype()),
                    None => c.ctype().to_string(),
                }),
                bytes: Arc::from(p.contents()),
            })
            .collect()
    };
    let header = |name: &str| message.header_raw(name).map(|v| v.trim().to_string());
    let automated_headers = header("Auto-Submitted").is_some_and(|v| !v.eq_ignore_ascii_case("no"))
        || header("Precedence")
            .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "bulk" | "list" | "junk"))
        || header("X-Auto-Response-Suppress").is_some_and(|v| !v.is_empty())
        || header("List-Unsubscribe").is_some_and(|v| !v.is_empty());
    let auth_results = message
        .headers()
        .iter()
        .filter(|h| h.name().eq_ignore_ascii_case("Authentication-Results"))
        .filter_map(|h| {
            let start = h.offset_start() as usize;
            let end = h.offset_end() as usize;
            raw.get(start..end).map(|b| {
                String::from_utf8_lossy(b)
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            })
        })
        .collect();
    Some(ParsedMail {
        from,
        from_name,
        subject: message.subject().unwrap_or_default().trim().to_string(),
        message_id: message
            .message_id()
            .map(|id| id.trim().trim_matches(['<', '>']).to_string())
            .filter(|id| !id.is_empty()),
        in_reply_to: text_list(message.in_reply_to()).into_iter().next_back(),
        references: text_list(message.references()),
        text: text.trim().to_string(),
        from_html,
        attachments,
        automated_headers,
        auth_results,
    })
}

/// An HTML body as readable text (markdown), through the web extractor's converter.
fn html_to_text(html: &str) -> String {
    let (_title, text) = hermes_web::extract::html::to_markdown(html, "https://mail.invalid/");
    text
}

/// Whether the mail comes from a machine: an address like `noreply@`, `mailer-daemon@`, or
/// headers that mark automatic or bulk mail. Such mail is never answered (no mail loops).
pub fn is_automated(mail: &ParsedMail) -> bool {
    mail.automated_headers || NOREPLY_PATTERNS.iter().any(|p| mail.from.contains(p))
}

fn domain_of(address: &str) -> &str {
    address.rsplit_once('@').map_or("", |(_, d)| d)
}

/// Equal, or one a subdomain of the other (DMARC's relaxed alignment).
fn aligned(a: &str, b: &str) -> bool {
    let a = a.trim().trim_end_matches('.').to_ascii_lowercase();
    let b = b.trim().trim_end_matches('.').to_ascii_lowercase();
    !a.is_empty()
        && !b.is_empty()
        && (a == b || a.ends_with(&format!(".{b}")) || b.ends_with(&format!(".{a}")))
}

/// `key=value` tokens of an `Authentication-Results` header, keys lower-cased.
fn tokens(header: &str) -> Vec<(String, String)> {
    header
        .split([';', ' ', '\t'])
        .filter_map(|t| t.split_once('='))
        .map(|(k, v)| {
            (
                k.trim().to_ascii_lowercase(),
                v.trim().trim_matches('"').to_ascii_lowercase(),
            )
        })
        .collect()
}

/// Why a mail's `From:` does not count as authenticated (logged when the mail is dropped).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unauthenticated {
    #[error("no From domain")]
    NoFromDomain,
    #[error("no Authentication-Results header from the receiving server")]
    NoResults,
    /// The results record no aligned pass; `results` is the header value, shortened.
    #[error("authentication failed ({results})")]
    Failed { results: String },
}

/// Whether the receiving server authenticated the `From:` domain (the plugin's
/// `_verify_sender_authentication`): the topmost `Authentication-Results` (or the first from
/// `authserv_id`) records `dmarc=pass`, or `spf=pass` for an aligned `smtp.mailfrom`, or
/// `dkim=pass` for an aligned `header.d`. `Err` says why not. `From:` alone is forgeable, so
/// an allowlist keyed on it needs this.
pub fn sender_authenticated(
    mail: &ParsedMail,
    authserv_id: Option<&str>,
) -> Result<(), Unauthenticated> {
    let from_domain = domain_of(&mail.from);
    if from_domain.is_empty() {
        return Err(Unauthenticated::NoFromDomain);
    }
    let value = mail
        .auth_results
        .iter()
        .map(|h| {
            h.split_once(':')
                .map_or(h.as_str(), |(_, v)| v)
                .trim()
                .to_string()
        })
        .find(|v| {
            authserv_id.is_none_or(|id| {
                let serv = v.split(';').next().unwrap_or_default().trim();
                aligned(serv, id)
            })
        })
        .ok_or(Unauthenticated::NoResults)?;
    let tokens = tokens(&value);
    let get = |key: &str| {
        tokens
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    if get("dmarc") == Some("pass") {
        return Ok(());
    }
    if get("spf") == Some("pass") {
        let spf = get("smtp.mailfrom")
            .or(get("smtp.from"))
            .or(get("envelope-from"))
            .unwrap_or_default();
        let spf = if spf.contains('@') {
            domain_of(spf)
        } else {
            spf
        };
        if aligned(spf, from_domain) {
            return Ok(());
        }
    }
    if get("dkim") == Some("pass") {
        let d = get("header.d")
            .map(str::to_string)
            .or_else(|| get("header.from").map(|f| domain_of(f).to_string()))
            .unwrap_or_default();
        if aligned(&d, from_domain) {
            return Ok(());
        }
    }
    Err(Unauthenticated::Failed {
        results: value.chars().take(120).collect(),
    })
}

/// `Re: <subject>` (the subject as it is when it already starts with `Re:`).
pub fn reply_subject(subject: &str) -> String {
    let subject = subject.trim();
    if subject.is_empty() {
        "Re: Hermes Agent".to_string()
    } else if subject
        .get(..3)
        .is_some_and(|p| p.eq_ignore_ascii_case("re:"))
    {
        subject.to_string()
    } else {
        format!("Re: {subject}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mail(raw: &str) -> ParsedMail {
        parse(raw.replace('\n', "\r\n").as_bytes(), false).expect("a mail")
    }

    #[test]
    fn headers_and_threads() {
        let first = mail(
            "From: \"Ann Example\" <Ann@Example.TEST>\nTo: bot@localhost\nSubject: =?utf-8?q?Caf=C3=A9?= plans\nMessage-ID: <root@example.test>\n\nhello there\n",
        );
        assert_eq!(first.from, "ann@example.test");
        assert_eq!(first.from_name.as_deref(), Some("Ann Example"));
        assert_eq!(first.subject, "Café plans");
        assert_eq!(first.message_id.as_deref(), Some("root@example.test"));
        assert_eq!(first.thread_root(), Some("root@example.test"));
        assert_eq!(first.text, "hello there");
        assert!(!first.from_html && !is_automated(&first));

        let reply = mail(
            "From: ann@example.test\nSubject: Re: Café plans\nMessage-ID: <third@example.test>\nIn-Reply-To: <second@localhost>\nReferences: <root@example.test>\n <second@localhost>\n\nand more\n",
        );
        assert_eq!(reply.in_reply_to.as_deref(), Some("second@localhost"));
        assert_eq!(
            reply.references,
            vec!["root@example.test", "second@localhost"]
        );
        assert_eq!(reply.thread_root(), Some("root@example.test"));

        let only_reply_to =
            mail("From: ann@example.test\nMessage-ID: <x@y>\nIn-Reply-To: <parent@y>\n\nhi\n");
        assert_eq!(only_reply_to.thread_root(), Some("parent@y"));
        assert_eq!(reply_subject("Re: Café plans"), "Re: Café plans");
        assert_eq!(reply_subject("RE: x"), "RE: x");
        assert_eq!(reply_subject("Plans"), "Re: Plans");
        assert_eq!(reply_subject(""), "Re: Hermes Agent");
    }

    #[test]
    fn html_only_mail_becomes_text_and_attachments_are_kept() {
        let html = mail(
            "From: ann@example.test\nSubject: html\nContent-Type: text/html; charset=utf-8\n\n<html><body><p>Hello <b>world</b></p><p>second&nbsp;line</p></body></html>\n",
        );
        assert!(html.from_html);
        assert!(html.text.contains("Hello **world**"), "{}", html.text);
        assert!(html.text.contains("second"), "{}", html.text);
        assert!(!html.text.contains("<p>"), "{}", html.text);

        let with_file = mail(
            "From: ann@example.test\nSubject: file\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nsee attached\n--b\nContent-Type: text/csv; name=data.csv\nContent-Disposition: attachment; filename=data.csv\nContent-Transfer-Encoding: base64\n\nYSxiCjEsMgo=\n--b--\n",
        );
        assert_eq!(with_file.text, "see attached");
        assert_eq!(with_file.attachments.len(), 1);
        let a = &with_file.attachments[0];
        assert_eq!(a.file_name.as_deref(), Some("data.csv"));
        assert_eq!(a.mime.as_deref(), Some("text/csv"));
        assert_eq!(&*a.bytes, b"a,b\n1,2\n");
    }

    #[test]
    fn automated_senders_are_recognised() {
        for raw in [
            "From: noreply@shop.test\nSubject: x\n\nhi\n",
            "From: MAILER-DAEMON@mx.test\nSubject: x\n\nhi\n",
            "From: ann@example.test\nAuto-Submitted: auto-replied\nSubject: x\n\nhi\n",
            "From: ann@example.test\nPrecedence: bulk\nSubject: x\n\nhi\n",
            "From: list@example.test\nList-Unsubscribe: <mailto:u@x>\nSubject: x\n\nhi\n",
        ] {
            assert!(is_automated(&mail(raw)), "{raw}");
        }
        assert!(!is_automated(&mail(
            "From: ann@example.test\nAuto-Submitted: no\nPrecedence: first-class\n\nhi\n"
        )));
    }

    #[test]
    fn sender_authentication_reads_the_receiving_servers_verdict() {
        let m = |results: &str| {
            mail(&format!(
                "{results}From: ann@example.test\nSubject: x\n\nhi\n"
            ))
        };
        assert_eq!(
            sender_authenticated(&m(""), None),
            Err(Unauthenticated::NoResults)
        );
        let dmarc = m("Authentication-Results: mx.local; dmarc=pass header.from=example.test\n");
        assert_eq!(sender_authenticated(&dmarc, None), Ok(()));
        assert_eq!(sender_authenticated(&dmarc, Some("mx.local")), Ok(()));
        assert_eq!(
            sender_authenticated(&dmarc, Some("other.host")),
            Err(Unauthenticated::NoResults)
        );
        let spf = m(
            "Authentication-Results: mx.local;\n spf=pass smtp.mailfrom=bounce@mail.example.test\n",
        );
        assert_eq!(sender_authenticated(&spf, None), Ok(()));
        let dkim_foreign = m("Authentication-Results: mx.local; dkim=pass header.d=evil.test\n");
        assert!(matches!(
            sender_authenticated(&dkim_foreign, None),
            Err(Unauthenticated::Failed { .. })
        ));
        // Only the top header (the receiving server's) counts; a forged one below is ignored.
        let forged = m(
            "Authentication-Results: mx.local; spf=fail smtp.mailfrom=evil.test\nAuthentication-Results: mx.local; dmarc=pass\n",
        );
        assert!(sender_authenticated(&forged, None).is_err());
    }
}
