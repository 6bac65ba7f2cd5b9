//! What arrives on an XMPP session, turned into what the core must see: the rooms' state
//! (our nickname in each, whether the join completed, occupants' real JIDs where the room
//! shows them), presence (join confirmations, nickname conflicts, kicks, subscription
//! requests) and messages: `chat` (and `normal`) from people, `groupchat` from joined rooms
//! only when addressed (the gateway's mention rules: `nick: ...`, the nick as a word, a
//! mention pattern, free-response rooms), never our own reflections or room history.

use std::collections::HashMap;
use std::time::SystemTime;

use super::settings::{Jid, PLATFORM, XmppSettings};
use super::stanzas::{self, NS_DELAY, NS_MUC_USER};
use super::xml::Element;
use crate::platform::gate::{self, GateInput};
use crate::platform::types::{ChatRef, ChatType, InboundMessage};

/// Occupants remembered per room (their real JIDs); beyond, the oldest are forgotten.
const MAX_OCCUPANTS: usize = 2000;
/// Alternative nicknames tried after conflicts before giving up on a room.
const MAX_NICK_ATTEMPTS: u32 = 5;

#[derive(Debug, Clone)]
struct Room {
    nick: String,
    joined: bool,
    attempts: u32,
    /// Nick → real bare JID (rooms that show them).
    occupants: HashMap<String, String>,
}

/// The configured rooms and where each stands.
#[derive(Debug)]
pub(crate) struct Rooms {
    nick: String,
    rooms: HashMap<String, Room>,
}

/// What a presence asks the session to do.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PresenceAction {
    None,
    /// Write this stanza (a rejoin, a subscription approval).
    Send(String),
    /// Joined this room.
    Joined(String),
    /// Record a problem.
    Problem(String),
}

impl Rooms {
    pub fn new(rooms: &[String], nick: &str) -> Rooms {
        let mut r = Rooms {
            nick: nick.to_string(),
            rooms: HashMap::new(),
        };
        for room in rooms {
            r.rooms.insert(room.clone(), r.fresh());
        }
        r
    }

    fn fresh(&self) -> Room {
        Room {
            nick: self.nick.clone(),
            joined: false,
            attempts: 0,
            occupants: HashMap::new(),
        }
    }

    /// Before a new connection: nothing is joined.
    pub fn reset(&mut self) {
        let fresh = self.fresh();
        for room in self.rooms.values_mut() {
            *room = fresh.clone();
        }
    }

    /// The join stanzas of every room.
    pub fn joins(&self) -> Vec<String> {
        let mut rooms: Vec<_> = self.rooms.iter().collect();
        rooms.sort_by(|a, b| a.0.cmp(b.0));
        rooms
            .into_iter()
            .map(|(jid, room)| stanzas::join(jid, &room.nick))
            .collect()
    }

    pub fn is_room(&self, bare: &str) -> bool {
        self.rooms.contains_key(bare)
    }

    pub fn on_presence(&mut self, el: &Element) -> PresenceAction {
        let Some(from) = el.attr("from").and_then(Jid::parse) else {
            return PresenceAction::None;
        };
        let bare = from.bare();
        let kind = el.attr("type").unwrap_or("available");
        let Some(room) = self.rooms.get_mut(&bare) else {
            return if kind == "subscribe" {
                PresenceAction::Send(stanzas::subscribed(&bare))
            } else {
                PresenceAction::None
            };
        };
        let x = el.child("x", Some(NS_MUC_USER));
        let codes: Vec<&str> = x
            .map(|x| {
                x.children
                    .iter()
                    .filter(|c| c.local_name() == "status")
                    .filter_map(|c| c.attr("code"))
                    .collect()
            })
            .unwrap_or_default();
        let own = codes.contains(&"110") || from.resource.as_deref() == Some(room.nick.as_str());
        match kind {
            "error" => {
                let condition = el
                    .child("error", None)
                    .and_then(|e| e.children.first())
                    .map_or("error", |c| c.local_name())
                    .to_string();
                if condition == "conflict" && room.attempts < MAX_NICK_ATTEMPTS {
                    room.attempts += 1;
                    room.nick = format!("{}{}", self.nick, "_".repeat(room.attempts as usize));
                    return PresenceAction::Send(stanzas::join(&bare, &room.nick));
                }
                PresenceAction::Problem(format!("cannot join {bare}: {condition}"))
            }
            "unavailable" if own && room.joined => {
                // Kicked, or the room went away: join again (a ban answers with an error).
                room.joined = false;
                room.occupants.clear();
                PresenceAction::Send(stanzas::join(&bare, &room.nick))
            }
            "unavailable" => {
                if let Some(nick) = &from.resource {
                    room.occupants.remove(nick);
                }
                PresenceAction::None
            }
            "available" => {
                let Some(nick) = from.resource.clone() else {
                    return PresenceAction::None;
                };
                if let Some(real) = x
                    .and_then(|x| x.child("item", None))
                    .and_then(|i| i.attr("jid"))
                    .and_then(Jid::parse)
                {
                    if room.occupants.len() >= MAX_OCCUPANTS {
                        room.occupants.clear();
                    }
                    room.occupants.insert(nick.clone(), real.bare());
                }
                if codes.contains(&"110") && !room.joined {
                    // The server may have changed our nick (status 210): take its word.
                    room.nick = nick;
                    room.joined = true;
                    return PresenceAction::Joined(bare);
                }
                PresenceAction::None
            }
            _ => PresenceAction::None,
        }
    }

