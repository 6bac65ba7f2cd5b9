//! [`Nudges`]: one session's counters towards its next review, kept the Python Hermes's way.
//! A user turn counts towards the memory review when it starts (so the review it triggers is
//! owed even if the turn itself used `memory`); every model call of a turn counts as a tool
//! iteration towards the skill review, and a `skill_manage` call starts that count again
//! (only that tool: `skill_view` does not, as in the Python Hermes), as a `memory` call does
//! for the memory count. A session continued from a stored conversation
//! counts the user turns already in it.

use hermes_protocol::{Message, Role};

use super::ReviewSettings;

/// Which reviews a turn asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Due {
    pub memory: bool,
    pub skills: bool,
}

impl Due {
    pub fn any(self) -> bool {
        self.memory || self.skills
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Nudges {
    user_turns: u32,
    turns_since_memory: u32,
    iters_since_skill: u32,
}

impl Nudges {
    /// A turn starts after `history`; `memory_offered`: the session has the `memory` tool and a
    /// memory store. Whether a memory review is due after this turn.
    pub fn turn_started(
        &mut self,
        settings: &ReviewSettings,
        history: &[Message],
        memory_offered: bool,
    ) -> bool {
        let interval = settings.memory_interval;
        if self.user_turns == 0 {
            let prior = history.iter().filter(|m| m.role == Role::User).count();
            let prior = u32::try_from(prior).unwrap_or(u32::MAX);
            if prior > 0 {
                self.user_turns = prior;
                if interval > 0 && self.turns_since_memory == 0 {
                    self.turns_since_memory = prior % interval;
                }
            }
        }
        self.user_turns = self.user_turns.saturating_add(1);
        if interval == 0 || !memory_offered {
            return false;
        }
        self.turns_since_memory += 1;
        if self.turns_since_memory >= interval {
            self.turns_since_memory = 0;
            return true;
        }
        false
    }

    /// The session moved to another conversation (`/new`, `/resume`): as Python's
    /// `reset_session_state`, the user-turn count starts again, so a resumed conversation's
    /// turns are counted at its next turn, while the counts towards the next memory and skill
    /// review go on (Python keeps `_turns_since_memory` and `_iters_since_skill`).
    pub fn conversation_changed(&mut self) {
        self.user_turns = 0;
    }

    /// The turn made `api_calls` model calls and appended `added`; `skills_offered`: the
    /// session has `skill_manage`. Whether a skill review is due.
    pub fn turn_ended(
        &mut self,
        settings: &ReviewSettings,
        added: &[Message],
        api_calls: u32,
        skills_offered: bool,
    ) -> bool {
        let calls = |m: &Message, name: &str| m.tool_calls.iter().any(|c| c.name == name);
        let answers: Vec<&Message> = added.iter().filter(|m| m.role == Role::Assistant).collect();
        if answers.iter().any(|m| calls(m, "memory")) {
            self.turns_since_memory = 0;
        }
        let interval = settings.skill_interval;
        if interval == 0 || !skills_offered {
            return false;
        }
        // Model calls count; a `skill_manage` call starts the count again after it.
        match answers.iter().rposition(|m| calls(m, "skill_manage")) {
            Some(last) => {
                self.iters_since_skill = u32::try_from(answers.len() - 1 - last).unwrap_or(0);
            }
            None => self.iters_since_skill = self.iters_since_skill.saturating_add(api_calls),
        }
        if self.iters_since_skill >= interval {
            self.iters_since_skill = 0;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_protocol::ToolCall;

    fn settings(memory: u32, skills: u32) -> ReviewSettings {
        ReviewSettings {
            memory_interval: memory,
            skill_interval: skills,
            ..ReviewSettings::default()
        }
    }

    fn calling(name: &str) -> Message {
        let mut m = Message::assistant("");
        m.tool_calls.push(ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: "{}".into(),
        });
        m
    }

    #[test]
    fn memory_every_n_user_turns() {
        let s = settings(3, 0);
        let mut n = Nudges::default();
        let due: Vec<bool> = (0..7).map(|_| n.turn_started(&s, &[], true)).collect();
        assert_eq!(due, [false, false, true, false, false, true, false]);
        let mut off = Nudges::default();
        assert!((0..7).all(|_| !off.turn_started(&settings(0, 0), &[], true)));
        assert!((0..7).all(|_| !off.turn_started(&s, &[], false)));
    }

    #[test]
    fn a_new_conversation_recounts_user_turns_but_keeps_the_review_counts() {
        let s = settings(2, 0);
        let history = vec![Message::user("a"), Message::assistant("b")];
        let mut n = Nudges::default();
        assert!(!n.turn_started(&s, &[], true));
        assert!(n.turn_started(&s, &history, true), "due on the second turn");
        // `/resume` of a conversation with one user turn: without the reset its turn would
        // not be counted and the next review would come a turn late.
        n.conversation_changed();
        assert!(n.turn_started(&s, &history, true));
        // `/new` keeps the count towards the next review, as Python does.
        assert!(!n.turn_started(&s, &history, true));
        n.conversation_changed();
        assert!(
            n.turn_started(&s, &[], true),
            "the count went on across /new"
        );
    }

    #[test]
    fn memory_count_continues_a_stored_conversation() {
        let s = settings(3, 0);
        let history = vec![
            Message::user("a"),
            Message::assistant("b"),
            Message::user("c"),
            Message::assistant("d"),
        ];
        let mut n = Nudges::default();
        assert!(n.turn_started(&s, &history, true), "third user turn");
    }

    #[test]
    fn skills_after_n_iterations_since_skill_manage() {
        let s = settings(0, 4);
        let mut n = Nudges::default();
        let three = vec![
            calling("terminal"),
            calling("read_file"),
            Message::assistant("x"),
        ];
        assert!(!n.turn_ended(&s, &three, 3, true));
        assert!(n.turn_ended(&s, &[Message::assistant("y")], 1, true));
        assert!(!n.turn_ended(&s, &three, 3, true));
        let managed = vec![calling("skill_manage"), Message::assistant("z")];
        assert!(
            !n.turn_ended(&s, &managed, 2, true),
            "reset, one call since"
        );
        assert!(!n.turn_ended(&s, &[Message::assistant("w")], 1, true));
        assert!(n.turn_ended(&s, &three, 3, true));
        assert!(!n.turn_ended(&settings(0, 0), &three, 3, true));
        let mut m = Nudges::default();
        assert!(!m.turn_ended(&s, &[three.clone(), three].concat(), 6, false));
    }
}
