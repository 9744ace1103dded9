//! [`CodeSet`]: a set of event codes as one bit per code, what a selection compiles to.
//!
//! A selection is read once (a control text, a `--kind` list) and then asked about every
//! event: the recorder asks at every call site, a reader for every record. So the answer is
//! computed once per schema into a bitmap of all 65 536 codes, and a question is one index
//! and one bit test, with no allocation and no lookup by name.

use std::fmt;

/// The number of 64-bit words of a [`CodeSet`]: one bit for each of the 65 536 codes.
pub const WORDS: usize = (u16::MAX as usize + 1) / 64;

/// A set of event codes, one bit per code (8 KiB): bit `code % 64` of word `code / 64`.
///
/// Built by compiling a selection against a schema ([`Selection::compile`], [`Patterns::compile`])
/// or from codes ([`FromIterator`]); asked with [`contains`](CodeSet::contains).
///
/// ```
/// use event_format::select::{self, CodeSet};
///
/// let schema = event_format::testing::sample_schema();
/// let pools: CodeSet = select::from_env_text("Pool -Pool:PoolInit", &[&schema])?[0].compile(&schema);
/// let code = |name: &str| schema.event(name).unwrap().code;
/// assert!(!pools.contains(code("PoolInit")));
/// assert!(pools.contains(code("PoolStats")));
/// assert!(!pools.contains(code("ArenaCreate")));
/// # Ok::<(), select::SelectError>(())
/// ```
///
/// [`Selection::compile`]: super::Selection::compile
/// [`Patterns::compile`]: super::Patterns::compile
#[derive(Clone, PartialEq, Eq)]
pub struct CodeSet {
    /// Bit `code & 63` of word `code >> 6` is set when `code` is in the set.
    words: [u64; WORDS],
}

impl CodeSet {
    /// The empty set.
    pub const fn new() -> CodeSet {
        CodeSet { words: [0; WORDS] }
    }

    /// Whether `code` is in the set: one index and one bit test.
    #[inline]
    pub fn contains(&self, code: u16) -> bool {
        self.words[usize::from(code >> 6)] & (1 << (code & 63)) != 0
    }

    /// Adds `code`.
    pub fn insert(&mut self, code: u16) {
        self.words[usize::from(code >> 6)] |= 1 << (code & 63);
    }

    /// Removes `code`.
    pub fn remove(&mut self, code: u16) {
        self.words[usize::from(code >> 6)] &= !(1 << (code & 63));
    }

    /// Adds `code` when `on`, removes it otherwise.
    pub fn set(&mut self, code: u16, on: bool) {
        if on { self.insert(code) } else { self.remove(code) }
    }

    /// Keeps only the codes that `other` holds too.
    pub fn intersect(&mut self, other: &CodeSet) {
        for (word, theirs) in self.words.iter_mut().zip(&other.words) {
            *word &= theirs;
        }
    }

    /// The bits themselves: bit `code % 64` of word `code / 64` (what the recorder copies
    /// into its table of atomic words).
    pub fn words(&self) -> &[u64; WORDS] {
        &self.words
    }

    /// The codes in the set, lowest first.
    pub fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &word)| {
            (0..64u16).filter(move |bit| word & (1 << bit) != 0).map(move |bit| ((i as u16) << 6) | bit)
        })
    }

    /// The number of codes in the set.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set holds no code.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }
}

impl Default for CodeSet {
    fn default() -> CodeSet {
        CodeSet::new()
    }
}

impl fmt::Debug for CodeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter().map(Code)).finish()
    }
}

/// A code as [`CodeSet`]'s `Debug` shows it: in hex.
struct Code(u16);

impl fmt::Debug for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#06x}", self.0)
    }
}

impl FromIterator<u16> for CodeSet {
    fn from_iter<I: IntoIterator<Item = u16>>(codes: I) -> CodeSet {
        let mut set = CodeSet::new();
        set.extend(codes);
        set
    }
}

impl Extend<u16> for CodeSet {
    fn extend<I: IntoIterator<Item = u16>>(&mut self, codes: I) {
        for code in codes {
            self.insert(code);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_its_own_bit() {
        let mut set = CodeSet::new();
        assert!(set.is_empty());
        for code in [0, 1, 0x0010, 63, 64, 0xFEFF, 0xFF00, u16::MAX] {
            assert!(!set.contains(code));
            set.insert(code);
            assert!(set.contains(code));
        }
        assert_eq!(set.len(), 8);
        assert_eq!(set.iter().collect::<Vec<_>>(), [0, 1, 0x0010, 63, 64, 0xFEFF, 0xFF00, u16::MAX]);
        assert!(!set.contains(2) && !set.contains(65) && !set.contains(0xFFFE));
        set.remove(64);
        set.set(0xFF00, false);
        set.set(2, true);
        assert_eq!(set.iter().collect::<Vec<_>>(), [0, 1, 2, 0x0010, 63, 0xFEFF, u16::MAX]);
        assert_eq!(set.words()[0], 0b111 | 1 << 63 | 1 << 16);
    }

    #[test]
    fn intersect_and_collect() {
        let mut a: CodeSet = [1, 2, 3, 0xFF01].into_iter().collect();
        let b: CodeSet = [2, 3, 4, 0xFF01].into_iter().collect();
        a.intersect(&b);
        assert_eq!(a.iter().collect::<Vec<_>>(), [2, 3, 0xFF01]);
        assert_eq!(format!("{a:?}"), "{0x0002, 0x0003, 0xff01}");
        assert_eq!(CodeSet::default(), CodeSet::new());
    }
}
