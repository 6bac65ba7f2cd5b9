//! `$((...))` evaluated when every operand is a number or a variable the command line
//! assigned: `kill -$((1))` is `kill -1`. Integer arithmetic with bash's operators and
//! precedence, overflow and division by zero giving no value.

use super::expand::{Vars, expand_exact};
use super::lexer::lex_word;

/// Whether `body` is well-formed arithmetic whatever its variables hold. Bash runs a `$((...))`
/// or `((...))` that is not as a command in a subshell (`$((rm -rf /))`), so the checker
/// checks such a body as a command.
pub(crate) fn looks_arithmetic(body: &str) -> bool {
    // Expansions inside stand for numbers.
    let mut text = String::new();
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '$' {
            i += 1;
            match chars.get(i) {
                Some('(') | Some('{') => {
                    let (open, close) = if chars[i] == '(' {
                        ('(', ')')
                    } else {
                        ('{', '}')
                    };
                    let mut depth = 0usize;
                    while i < chars.len() {
                        if chars[i] == open {
                            depth += 1;
                        } else if chars[i] == close {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        i += 1;
                    }
                    i += 1;
                    text.push('0');
                }
                _ => {}
            }
            continue;
        }
        text.push(chars[i]);
        i += 1;
    }
    const OPS: &[&str] = &[
        "<<=", ">>=", "**", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=",
        "%=", "&=", "^=", "|=", "++", "--", "+", "-", "*", "/", "%", "<", ">", "&", "|", "^", "~",
        "!", "=", "?", ":", ",",
    ];
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    // Whether an operand is expected next (else a binary operator or a closing paren).
    let mut want_operand = true;
    let mut depth = 0i32;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_alphanumeric() || c == '_' || c == '#' {
            if !want_operand {
                return false;
            }
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || matches!(chars[i], '_' | '#' | '[' | ']'))
            {
                i += 1;
            }
            want_operand = false;
            continue;
        }
        match c {
            '(' if want_operand => {
                depth += 1;
                i += 1;
                continue;
            }
            ')' if !want_operand => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
                i += 1;
                continue;
            }
            _ => {}
        }
        let rest: String = chars[i..(i + 3).min(chars.len())].iter().collect();
        let Some(op) = OPS.iter().find(|op| rest.starts_with(*op)) else {
            return false;
        };
        let unary = matches!(*op, "+" | "-" | "!" | "~" | "++" | "--");
        if want_operand && !unary {
            return false;
        }
        if !want_operand && matches!(*op, "++" | "--") {
            // Postfix: still an operand.
        } else if !want_operand {
            want_operand = true;
        }
        i += op.len();
    }
    !want_operand && depth == 0
}

/// `$((...))` evaluated when every operand is a number or a known variable.
pub(crate) fn arithmetic(body: &str, vars: &Vars, depth: usize) -> Option<i64> {
    if body.len() > 1024 {
        return None;
    }
    // Substitutions and parameter expansions inside are expanded first, as bash does.
    let text = if body.contains(['$', '`']) {
        expand_exact(&lex_word(body.trim()), vars, depth)?
    } else {
        body.to_string()
    };
    let tokens = tokenize(&text, vars)?;
    let mut p = Arith { tokens, pos: 0 };
    let v = p.expr(0)?;
    (p.pos == p.tokens.len()).then_some(v)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(i64),
    Op(&'static str),
    Open,
    Close,
}

fn tokenize(text: &str, vars: &Vars) -> Option<Vec<Tok>> {
    const OPS: &[&str] = &[
        "**", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+", "-", "*", "/", "%", "<", ">",
        "&", "|", "^", "~", "!",
    ];
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '#') {
                i += 1;
            }
            let lit: String = chars[start..i].iter().collect();
            out.push(Tok::Num(number(&lit)?));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let name: String = chars[start..i].iter().collect();
            let v = vars.get(&name)?;
            if v.unknown || v.values.len() != 1 {
                return None;
            }
            out.push(Tok::Num(
                number(v.values[0].trim())
                    .or_else(|| v.values[0].trim().is_empty().then_some(0))?,
            ));
        } else if c == '(' {
            out.push(Tok::Open);
            i += 1;
        } else if c == ')' {
            out.push(Tok::Close);
            i += 1;
        } else {
            let rest: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            let op = OPS.iter().find(|op| rest.starts_with(*op))?;
            out.push(Tok::Op(op));
            i += op.len();
        }
    }
    Some(out)
}

