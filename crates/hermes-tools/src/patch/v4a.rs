//! The V4A patch format (codex, cline and the Python Hermes use it):
//!
//! ```text
//! *** Begin Patch
//! *** Add File: path/new.txt
//! +line
//! *** Update File: path/old.py
//! *** Move to: path/renamed.py
//! @@ def handler():
//!  context line
//! -removed line
//! +added line
//! *** Delete File: path/gone.txt
//! *** End Patch
//! ```
//!
//! Parsing is lenient where models slip (missing Begin/End markers, unprefixed context lines,
//! `*** Move File: a -> b`) and strict where a guess could damage a file (empty paths, updates
//! without changes, text outside any file section).

use super::PatchError;

/// One line of a hunk: `' '` context, `'-'` removed, `'+'` added.
pub type HunkLine = (char, String);

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Hunk {
    /// The text after `@@`: a line near the change, used to find it.
    pub hint: Option<String>,
    pub lines: Vec<HunkLine>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Add {
        path: String,
        lines: Vec<String>,
    },
    Delete {
        path: String,
    },
    Update {
        path: String,
        move_to: Option<String>,
        hunks: Vec<Hunk>,
    },
}

impl Op {
    pub fn path(&self) -> &str {
        match self {
            Op::Add { path, .. } | Op::Delete { path } | Op::Update { path, .. } => path,
        }
    }
}

/// The header of a section, if `line` is one.
enum Header {
    Begin,
    End,
    Add(String),
    Update(String),
    Delete(String),
    MoveTo(String),
    MoveFile(String, String),
    EndOfFile,
}

fn header(line: &str) -> Option<Header> {
    let rest = line.trim().strip_prefix("***")?.trim_start();
    let value = |prefix: &str| {
        rest.strip_prefix(prefix)
            .map(|v| v.trim().trim_matches(['"', '`']).to_string())
    };
    if rest.starts_with("Begin Patch") {
        Some(Header::Begin)
    } else if rest.starts_with("End Patch") {
        Some(Header::End)
    } else if rest.starts_with("End of File") {
        Some(Header::EndOfFile)
    } else if let Some(p) = value("Add File:") {
        Some(Header::Add(p))
    } else if let Some(p) = value("Update File:") {
        Some(Header::Update(p))
    } else if let Some(p) = value("Delete File:") {
        Some(Header::Delete(p))
    } else if let Some(p) = value("Move to:") {
        Some(Header::MoveTo(p))
    } else if let Some(spec) = value("Move File:") {
        let (from, to) = spec.split_once("->")?;
        Some(Header::MoveFile(
            from.trim().to_string(),
            to.trim().to_string(),
        ))
    } else {
        None
    }
}

/// Parses a patch into its operations, in order.
pub fn parse(text: &str) -> Result<Vec<Op>, PatchError> {
    let mut ops: Vec<Op> = Vec::new();
    let mut begun = false;
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        match header(raw) {
            Some(Header::Begin) => {
                if begun && !ops.is_empty() {
                    return Err(PatchError::SecondBegin { line: number });
                }
                begun = true;
                continue;
            }
            Some(Header::End) => break,
            Some(Header::EndOfFile) => continue,
            Some(Header::Add(path)) => ops.push(Op::Add {
                path,
                lines: Vec::new(),
            }),
            Some(Header::Update(path)) => ops.push(Op::Update {
                path,
                move_to: None,
                hunks: Vec::new(),
            }),
            Some(Header::Delete(path)) => ops.push(Op::Delete { path }),
            Some(Header::MoveFile(from, to)) => ops.push(Op::Update {
                path: from,
                move_to: Some(to),
                hunks: Vec::new(),
            }),
            Some(Header::MoveTo(to)) => match ops.last_mut() {
                Some(Op::Update { move_to, .. }) if move_to.is_none() => *move_to = Some(to),
                _ => {
                    return Err(PatchError::StrayMoveTo { line: number });
                }
            },
            None => body_line(&mut ops, raw, number)?,
        }
    }
    if ops.is_empty() {
        return Err(PatchError::NoSections);
    }
    for op in &mut ops {
        if op.path().is_empty() {
            return Err(PatchError::EmptyPath);
        }
        match op {
            Op::Add { lines, .. } => trim_trailing_blank(lines),
            Op::Update {
                path,
                move_to,
                hunks,
            } => {
                for h in hunks.iter_mut() {
                    while h
                        .lines
                        .last()
                        .is_some_and(|(k, t)| *k == ' ' && t.trim().is_empty())
                    {
                        h.lines.pop();
                    }
                }
                hunks.retain(|h| !h.lines.is_empty());
                if hunks.is_empty() && move_to.is_none() {
                    return Err(PatchError::EmptyUpdate(path.clone()));
                }
                if move_to.as_deref().is_some_and(str::is_empty) {
                    return Err(PatchError::EmptyMoveTo(path.clone()));
                }
            }
            Op::Delete { .. } => {}
        }
    }
    Ok(ops)
}

