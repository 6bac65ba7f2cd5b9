//! Telegram's MarkdownV2 parser, as the Bot API applies it to `parse_mode: MarkdownV2`: the
//! text without its markup, or the error Telegram answers (`can't parse entities: ...`).
//! Follows the rules of <https://core.telegram.org/bots/api#markdownv2-style>: entities
//! `*bold*`, `_italic_`, `__underline__`, `~strike~`, `||spoiler||`, `[text](url)`,
//! `` `code` ``, ```` ```pre``` ````, `>` quotes at a line start; every other reserved
//! character must be escaped with `\`; inside code only `` ` `` and `\` are escaped, inside a
//! URL only `)` and `\`; a carriage return is ignored.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entity {
    Bold,
    Italic,
    Underline,
    Strike,
    Spoiler,
    Link,
}

impl Entity {
    fn name(self) -> &'static str {
        match self {
            Entity::Bold => "Bold",
            Entity::Italic => "Italic",
            Entity::Underline => "Underline",
            Entity::Strike => "Strikethrough",
            Entity::Spoiler => "Spoiler",
            Entity::Link => "TextUrl",
        }
    }
}

const RESERVED: &[char] = &[
    '_', '*', '[', ']', '(', ')', '~', '`', '>', '#', '+', '-', '=', '|', '{', '}', '.', '!',
];

fn reserved(c: char) -> String {
    format!(
        "can't parse entities: Character '{c}' is reserved and must be escaped with the preceding '\\'"
    )
}

fn unclosed(e: Entity, offset: usize) -> String {
    format!(
        "can't parse entities: Can't find end of {} entity at byte offset {offset}",
        e.name()
    )
}

/// Parses `text`; returns the plain text Telegram would show.
pub fn parse(text: &str) -> Result<String, String> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut plain = String::with_capacity(text.len());
    let mut stack: Vec<(Entity, usize)> = Vec::new();
    let mut i = 0;
    let mut line_start = true;
    while i < chars.len() {
        let (offset, c) = chars[i];
        let at_line_start = line_start;
        line_start = false;
        match c {
            '\r' => {
                i += 1;
                line_start = at_line_start;
            }
            '\n' => {
                plain.push('\n');
                line_start = true;
                i += 1;
            }
            '\\' => {
                let Some(&(_, next)) = chars.get(i + 1) else {
                    return Err(reserved('\\'));
                };
                if (next as u32) < 1 || (next as u32) > 126 {
                    return Err(reserved('\\'));
                }
                plain.push(next);
                i += 2;
            }
            '>' if at_line_start => {
                // A quote marker (any number of them).
                i += 1;
                while i < chars.len() && chars[i].1 == '>' {
                    i += 1;
                }
                if chars.get(i).is_some_and(|(_, c)| *c == ' ') {
                    i += 1;
                }
            }
            '`' => {
                let pre = chars.get(i + 1).is_some_and(|c| c.1 == '`')
                    && chars.get(i + 2).is_some_and(|c| c.1 == '`');
                if pre {
                    // The language runs to the end of the first line.
                    let mut j = i + 3;
                    let has_newline = chars[j..].iter().any(|c| c.1 == '\n');
                    if has_newline {
                        let first_line_end = chars[j..]
                            .iter()
                            .position(|c| c.1 == '\n')
                            .map_or(chars.len(), |p| j + p);
                        let lang: String = chars[j..first_line_end].iter().map(|c| c.1).collect();
                        if !lang.contains('`') {
                            j = first_line_end + 1;
                        }
                    }
                    let mut closed = false;
                    while j < chars.len() {
                        match chars[j].1 {
                            '\\' => {
                                if let Some(&(_, n)) = chars.get(j + 1) {
                                    plain.push(n);
                                }
                                j += 2;
                            }
                            '`' if chars.get(j + 1).is_some_and(|c| c.1 == '`')
                                && chars.get(j + 2).is_some_and(|c| c.1 == '`') =>
                            {
                                closed = true;
                                j += 3;
                                break;
                            }
                            '`' => return Err(reserved('`')),
                            other => {
                                plain.push(other);
                                j += 1;
                            }
                        }
                    }
                    if !closed {
                        return Err(format!(
                            "can't parse entities: Can't find end of PreCode entity at byte offset {offset}"
                        ));
                    }
                    i = j;
                } else {
                    let mut j = i + 1;
                    let mut closed = false;
                    while j < chars.len() {
                        match chars[j].1 {
                            '\\' => {
                                if let Some(&(_, n)) = chars.get(j + 1) {
                                    plain.push(n);
                                }
                                j += 2;
                            }
                            '`' => {
                                closed = true;
                                j += 1;
                                break;
                            }
                            other => {
                                plain.push(other);
                                j += 1;
                            }
                        }
                    }
                    if !closed {
                        return Err(format!(
                            "can't parse entities: Can't find end of Code entity at byte offset {offset}"
                        ));
                    }
                    i = j;
                }
            }
            '*' => {
                toggle(&mut stack, Entity::Bold, offset)?;
                i += 1;
            }
            '_' => {
                if chars.get(i + 1).is_some_and(|c| c.1 == '_') {
                    toggle(&mut stack, Entity::Underline, offset)?;
                    i += 2;
                } else {
                    toggle(&mut stack, Entity::Italic, offset)?;
                    i += 1;
                }
            }
            '~' => {
                toggle(&mut stack, Entity::Strike, offset)?;
                i += 1;
            }
            '|' => {
                if chars.get(i + 1).is_some_and(|c| c.1 == '|') {
                    toggle(&mut stack, Entity::Spoiler, offset)?;
                    i += 2;
                } else {
                    return Err(reserved('|'));
                }
            }
            '[' => {
                stack.push((Entity::Link, offset));
                i += 1;
            }
            ']' => {
                if !matches!(stack.last(), Some((Entity::Link, _))) {
                    return Err(reserved(']'));
                }
                stack.pop();
                if chars.get(i + 1).is_none_or(|c| c.1 != '(') {
                    return Err(reserved(']'));
                }
                let mut j = i + 2;
                let mut closed = false;
                while j < chars.len() {
                    match chars[j].1 {
                        '\\' => j += 2,
                        ')' => {
                            closed = true;
                            j += 1;
                            break;
                        }
                        _ => j += 1,
                    }
                }
                if !closed {
                    return Err(format!(
                        "can't parse entities: Can't find end of a URL at byte offset {offset}"
                    ));
                }
                i = j;
            }
            c if RESERVED.contains(&c) => return Err(reserved(c)),
            other => {
                plain.push(other);
                i += 1;
            }
        }
    }
    if let Some((e, offset)) = stack.last() {
        return Err(unclosed(*e, *offset));
    }
    Ok(plain)
}

