//! What the review is asked, as the last user message after the replayed conversation. The
//! intent follows the Python Hermes's review prompts: the memory review keeps who the user is
//! and how they want the agent to work; the skill review is expected to act (patch the skill
//! that was in play, extend an existing class-level skill, add a support file, or create a new
//! class-level skill) and never to record environment failures or negative claims about tools;
//! "Nothing to save." is the way to do nothing. One pass asks for both when both are due.

/// The memory review.
pub const MEMORY: &str = "Look back over the conversation above and decide whether anything belongs in memory.\n\n\
Look for:\n\
1. What the user told you about themselves: who they are, what they want, their preferences, personal details worth keeping.\n\
2. How the user expects you to behave: their working style, the way they want you to operate.\n\n\
When something qualifies, save it with the memory tool (facts about the user go to the `user` target). \
When nothing does, answer 'Nothing to save.' and stop.";

/// The skill review.
pub const SKILLS: &str = "Look back over the conversation above and improve the skill library. Most sessions teach at least one thing; \
a pass that changes nothing should be the exception.\n\n\
Aim for class-level skills (a rich SKILL.md, details in references/), not one narrow skill per session.\n\n\
Act when any of these happened:\n\
- The user corrected your style, format, verbosity or tone, or said to remember something: put the preference into the skill that governs that kind of task.\n\
- The user corrected your workflow or the order of steps: record it as a step or pitfall in that skill.\n\
- A non-trivial technique, fix, workaround or debugging path emerged that a later session would want.\n\
- A skill you loaded or viewed turned out wrong, incomplete or outdated: patch it now.\n\n\
Prefer, in this order: patch a skill that was in play this session; patch an existing umbrella skill (skills_list, skill_view); \
add a support file under one with skill_manage action=write_file (references/, templates/ or scripts/) and point to it from its SKILL.md; \
only then create a new skill, named for the class of task, never for today's ticket, error or codename.\n\n\
Never edit bundled or hub-installed skills. Never record environment problems (a missing binary or package, unset credentials), \
claims that a tool does not work, transient errors that resolved, or one-off task narratives; when setup was the problem, record the fix.\n\n\
When there is genuinely nothing to learn, answer 'Nothing to save.' and stop.";

/// Both reviews in one pass.
pub const COMBINED: &str = "Look back over the conversation above and update two things.\n\n\
Memory — who the user is: what they revealed about themselves, their preferences, and how they want you to work. \
Save durable facts with the memory tool (facts about the user go to the `user` target).\n\n\
Skills — how to do this class of task: most sessions teach at least one thing. Patch a skill that was in play, \
extend an existing class-level skill or add a support file under it (references/, templates/, scripts/), and only \
then create a new skill named for the class of task. Put style and workflow corrections into the skill that governs the task. \
Never edit bundled or hub-installed skills; never record environment problems, claims that a tool does not work, \
transient errors or one-off task narratives.\n\n\
Act on whichever has real signal. When neither has any, answer 'Nothing to save.' and stop.";

/// Appended to the review's question: the other tools are refused when called.
pub const TOOLS_NOTE: &str = "\n\nOnly the memory and skill tools (memory, skills_list, skill_view, skill_manage) work in this review; any other tool call is refused.";

/// The question for the reviews that are due.
pub fn for_due(memory: bool, skills: bool) -> String {
    let base = match (memory, skills) {
        (true, true) => COMBINED,
        (true, false) => MEMORY,
        _ => SKILLS,
    };
    format!("{base}{TOOLS_NOTE}")
}
