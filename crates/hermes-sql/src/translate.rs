//! SQLite-flavoured statements in PostgreSQL's dialect. Callers write one statement for both
//! backends; the differences that matter to them are mechanical:
//! `?` / `?N` placeholders become `$N` (SQLite numbers a bare `?` one past the largest so far),
//! `INSERT OR IGNORE` becomes `INSERT ... ON CONFLICT DO NOTHING`, the null-safe `IS ?`
//! becomes `IS NOT DISTINCT FROM $N`, and `rowid` (insertion order) becomes the `seq` column
//! the PostgreSQL schemas add for it. Quoted text is left alone.
//!
//! One rule for statement authors: PostgreSQL types a parameter where it first meets it, and
//! `?N IS NULL` alone tells it nothing, so an optional filter is written with the typed use
//! first: `(col = ?1 OR ?1 IS NULL)`, not `(?1 IS NULL OR col = ?1)`.

/// The statement in PostgreSQL's dialect.
pub fn to_postgres(sql: &str) -> String {
    let mut sql = sql.replace(" IS ?", " IS NOT DISTINCT FROM ?");
    let ignore = sql.contains("INSERT OR IGNORE INTO");
    if ignore {
        sql = sql.replace("INSERT OR IGNORE INTO", "INSERT INTO");
    }
    let mut out = String::with_capacity(sql.len() + 16);
    let mut chars = sql.chars().peekable();
    let mut in_quote = false;
    let mut highest = 0u32;
    let mut word = String::new();
    while let Some(c) = chars.next() {
        if in_quote {
            out.push(c);
            if c == '\'' {
                in_quote = false;
            }
            continue;
        }
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        flush_word(&mut out, &mut word);
        match c {
            '\'' => {
                in_quote = true;
                out.push(c);
            }
            '?' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                let n = match digits.parse::<u32>() {
                    Ok(n) => n,
                    Err(_) => highest + 1,
                };
                highest = highest.max(n);
                out.push('$');
                out.push_str(&n.to_string());
            }
            _ => out.push(c),
        }
    }
    flush_word(&mut out, &mut word);
    if ignore {
        out.push_str(" ON CONFLICT DO NOTHING");
    }
    out
}

fn flush_word(out: &mut String, word: &mut String) {
    if word.eq_ignore_ascii_case("rowid") {
        out.push_str("seq");
    } else {
        out.push_str(word);
    }
    word.clear();
}

#[cfg(test)]
mod tests {
    use super::to_postgres;

    #[test]
    fn placeholders_are_numbered_like_sqlite() {
        assert_eq!(
            to_postgres("SELECT * FROM t WHERE a = ? AND b = ?"),
            "SELECT * FROM t WHERE a = $1 AND b = $2"
        );
        assert_eq!(
            to_postgres("UPDATE t SET a = ? WHERE (?3 IS NULL OR c = ?3) AND d = ?"),
            "UPDATE t SET a = $1 WHERE ($3 IS NULL OR c = $3) AND d = $4"
        );
    }

    #[test]
    fn quoted_text_is_kept() {
        assert_eq!(
            to_postgres("SELECT 'a?b', x FROM t WHERE y = ?"),
            "SELECT 'a?b', x FROM t WHERE y = $1"
        );
    }

    #[test]
    fn sqlite_idioms_become_postgres() {
        assert_eq!(
            to_postgres("INSERT OR IGNORE INTO l (a, b) VALUES (?, ?)"),
            "INSERT INTO l (a, b) VALUES ($1, $2) ON CONFLICT DO NOTHING"
        );
        assert_eq!(
            to_postgres("UPDATE t SET s = 1 WHERE lock IS ? AND id = ?"),
            "UPDATE t SET s = 1 WHERE lock IS NOT DISTINCT FROM $1 AND id = $2"
        );
        assert_eq!(
            to_postgres("SELECT * FROM t ORDER BY p DESC, rowid ASC"),
            "SELECT * FROM t ORDER BY p DESC, seq ASC"
        );
    }
}
