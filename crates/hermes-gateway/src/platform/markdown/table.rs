//! GFM pipe tables rewritten as a bold heading and bullets per row, for platforms that draw
//! no tables (Telegram, Discord), the way the Python Hermes does: the first non-empty cell
//! heads the group (or the row label when rows have one more cell than the header), each
//! other cell becomes `• header: value`. Tables inside code fences are left alone.

use super::Fences;

/// `|---|:--:|` and `--- | ---`: a delimiter row with at least two columns.
fn is_separator(line: &str) -> bool {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    let cells: Vec<&str> = t.split('|').collect();
    cells.len() >= 2
        && cells.iter().all(|c| {
            let c = c.trim();
            let c = c.strip_prefix(':').unwrap_or(c);
            let c = c.strip_suffix(':').unwrap_or(c);
            !c.is_empty() && c.bytes().all(|b| b == b'-')
        })
}

fn is_row(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && t.contains('|')
}

fn cells(line: &str) -> Vec<String> {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    t.split('|').map(|c| c.trim().to_string()).collect()
}

fn render_table(block: &[&str]) -> String {
    let headers = cells(block[0]);
    if headers.len() < 2 || block.len() < 3 {
        return block.join("\n");
    }
    let row_label = cells(block[2]).len() == headers.len() + 1;
    let mut groups = Vec::new();
    for (index, row) in block[2..].iter().enumerate() {
        let row_cells = cells(row);
        let (heading, mut data) = if row_label {
            let heading = row_cells
                .first()
                .filter(|c| !c.is_empty())
                .cloned()
                .unwrap_or_else(|| format!("Row {}", index + 1));
            (heading, row_cells[1.min(row_cells.len())..].to_vec())
        } else {
            let heading = row_cells
                .iter()
                .find(|c| !c.is_empty())
                .cloned()
                .unwrap_or_else(|| format!("Row {}", index + 1));
            (heading, row_cells.clone())
        };
        data.resize(headers.len(), String::new());
        let mut lines = vec![format!("**{heading}**")];
        for (header, value) in headers.iter().zip(&data) {
            if !row_label && *value == heading {
                continue;
            }
            lines.push(format!("• {header}: {value}"));
        }
        groups.push(lines.join("\n"));
    }
    groups.join("\n\n")
}

/// Rewrites every table outside code fences.
pub(crate) fn convert_tables(text: &str) -> String {
    if !text.contains('|') || !text.contains('-') {
        return text.to_string();
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut fences = Fences::default();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if fences.step(line) || fences.open.is_some() {
            out.push(line.to_string());
            i += 1;
            continue;
        }
        if line.contains('|') && i + 1 < lines.len() && is_separator(lines[i + 1]) {
            let mut j = i + 2;
            while j < lines.len() && is_row(lines[j]) && super::fence_info(lines[j]).is_none() {
                j += 1;
            }
            out.push(render_table(&lines[i..j]));
            i = j;
            continue;
        }
        out.push(line.to_string());
        i += 1;
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_become_bullet_groups() {
        let md = "Results:\n| Name | Age | City |\n|:-----|----:|------|\n| Ann | 30 | Oslo |\n| Bob |  | Rome |\nafter";
        assert_eq!(
            convert_tables(md),
            "Results:\n**Ann**\n• Age: 30\n• City: Oslo\n\n**Bob**\n• Age: \n• City: Rome\nafter"
        );
    }

    #[test]
    fn row_labels_and_fenced_tables() {
        let md = "| | x | y |\n|---|---|---|\n| r1 | 1 | 2 | 3 |";
        // Four cells under three headers is not a row-label table (needs exactly one more).
        assert!(convert_tables(md).starts_with("**r1**"));
        let labelled = "| x | y |\n|---|---|\n| r1 | 1 | 2 |";
        assert_eq!(convert_tables(labelled), "**r1**\n• x: 1\n• y: 2");
        let fenced = "```\n| a | b |\n|---|---|\n| 1 | 2 |\n```";
        assert_eq!(convert_tables(fenced), fenced);
    }

    #[test]
    fn text_with_pipes_but_no_table_is_kept() {
        let md = "a | b\nc - d";
        assert_eq!(convert_tables(md), md);
    }
}
