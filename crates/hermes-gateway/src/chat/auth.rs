//! Who may talk to the agent, decided before anything reaches a model, in the Python Hermes's
//! order: the platform's allow-all flag and `GATEWAY_ALLOW_ALL_USERS`, the allowlists
//! (`<PLATFORM>_ALLOWED_USERS`, `GATEWAY_ALLOWED_USERS`, `*` for anyone), whole groups allowed
//! (`TELEGRAM_GROUP_ALLOWED_CHATS`) and senders allowed in groups, then the pairing store's
//! approved users; everyone else is refused. An unknown user writing in a direct chat gets a
//! pairing code (unless `unauthorized_dm_behavior: ignore`); in a group they are ignored.
//! Webhook deliveries are authorised by their signature, not here.

use crate::pairing::PairingStore;
use crate::platform::settings::{PlatformsConfig, UnauthorizedDm};
use crate::platform::{ChatRef, ChatType, InboundMessage};

/// What to do with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Allowed,
    /// Refused: answer with a pairing code.
    Pair,
    /// Refused silently.
    Ignore,
}

fn listed(list: &[String], id: &str) -> bool {
    list.iter().any(|u| u == "*" || u == id)
}

/// The decision for `message`.
pub fn decide(
    platforms: &PlatformsConfig,
    pairing: &PairingStore,
    message: &InboundMessage,
) -> Access {
    decide_for(platforms, pairing, &message.chat, &message.user_id)
}

/// Whether `user_id` may press the gateway's buttons in `chat` (approve a command, answer a
/// question): the same rule as for writing there, so a stranger in a group cannot approve.
pub fn may_answer(
    platforms: &PlatformsConfig,
    pairing: &PairingStore,
    chat: &ChatRef,
    user_id: &str,
) -> bool {
    decide_for(platforms, pairing, chat, user_id) == Access::Allowed
}

fn decide_for(
    platforms: &PlatformsConfig,
    pairing: &PairingStore,
    chat: &ChatRef,
    user_id: &str,
) -> Access {
    // Webhook deliveries are authenticated by their signatures; Home Assistant's events are
    // the home's own, over a connection its token authenticated (the Python Hermes's rule).
    if chat.chat_type == ChatType::Webhook
        || chat.platform == "webhook"
        || chat.platform == "homeassistant"
    {
        return Access::Allowed;
    }
    let gateway = &platforms.access;
    let platform = platforms.get(&chat.platform).map(|p| &p.access);
    let user = user_id.trim();
    if gateway.allow_all || platform.is_some_and(|p| p.allow_all) {
        return Access::Allowed;
    }
    if let Some(p) = platform {
        let shared = chat.chat_type != ChatType::Direct;
        if shared && listed(&p.group_allowed_chats, &chat.chat_id) {
            return Access::Allowed;
        }
        if !user.is_empty() {
            if listed(&p.allowed_users, user) {
                return Access::Allowed;
            }
            if shared && listed(&p.group_allowed_users, user) {
                return Access::Allowed;
            }
        }
    }
    if !user.is_empty()
        && (listed(&gateway.allowed_users, user) || pairing.is_approved(&chat.platform, user))
    {
        return Access::Allowed;
    }
    if chat.chat_type != ChatType::Direct || user.is_empty() {
        return Access::Ignore;
    }
    let behaviour = platform.map_or(gateway.unauthorized_dm, |p| p.unauthorized_dm);
    match behaviour {
        UnauthorizedDm::Pair => Access::Pair,
        UnauthorizedDm::Ignore => Access::Ignore,
    }
}

/// What an unknown user is told with their code.
pub fn pairing_message(platform: &str, code: &str) -> String {
    format!(
        "Hi! I don't know you yet. Your pairing code is {code}. Ask my owner to approve it with `hermes pairing approve {platform} {code}` (it expires in an hour)."
    )
}
