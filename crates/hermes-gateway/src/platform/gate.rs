//! Which shared-chat messages are for the bot (the Python Hermes's mention rules, applied by
//! every adapter the same way): ignored and allowed channel lists, free-response channels,
//! `require_mention` with mentions, replies to the bot and threads the bot takes part in; and
//! [`RecentSet`], the bounded memory of the bot's messages and threads those rules need.

use std::collections::{HashSet, VecDeque};

use crate::platform::settings::{AllowBots, MentionSettings};

/// What the adapter knows about one message in a shared chat.
#[derive(Debug, Clone, Default)]
pub(crate) struct GateInput<'a> {
    /// The chat's ids: the channel itself and, in a thread, its parent channel.
    pub chat_ids: Vec<&'a str>,
    pub direct: bool,
    pub mentioned: bool,
    pub replied_to_bot: bool,
    /// The message is in a thread the bot started or answered in.
    pub in_bot_thread: bool,
}

fn listed(set: &std::collections::BTreeSet<String>, ids: &[&str]) -> bool {
    set.contains("*") || ids.iter().any(|id| set.contains(*id))
}

/// Whether the message goes to the core.
pub(crate) fn admits(settings: &MentionSettings, input: &GateInput<'_>) -> bool {
    if input.direct {
        return true;
    }
    if listed(&settings.ignored_channels, &input.chat_ids) {
        return false;
    }
    if !settings.allowed_channels.is_empty() && !listed(&settings.allowed_channels, &input.chat_ids)
    {
        return false;
    }
    if listed(&settings.free_response_channels, &input.chat_ids) || !settings.require_mention {
        return true;
    }
    input.mentioned
        || input.replied_to_bot
        || (input.in_bot_thread && !settings.thread_require_mention)
}

/// Whether a message's text matches a wake-word pattern.
pub(crate) fn matches_patterns(settings: &MentionSettings, text: &str) -> bool {
    settings.mention_patterns.iter().any(|re| re.is_match(text))
}

/// Whether another bot's message is admitted (`allow_bots`).
pub(crate) fn admits_bot(allow: AllowBots, mentioned: bool) -> bool {
    match allow {
        AllowBots::None => false,
        AllowBots::Mentions => mentioned,
        AllowBots::All => true,
    }
}

/// A set that remembers the most recent `capacity` entries (oldest forgotten first).
#[derive(Debug)]
pub(crate) struct RecentSet {
    capacity: usize,
    order: VecDeque<String>,
    items: HashSet<String>,
}

impl RecentSet {
    pub fn new(capacity: usize) -> RecentSet {
        RecentSet {
            capacity: capacity.max(1),
            order: VecDeque::new(),
            items: HashSet::new(),
        }
    }

    /// Adds `item`; returns false when it was already there.
    pub fn insert(&mut self, item: &str) -> bool {
        if self.items.contains(item) {
            return false;
        }
        if self.order.len() >= self.capacity
            && let Some(old) = self.order.pop_front()
        {
            self.items.remove(&old);
        }
        self.order.push_back(item.to_string());
        self.items.insert(item.to_string());
        true
    }

    pub fn contains(&self, item: &str) -> bool {
        self.items.contains(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(require: bool) -> MentionSettings {
        MentionSettings {
            require_mention: require,
            ..MentionSettings::default()
        }
    }

    #[test]
    fn mention_rules() {
        let s = settings(true);
        let base = GateInput {
            chat_ids: vec!["C1"],
            ..GateInput::default()
        };
        assert!(!admits(&s, &base));
        assert!(admits(
            &s,
            &GateInput {
                mentioned: true,
                ..base.clone()
            }
        ));
        assert!(admits(
            &s,
            &GateInput {
                replied_to_bot: true,
                ..base.clone()
            }
        ));
        assert!(admits(
            &s,
            &GateInput {
                in_bot_thread: true,
                ..base.clone()
            }
        ));
        assert!(admits(
            &s,
            &GateInput {
                direct: true,
                ..base.clone()
            }
        ));
        let strict = MentionSettings {
            thread_require_mention: true,
            ..settings(true)
        };
        assert!(!admits(
            &strict,
            &GateInput {
                in_bot_thread: true,
                ..base.clone()
            }
        ));
        assert!(admits(&settings(false), &base));
    }

    #[test]
    fn channel_lists() {
        let mut s = settings(true);
        s.free_response_channels.insert("C1".into());
        let free = GateInput {
            chat_ids: vec!["T9", "C1"],
            ..GateInput::default()
        };
        assert!(admits(&s, &free));
        s.ignored_channels.insert("C1".into());
        assert!(!admits(
            &s,
            &GateInput {
                mentioned: true,
                ..free.clone()
            }
        ));
        let mut only = settings(false);
        only.allowed_channels.insert("C2".into());
        assert!(!admits(&only, &free));
        assert!(admits(
            &only,
            &GateInput {
                chat_ids: vec!["C2"],
                ..free.clone()
            }
        ));
        // DMs are never filtered by channel lists.
        assert!(admits(
            &only,
            &GateInput {
                direct: true,
                ..free
            }
        ));
    }

    #[test]
    fn recent_set_forgets_the_oldest() {
        let mut r = RecentSet::new(2);
        assert!(r.insert("a"));
        assert!(!r.insert("a"));
        r.insert("b");
        r.insert("c");
        assert!(!r.contains("a"));
        assert!(r.contains("b") && r.contains("c"));
    }

    #[test]
    fn bots() {
        assert!(!admits_bot(AllowBots::None, true));
        assert!(admits_bot(AllowBots::Mentions, true));
        assert!(!admits_bot(AllowBots::Mentions, false));
        assert!(admits_bot(AllowBots::All, false));
    }
}
