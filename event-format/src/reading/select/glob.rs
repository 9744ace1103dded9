//! The one glob matcher: `*` and `?` over names, for the control grammar, event-dump's
//! `--kind`/`--event` and its filter's `~`.
//!
//! `*` matches any run of characters (none included) and `?` exactly one character (a
//! Unicode scalar value, so `gr?ße` matches `große`); anything else matches itself, case
//! included. There is no escape: names never contain `*` or `?`. A pattern matches the whole
//! text, not a part of it.
//!
//! It allocates nothing and takes time proportional to the product of the two lengths at
//! worst (it backtracks only to the last `*`), so a reader can match every event of a log
//! and no pattern can make it exponential.

/// Whether `text` is a glob rather than a plain name: it has a `*` or a `?`.
pub fn is_glob(text: &str) -> bool {
    text.contains(['*', '?'])
}

/// Whether all of `text` matches `pattern`: `*` matches any run of characters, `?` exactly
/// one, anything else itself.
///
/// ```
/// use event_format::select::glob;
///
/// assert!(glob::matches("Pool*", "PoolInit"));
/// assert!(glob::matches("*:?ool", "Pool:Pool") && !glob::matches("?ool", "Pol"));
/// assert!(glob::matches("gr?ße", "große"));
/// assert!(!glob::matches("pool*", "PoolInit"), "case counts");
/// ```
pub fn matches(pattern: &str, text: &str) -> bool {
    // Byte offsets, always on character boundaries.
    let (mut p, mut t) = (0, 0);
    // After the last `*` seen: where its pattern continues, and where in `text` its run ends.
    let mut star: Option<(usize, usize)> = None;
    while let Some(c) = text[t..].chars().next() {
        match pattern[p..].chars().next() {
            Some('*') => {
                p += 1;
                star = Some((p, t));
            }
            Some(q) if q == '?' || q == c => {
                p += q.len_utf8();
                t += c.len_utf8();
            }
            _ => {
                // Give the last `*` one more character, and try again from there.
                let Some((sp, st)) = star else { return false };
                let Some(skipped) = text[st..].chars().next() else { return false };
                p = sp;
                t = st + skipped.len_utf8();
                star = Some((sp, t));
            }
        }
    }
    pattern[p..].chars().all(|c| c == '*')
}

/// Whether `name` is matched by `pattern`, a plain name (compared as it is) or a glob.
pub fn name_matches(pattern: &str, name: &str) -> bool {
    if is_glob(pattern) { matches(pattern, name) } else { pattern == name }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching() {
        for (pattern, name, expected) in [
            ("*", "", true),
            ("*", "Pool", true),
            ("", "", true),
            ("", "a", false),
            ("?", "", false),
            ("?", "a", true),
            ("??", "a", false),
            ("Po*", "Pool", true),
            ("Po*", "Po", true),
            ("Po*", "Arena", false),
            ("*ol", "Pool", true),
            ("*ol", "Poll", false),
            ("P*l", "Pool", true),
            ("P*l", "Pl", true),
            ("P*l*", "PoolInit", true),
            ("*Init", "PoolInit", true),
            ("*Init", "PoolInitX", false),
            ("*a*b*c", "xaxbxc", true),
            ("*a*b*c", "xaxbxcx", false),
            ("a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false),
            ("**", "x", true),
            ("?*?", "ab", true),
            ("?*?", "a", false),
            ("pool", "Pool", false),
            // Characters, not bytes.
            ("gr?ße", "große", true),
            ("?????", "große", true),
            ("*ß*", "große", true),
            ("??????", "große", false),
            ("Arena.*", "Arena.ArenaCreate", true),
        ] {
            assert_eq!(matches(pattern, name), expected, "{pattern:?} vs {name:?}");
        }
    }

    #[test]
    fn a_star_in_the_text_is_an_ordinary_character() {
        // event-dump's old matcher took a `*` of the pattern as the text's literal `*`
        // before it tried it as a wildcard, and so refused these.
        assert!(matches("*a", "*ba"));
        assert!(matches("*?", "*x"));
        assert!(matches("?*b", "**ab"));
    }

    #[test]
    fn matching_is_not_exponential() {
        let text = "a".repeat(2000);
        assert!(!matches(&format!("{}b", "*a".repeat(50)), &text));
        assert!(matches(&format!("{}*", "*a".repeat(50)), &text));
    }

    #[test]
    fn plain_names_are_compared_whole() {
        assert!(name_matches("Pool", "Pool"));
        assert!(!name_matches("Pool", "PoolInit"));
        assert!(name_matches("Pool*", "PoolInit"));
    }
}