fn toggle(stack: &mut Vec<(Entity, usize)>, e: Entity, offset: usize) -> Result<(), String> {
    match stack.last() {
        Some((top, _)) if *top == e => {
            stack.pop();
            Ok(())
        }
        _ if stack.iter().any(|(x, _)| *x == e) => {
            // Closing an entity that is not the innermost one.
            let (inner, at) = stack[stack.len() - 1];
            Err(unclosed(inner, at))
        }
        _ => {
            stack.push((e, offset));
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn valid_markdown_gives_plain_text() {
        assert_eq!(
            parse(r"*bold* _it_ __u__ ~s~ ||sp||").unwrap(),
            "bold it u s sp"
        );
        assert_eq!(parse(r"Hello\. \(1\+1\)\!").unwrap(), "Hello. (1+1)!");
        assert_eq!(parse("[a\\.b](http://x/a_\\)b)").unwrap(), "a.b");
        assert_eq!(parse("`a_b(1)`").unwrap(), "a_b(1)");
        assert_eq!(
            parse("```rust\nlet a = b.c();\n```").unwrap(),
            "let a = b.c();\n"
        );
        assert_eq!(parse("> quoted").unwrap(), "quoted");
        assert_eq!(parse("_a_\r__b__").unwrap(), "ab");
    }

    #[test]
    fn errors_are_telegrams() {
        assert!(
            parse("Hello.")
                .unwrap_err()
                .contains("Character '.' is reserved")
        );
        assert!(
            parse("a - b")
                .unwrap_err()
                .contains("Character '-' is reserved")
        );
        assert!(
            parse("*open")
                .unwrap_err()
                .contains("Can't find end of Bold entity")
        );
        assert!(parse("x > y").unwrap_err().contains("'>' is reserved"));
        assert!(parse("`code").unwrap_err().contains("Code entity"));
        assert!(parse("```\ncode").unwrap_err().contains("PreCode"));
        assert!(parse("a | b").unwrap_err().contains("'|' is reserved"));
    }
}
