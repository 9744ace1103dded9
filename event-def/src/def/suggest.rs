//! "Did you mean" suggestions, and echoing user text in messages.

/// The longest piece of user text a message repeats, in characters.
const SHOWN_MAX: usize = 40;

/// `text` as a message repeats it: cut short when long. Tokens never hold a line break, so
/// the result is one line.
pub(super) fn shown(text: &str) -> String {
    match text.char_indices().nth(SHOWN_MAX) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Names longer than this get no suggestion: the distance would cost too much to compute and
/// nobody mistypes such a name by a letter.
const LONGEST_COMPARED: usize = 64;

/// The candidate closest to `word` when it is close enough to be a likely typo: at most one
/// edit per three characters (at least one), ignoring case. Ties go to the first candidate.
pub fn closest<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let word: Vec<char> = word.chars().flat_map(char::to_lowercase).collect();
    if word.len() > LONGEST_COMPARED {
        return None;
    }
    let limit = (word.len() / 3).max(1);
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        let other: Vec<char> = candidate.chars().flat_map(char::to_lowercase).collect();
        if other.len() > LONGEST_COMPARED || other.len().abs_diff(word.len()) > limit {
            continue;
        }
        let d = distance(&word, &other);
        if d <= limit && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, candidate));
        }
    }
    best.map(|(_, c)| c)
}

/// The optimal string alignment distance: insertions, deletions, substitutions and swaps of
/// two neighbours each cost one.
fn distance(a: &[char], b: &[char]) -> usize {
    // Three rows of the usual table: two back, one back, this one.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut last: Vec<usize> = (0..=b.len()).collect();
    let mut row: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        row[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (last[j] + 1).min(row[j - 1] + 1).min(last[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            row[j] = d;
        }
        std::mem::swap(&mut before, &mut last);
        std::mem::swap(&mut last, &mut row);
    }
    last[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(a: &str, b: &str) -> usize {
        distance(&a.chars().collect::<Vec<_>>(), &b.chars().collect::<Vec<_>>())
    }

    #[test]
    fn distances() {
        assert_eq!(d("", ""), 0);
        assert_eq!(d("abc", ""), 3);
        assert_eq!(d("", "abc"), 3);
        assert_eq!(d("kitten", "sitting"), 3);
        assert_eq!(d("RELATOIN", "RELATION"), 1);
        assert_eq!(d("Pool", "Pol"), 1);
    }

    #[test]
    fn suggestions() {
        let keywords = ["VERSION", "KIND", "RELATION", "RETIRED"];
        assert_eq!(closest("RELATOIN", keywords), Some("RELATION"));
        assert_eq!(closest("kind", keywords), Some("KIND"));
        assert_eq!(closest("RETIRE", keywords), Some("RETIRED"));
        assert_eq!(closest("EVENT", keywords), None);
        assert_eq!(closest("x", ["Arena"]), None);
    }

    #[test]
    fn shown_cuts_long_text() {
        assert_eq!(shown("short"), "short");
        let long = "é".repeat(100);
        assert_eq!(shown(&long), format!("{}...", "é".repeat(SHOWN_MAX)));
    }
}
