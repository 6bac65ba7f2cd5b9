//! The stanzas the client writes, as escaped XML text: messages (with XEP-0085 chat states
//! and XEP-0308 corrections), the typing notification, presence (available, MUC joins without
//! history, subscription approval), answers to the server's `iq`s (XEP-0199 ping, XEP-0030
//! disco#info, `service-unavailable` for everything else) and our own keepalive ping.

use super::xml::escape;

pub(crate) const NS_CHATSTATES: &str = "http://jabber.org/protocol/chatstates";
pub(crate) const NS_MUC: &str = "http://jabber.org/protocol/muc";
pub(crate) const NS_MUC_USER: &str = "http://jabber.org/protocol/muc#user";
pub(crate) const NS_PING: &str = "urn:xmpp:ping";
pub(crate) const NS_DELAY: &str = "urn:xmpp:delay";
pub(crate) const NS_CORRECT: &str = "urn:xmpp:message-correct:0";
pub(crate) const NS_DISCO_INFO: &str = "http://jabber.org/protocol/disco#info";
const NS_HINTS: &str = "urn:xmpp:hints";

/// `chat` for a person, `groupchat` for a room.
pub(crate) fn kind(groupchat: bool) -> &'static str {
    if groupchat { "groupchat" } else { "chat" }
}

/// A message with a body; `<active/>` ends the typing notification; `replace` makes it a
/// correction of an earlier message (XEP-0308).
pub(crate) fn message(
    to: &str,
    groupchat: bool,
    id: &str,
    body: &str,
    replace: Option<&str>,
) -> String {
    let correction = replace
        .map(|r| format!("<replace id='{}' xmlns='{NS_CORRECT}'/>", escape(r)))
        .unwrap_or_default();
    format!(
        "<message to='{}' type='{}' id='{}'><body>{}</body><active xmlns='{NS_CHATSTATES}'/>{correction}</message>",
        escape(to),
        kind(groupchat),
        escape(id),
        escape(body)
    )
}

/// "Composing" (XEP-0085), not stored in archives.
pub(crate) fn composing(to: &str, groupchat: bool) -> String {
    format!(
        "<message to='{}' type='{}'><composing xmlns='{NS_CHATSTATES}'/><no-store xmlns='{NS_HINTS}'/></message>",
        escape(to),
        kind(groupchat)
    )
}

/// Available presence.
pub(crate) fn available() -> String {
    "<presence/>".to_string()
}

/// Joins a room as `nick`, asking for no history (old messages are not for the agent).
pub(crate) fn join(room: &str, nick: &str) -> String {
    format!(
        "<presence to='{}/{}'><x xmlns='{NS_MUC}'><history maxstanzas='0'/></x></presence>",
        escape(room),
        escape(nick)
    )
}

/// Approves a presence subscription request, so clients show the bot online.
pub(crate) fn subscribed(to: &str) -> String {
    format!("<presence to='{}' type='subscribed'/>", escape(to))
}

/// Our ping to the server (a dead connection shows by the missing answer).
pub(crate) fn ping(domain: &str, id: &str) -> String {
    format!(
        "<iq to='{}' type='get' id='{}'><ping xmlns='{NS_PING}'/></iq>",
        escape(domain),
        escape(id)
    )
}

fn to_attr(to: Option<&str>) -> String {
    to.map(|t| format!(" to='{}'", escape(t)))
        .unwrap_or_default()
}

/// An empty result for an `iq` (answers a ping).
pub(crate) fn iq_result(to: Option<&str>, id: &str) -> String {
    format!("<iq type='result' id='{}'{}/>", escape(id), to_attr(to))
}

/// What the bot is and supports (XEP-0030).
pub(crate) fn disco_info(to: Option<&str>, id: &str, corrections: bool) -> String {
    let mut features = vec![NS_DISCO_INFO, NS_CHATSTATES, NS_PING, NS_MUC];
    if corrections {
        features.push(NS_CORRECT);
    }
    let features: String = features
        .iter()
        .map(|f| format!("<feature var='{f}'/>"))
        .collect();
    format!(
        "<iq type='result' id='{}'{}><query xmlns='{NS_DISCO_INFO}'><identity category='client' type='bot' name='Hermes Agent'/>{features}</query></iq>",
        escape(id),
        to_attr(to)
    )
}

/// The error RFC 6120 asks for an `iq` the client does not handle.
pub(crate) fn iq_unsupported(to: Option<&str>, id: &str) -> String {
    format!(
        "<iq type='error' id='{}'{}><error type='cancel'><service-unavailable xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>",
        escape(id),
        to_attr(to)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_and_addresses_are_escaped() {
        assert_eq!(
            message("a@x'", false, "i1", "1 < 2 & </body>", None),
            "<message to='a@x&apos;' type='chat' id='i1'><body>1 &lt; 2 &amp; &lt;/body&gt;</body><active xmlns='http://jabber.org/protocol/chatstates'/></message>"
        );
        assert!(message("r@m", true, "i2", "x", Some("i1")).contains("type='groupchat'"));
        assert!(
            message("r@m", true, "i2", "x", Some("i1"))
                .contains("<replace id='i1' xmlns='urn:xmpp:message-correct:0'/>")
        );
        assert_eq!(
            join("r@muc.x", "Bot"),
            "<presence to='r@muc.x/Bot'><x xmlns='http://jabber.org/protocol/muc'><history maxstanzas='0'/></x></presence>"
        );
        assert!(iq_unsupported(Some("s"), "q").contains("service-unavailable"));
    }
}