    /// A `<message>` as what the core must see, if it is for the bot.
    pub fn convert(
        &self,
        el: &Element,
        settings: &XmppSettings,
        next_id: impl FnOnce() -> String,
    ) -> Option<InboundMessage> {
        let kind = el.attr("type").unwrap_or("normal");
        let from_text = el.attr("from")?;
        let from = Jid::parse(from_text)?;
        let body = el.child("body", None)?.text.trim();
        if body.is_empty() {
            return None;
        }
        let bare = from.bare();
        let (chat, user_id, user_name, text, mentioned) = match kind {
            "groupchat" => {
                let room = self.rooms.get(&bare)?;
                let nick = from.resource.as_deref()?;
                // Before our join completes everything is history; our own lines come back
                // reflected; delayed lines are history too.
                if !room.joined || nick == room.nick || el.child("delay", Some(NS_DELAY)).is_some()
                {
                    return None;
                }
                let addressed = strip_address(body, &room.nick).map(str::to_string);
                let mentioned = addressed.is_some()
                    || has_word(body, &room.nick)
                    || gate::matches_patterns(&settings.mentions, body);
                let admitted = gate::admits(
                    &settings.mentions,
                    &GateInput {
                        chat_ids: vec![bare.as_str()],
                        direct: false,
                        mentioned,
                        replied_to_bot: false,
                        in_bot_thread: false,
                    },
                );
                if !admitted {
                    return None;
                }
                let user = room
                    .occupants
                    .get(nick)
                    .cloned()
                    .unwrap_or_else(|| format!("{bare}/{nick}"));
                (
                    ChatRef::new(PLATFORM, ChatType::Group, bare.clone()),
                    user,
                    nick.to_string(),
                    addressed.unwrap_or_else(|| body.to_string()),
                    mentioned,
                )
            }
            "chat" | "normal" => {
                if bare == settings.bare_jid() {
                    return None;
                }
                match self.rooms.get(&bare) {
                    // A private message from a room occupant: answer that occupant.
                    Some(room) => {
                        let nick = from.resource.as_deref()?;
                        let occupant = format!("{bare}/{nick}");
                        let user = room
                            .occupants
                            .get(nick)
                            .cloned()
                            .unwrap_or_else(|| occupant.clone());
                        (
                            ChatRef::new(PLATFORM, ChatType::Direct, occupant),
                            user,
                            nick.to_string(),
                            body.to_string(),
                            true,
                        )
                    }
                    None => (
                        ChatRef::new(PLATFORM, ChatType::Direct, bare.clone()),
                        bare.clone(),
                        from.local.clone().unwrap_or_else(|| bare.clone()),
                        body.to_string(),
                        true,
                    ),
                }
            }
            _ => return None,
        };
        let chat_name = match chat.chat_type {
            ChatType::Group => bare.clone(),
            _ => user_name.clone(),
        };
        Some(InboundMessage {
            chat,
            chat_name: Some(chat_name),
            message_id: el
                .attr("id")
                .filter(|i| !i.is_empty() && i.len() <= 200)
                .map_or_else(next_id, str::to_string),
            user_id,
            user_name: Some(user_name),
            text: text.trim().to_string(),
            attachments: Vec::new(),
            reply_to: None,
            mentions_bot: mentioned,
            replies_to_bot: false,
            from_bot: false,
            deliver_to: None,
            skills: Vec::new(),
            received_at: SystemTime::now(),
        })
    }
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// Whether `word` is in `text` as a whole word (case-insensitive).
pub(crate) fn has_word(text: &str, word: &str) -> bool {
    if word.is_empty() {
        return false;
    }
    let lower = text.to_lowercase();
    let word = word.to_lowercase();
    lower.match_indices(&word).any(|(i, _)| {
        !lower[..i].chars().next_back().is_some_and(is_word_char)
            && !lower[i + word.len()..]
                .chars()
                .next()
                .is_some_and(is_word_char)
    })
}

/// `text` without a leading `nick:`, `nick,` or `@nick` address; `None` when not addressed.
pub(crate) fn strip_address<'a>(text: &'a str, nick: &str) -> Option<&'a str> {
    let text = text.strip_prefix('@').unwrap_or(text);
    let head = text.get(..nick.len())?;
    if head.to_lowercase() != nick.to_lowercase() {
        return None;
    }
    let rest = &text[nick.len()..];
    let rest = rest
        .strip_prefix(':')
        .or_else(|| rest.strip_prefix(','))
        .or_else(|| rest.strip_prefix(' '))?;
    Some(rest.trim())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::settings::PlatformsConfig;
    use crate::platform::xmpp::xml::{Event, XmlReader};
    use hermes_config::{Config, Environment};
    use std::path::Path;

    fn settings() -> XmppSettings {
        let env = Environment::isolated([
            ("XMPP_JID", "bot@x.org"),
            ("XMPP_PASSWORD", "p"),
            ("XMPP_ROOMS", "ops@muc.x.org"),
            ("XMPP_NICK", "hermes"),
        ]);
        let config = Config::from_yaml(Path::new("/h/config.yaml"), "", &env).unwrap();
        let p = PlatformsConfig::load(&config, &env);
        XmppSettings::from_platform(p.get(PLATFORM).unwrap(), &env).unwrap()
    }

    fn el(xml: &str) -> Element {
        let mut r = XmlReader::new();
        r.feed(format!("<stream:stream>{xml}").as_bytes()).unwrap();
        r.next().unwrap();
        match r.next().unwrap() {
            Some(Event::Stanza(e)) => e,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn direct_messages_and_rooms() {
        let s = settings();
        let mut rooms = Rooms::new(&s.rooms, &s.nick);
        let id = || "gen".to_string();
        let dm = rooms
            .convert(
                &el("<message from='Ann@X.org/phone' type='chat' id='m1'><body> hi </body></message>"),
                &s,
                id,
            )
            .unwrap();
        assert_eq!(
            dm.chat,
            ChatRef::new(PLATFORM, ChatType::Direct, "ann@x.org")
        );
        assert_eq!(dm.user_id, "ann@x.org");
        assert_eq!(dm.text, "hi");
        assert_eq!(dm.message_id, "m1");
        // Chat states alone, errors, our own account: nothing.
        for ignored in [
            "<message from='ann@x.org/p' type='chat'><composing xmlns='http://jabber.org/protocol/chatstates'/></message>",
            "<message from='ann@x.org/p' type='error'><body>x</body></message>",
            "<message from='bot@x.org/other' type='chat'><body>x</body></message>",
        ] {
            assert!(rooms.convert(&el(ignored), &s, id).is_none(), "{ignored}");
        }
        let addressed = "<message from='ops@muc.x.org/ann' type='groupchat'><body>hermes: what is 2+2?</body></message>";
        // Not joined yet: history.
        assert!(rooms.convert(&el(addressed), &s, id).is_none());
        let joined = rooms.on_presence(&el(
            "<presence from='ops@muc.x.org/hermes'><x xmlns='http://jabber.org/protocol/muc#user'><item jid='bot@x.org/r' role='participant'/><status code='110'/></x></presence>",
        ));
        assert_eq!(joined, PresenceAction::Joined("ops@muc.x.org".into()));
        rooms.on_presence(&el(
            "<presence from='ops@muc.x.org/ann'><x xmlns='http://jabber.org/protocol/muc#user'><item jid='Ann@x.org/phone'/></x></presence>",
        ));
        let m = rooms.convert(&el(addressed), &s, id).unwrap();
        assert_eq!(
            m.chat,
            ChatRef::new(PLATFORM, ChatType::Group, "ops@muc.x.org")
        );
        assert_eq!(m.user_id, "ann@x.org");
        assert_eq!(m.text, "what is 2+2?");
        assert!(m.mentions_bot);
        for ignored in [
            "<message from='ops@muc.x.org/ann' type='groupchat'><body>just chatting</body></message>",
            "<message from='ops@muc.x.org/hermes' type='groupchat'><body>hermes: echo</body></message>",
            "<message from='ops@muc.x.org/ann' type='groupchat'><body>hermes: old</body><delay xmlns='urn:xmpp:delay' stamp='2020-01-01T00:00:00Z'/></message>",
            "<message from='ops@muc.x.org' type='groupchat'><body>hermes: subject</body></message>",
            "<message from='other@muc.x.org/ann' type='groupchat'><body>hermes: hi</body></message>",
        ] {
            assert!(rooms.convert(&el(ignored), &s, id).is_none(), "{ignored}");
        }
        let word = rooms
            .convert(
                &el("<message from='ops@muc.x.org/bob' type='groupchat'><body>ask Hermes please</body></message>"),
                &s,
                id,
            )
            .unwrap();
        assert_eq!(word.user_id, "ops@muc.x.org/bob");
        assert_eq!(word.message_id, "gen");
        // A private message through the room answers the occupant.
        let pm = rooms
            .convert(
                &el("<message from='ops@muc.x.org/ann' type='chat'><body>psst</body></message>"),
                &s,
                id,
            )
            .unwrap();
        assert_eq!(pm.chat.chat_id, "ops@muc.x.org/ann");
        assert_eq!(pm.user_id, "ann@x.org");
    }

    #[test]
    fn presence_conflicts_kicks_and_subscriptions() {
        let s = settings();
        let mut rooms = Rooms::new(&s.rooms, &s.nick);
        assert_eq!(
            rooms.on_presence(&el(
                "<presence from='ops@muc.x.org/hermes' type='error'><error type='cancel'><conflict xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></presence>"
            )),
            PresenceAction::Send(stanzas::join("ops@muc.x.org", "hermes_"))
        );
        assert_eq!(
            rooms.on_presence(&el(
                "<presence from='ops@muc.x.org/hermes_'><x xmlns='http://jabber.org/protocol/muc#user'><status code='110'/></x></presence>"
            )),
            PresenceAction::Joined("ops@muc.x.org".into())
        );
        assert_eq!(
            rooms.on_presence(&el(
                "<presence from='ops@muc.x.org/hermes_' type='unavailable'><x xmlns='http://jabber.org/protocol/muc#user'><status code='307'/><status code='110'/></x></presence>"
            )),
            PresenceAction::Send(stanzas::join("ops@muc.x.org", "hermes_"))
        );
        assert_eq!(
            rooms.on_presence(&el("<presence from='eve@x.org/p' type='subscribe'/>")),
            PresenceAction::Send(stanzas::subscribed("eve@x.org"))
        );
        assert!(matches!(
            rooms.on_presence(&el(
                "<presence from='ops@muc.x.org/hermes_' type='error'><error type='auth'><forbidden xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></presence>"
            )),
            PresenceAction::Problem(_)
        ));
        rooms.reset();
        assert_eq!(
            rooms.joins(),
            vec![stanzas::join("ops@muc.x.org", "hermes")]
        );
    }

    #[test]
    fn addresses_and_words() {
        assert_eq!(strip_address("Hermes: hi", "hermes"), Some("hi"));
        assert_eq!(strip_address("@hermes hi", "hermes"), Some("hi"));
        assert_eq!(strip_address("hermesbot: hi", "hermes"), None);
        assert_eq!(strip_address("hé", "hermes"), None);
        assert!(has_word("ask hermes.", "Hermes"));
        assert!(!has_word("ask hermes_x", "hermes"));
        assert!(!has_word("x", ""));
    }
}