fn trim_trailing_blank(lines: &mut Vec<String>) {
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
}

fn body_line(ops: &mut [Op], raw: &str, number: usize) -> Result<(), PatchError> {
    let line = raw.strip_suffix('\r').unwrap_or(raw);
    match ops.last_mut() {
        None if line.trim().is_empty() => Ok(()),
        None => Err(PatchError::OutsideSection {
            line: number,
            text: crate::output::shorten_line(line, 60),
        }),
        Some(Op::Add { lines, .. }) => {
            lines.push(line.strip_prefix('+').unwrap_or(line).to_string());
            Ok(())
        }
        Some(Op::Delete { .. }) if line.trim().is_empty() => Ok(()),
        Some(Op::Delete { path }) => Err(PatchError::DeleteWithContent {
            line: number,
            path: path.clone(),
        }),
        Some(Op::Update { hunks, .. }) => {
            if let Some(rest) = line.strip_prefix("@@") {
                let hint = rest.trim().trim_end_matches("@@").trim();
                hunks.push(Hunk {
                    hint: (!hint.is_empty()).then(|| hint.to_string()),
                    lines: Vec::new(),
                });
                return Ok(());
            }
            if hunks.is_empty() {
                hunks.push(Hunk::default());
            }
            let Some(hunk) = hunks.last_mut() else {
                return Ok(());
            };
            let entry = match line.chars().next() {
                Some(k @ ('+' | '-' | ' ')) => (k, line[1..].to_string()),
                Some('\\') => return Ok(()), // "\ No newline at end of file"
                None => (' ', String::new()),
                Some(_) => (' ', line.to_string()),
            };
            hunk.lines.push(entry);
            Ok(())
        }
    }
}

/// The paths a patch touches (sources and move destinations), for access planning; tolerant of
/// a patch that does not parse.
pub fn touched_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        match header(line) {
            Some(Header::Add(p) | Header::Update(p) | Header::Delete(p) | Header::MoveTo(p)) => {
                out.push(p)
            }
            Some(Header::MoveFile(a, b)) => {
                out.push(a);
                out.push(b);
            }
            _ => {}
        }
    }
    out.retain(|p| !p.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_section_kind() {
        let ops = parse(
            "*** Begin Patch\n*** Add File: new.txt\n+one\n+two\n\n*** Update File: a.py\n*** Move to: b.py\n@@ def f():\n     x = 1\n-    y = 2\n+    y = 3\n*** Delete File: old.txt\n*** Move File: c -> d\n*** End Patch\ntrailing garbage",
        )
        .unwrap();
        assert_eq!(
            ops,
            vec![
                Op::Add {
                    path: "new.txt".into(),
                    lines: vec!["one".into(), "two".into()]
                },
                Op::Update {
                    path: "a.py".into(),
                    move_to: Some("b.py".into()),
                    hunks: vec![Hunk {
                        hint: Some("def f():".into()),
                        lines: vec![
                            (' ', "    x = 1".into()),
                            ('-', "    y = 2".into()),
                            ('+', "    y = 3".into())
                        ]
                    }]
                },
                Op::Delete {
                    path: "old.txt".into()
                },
                Op::Update {
                    path: "c".into(),
                    move_to: Some("d".into()),
                    hunks: vec![]
                },
            ]
        );
        assert_eq!(
            touched_paths("*** Update File: a\n*** Move to: b\n*** Move File: c -> d"),
            ["a", "b", "c", "d"]
        );
    }

    #[test]
    fn lenient_where_safe_strict_where_not() {
        let ops = parse("*** Update File: x\n@@\nctx\n-old\n+new\n").unwrap();
        let Op::Update { hunks, .. } = &ops[0] else {
            panic!()
        };
        assert_eq!(hunks[0].lines[0], (' ', "ctx".into()));
        assert!(matches!(parse(""), Err(PatchError::NoSections)));
        let e = parse("hello\n*** Update File: x\n+a").unwrap_err();
        assert!(
            matches!(e, PatchError::OutsideSection { line: 1, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("outside any file section"), "{e}");
        assert!(matches!(
            parse("*** Update File: x\n"),
            Err(PatchError::EmptyUpdate(p)) if p == "x"
        ));
        assert!(matches!(
            parse("*** Update File: \n+a"),
            Err(PatchError::EmptyPath)
        ));
        let e = parse("*** Delete File: x\nstuff").unwrap_err();
        assert_eq!(e.to_string(), "line 2: *** Delete File: x takes no content");
        assert!(matches!(
            parse("*** Move to: y"),
            Err(PatchError::StrayMoveTo { line: 1 })
        ));
    }
}