fn number(lit: &str) -> Option<i64> {
    if let Some(hex) = lit.strip_prefix("0x").or_else(|| lit.strip_prefix("0X")) {
        return i64::from_str_radix(hex, 16).ok();
    }
    if let Some((base, digits)) = lit.split_once('#') {
        let base: u32 = base.parse().ok()?;
        return (2..=36)
            .contains(&base)
            .then(|| i64::from_str_radix(digits, base).ok())
            .flatten();
    }
    if lit.len() > 1 && lit.starts_with('0') {
        return i64::from_str_radix(&lit[1..], 8).ok();
    }
    lit.parse().ok()
}

struct Arith {
    tokens: Vec<Tok>,
    pos: usize,
}

impl Arith {
    fn binding(op: &str) -> Option<(u8, bool)> {
        // (precedence, right-associative)
        Some(match op {
            "||" => (1, false),
            "&&" => (2, false),
            "|" => (3, false),
            "^" => (4, false),
            "&" => (5, false),
            "==" | "!=" => (6, false),
            "<" | ">" | "<=" | ">=" => (7, false),
            "<<" | ">>" => (8, false),
            "+" | "-" => (9, false),
            "*" | "/" | "%" => (10, false),
            "**" => (11, true),
            _ => return None,
        })
    }

    fn expr(&mut self, min: u8) -> Option<i64> {
        let mut lhs = self.unary()?;
        while let Some(Tok::Op(op)) = self.tokens.get(self.pos).cloned() {
            let Some((prec, right)) = Self::binding(op) else {
                break;
            };
            if prec < min {
                break;
            }
            self.pos += 1;
            let rhs = self.expr(if right { prec } else { prec + 1 })?;
            lhs = apply(op, lhs, rhs)?;
        }
        Some(lhs)
    }

    fn unary(&mut self) -> Option<i64> {
        match self.tokens.get(self.pos).cloned()? {
            Tok::Num(n) => {
                self.pos += 1;
                Some(n)
            }
            Tok::Open => {
                self.pos += 1;
                let v = self.expr(0)?;
                if self.tokens.get(self.pos) != Some(&Tok::Close) {
                    return None;
                }
                self.pos += 1;
                Some(v)
            }
            Tok::Op(op) => {
                self.pos += 1;
                let v = self.unary()?;
                match op {
                    "-" => v.checked_neg(),
                    "+" => Some(v),
                    "!" => Some(i64::from(v == 0)),
                    "~" => Some(!v),
                    _ => None,
                }
            }
            Tok::Close => None,
        }
    }
}

fn apply(op: &str, a: i64, b: i64) -> Option<i64> {
    Some(match op {
        "+" => a.checked_add(b)?,
        "-" => a.checked_sub(b)?,
        "*" => a.checked_mul(b)?,
        "/" => a.checked_div(b)?,
        "%" => a.checked_rem(b)?,
        "**" => a.checked_pow(u32::try_from(b).ok()?)?,
        "<<" => a.checked_shl(u32::try_from(b).ok()?)?,
        ">>" => a.checked_shr(u32::try_from(b).ok()?)?,
        "&" => a & b,
        "|" => a | b,
        "^" => a ^ b,
        "&&" => i64::from(a != 0 && b != 0),
        "||" => i64::from(a != 0 || b != 0),
        "==" => i64::from(a == b),
        "!=" => i64::from(a != b),
        "<" => i64::from(a < b),
        ">" => i64::from(a > b),
        "<=" => i64::from(a <= b),
        ">=" => i64::from(a >= b),
        _ => return None,
    })
}
