//! The bridge that generated code calls. **Not a stable API**: only `include_events!` and
//! `event!` may use it, and it changes without notice.

use crate::emit::line::{LINE, Line};
pub use crate::event_set::{EventSet, SETS};
pub use event_format::schema::Version;
/// The writer of a record's arguments that generated code fills, one method per format letter.
pub use event_format::wire::ArgWriter as Cursor;
pub use event_format::wire::Text;
pub use event_macros::__emit_event as emit_event;
/// The distributed slice's crate, for `#[linkme(crate = ...)]`: a crate that includes
/// events.def needs no `linkme` dependency of its own.
pub use linkme;
/// The control bits' type, for the static that `include_events!` generates.
pub use std::sync::atomic::AtomicU64;

/// Whether events whose `always` flag is FALSE are compiled in (neither `hot` nor `rash`).
pub const COOL: bool = !cfg!(any(feature = "hot", feature = "rash"));
/// Whether events whose `always` flag is TRUE are compiled in (not `rash`).
pub const HOT: bool = !cfg!(feature = "rash");

/// What `event!`'s test found for an event ([`route`]): off, or on and which path its record
/// takes. Decided once, before any argument is evaluated, and passed on to [`emit_routed`]:
/// the divert word is loaded once an event.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Route {
    /// Not recorded: its arguments are not evaluated.
    Off,
    /// Recorded by the thread buffer, nothing else looks at it (its bit clear in the divert
    /// word).
    Common,
    /// Recorded by the cold path: its bit is set in the divert word (a capture runs, or a
    /// trigger or a pin watches it, or a `post=` window is open, or it is limited or a
    /// histogram counts it) and the cold half of the test (`admit::admit`) said yes:
    /// recorded, or, when its limit did not keep it and a histogram counts it, only measured
    /// (`aggregate`'s module docs).
    Diverted,
}

/// A set's control bits as `include_events!` generates them (its `events::__BITS`): bit
/// `j % 64` of word `j / 64` is event `j`'s (`EventSet`'s docs), and before them, on the
/// same cache line, the address of the line of process-wide words that an enabled event
/// reads next (the divert word and the recorder's generation, `emit::line`).
///
/// The address is always that one line's. It is kept here because generated code that read
/// the runtime's static itself loaded its address from the global offset table first, in a
/// program built as a position-independent executable (the default): one more cache line
/// that an event misses on after the program's own work emptied the caches (BENCHMARKS.md,
/// "the cache lines an enabled event reads"). Read from here, it comes with the control word,
/// on its line.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct Bits<const N: usize> {
    line: &'static Line,
    /// The control bits, one per event by index (`EventSet`'s, which the recorder sets).
    pub words: [AtomicU64; N],
}

impl<const N: usize> Bits<N> {
    /// Every bit clear: the recorder sets them.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Bits<N> {
        Bits { line: &LINE, words: [const { AtomicU64::new(0) }; N] }
    }
}

/// Whether event `index` of the set whose control bits are `bits` (its `events::__BITS`)
/// is recorded now, and by which path ([`Route`]). Off: one load, a test and a branch. On:
/// the divert word's bit of the event tested too (one load, a test and a branch), set while
/// a test captures (`capture`'s module docs: every set's bits are then forced on and the
/// cold path decides, before any argument is evaluated) and for the events a trigger or a
/// pin watches (`trigger`'s module docs, "Cost").
#[inline(always)]
pub fn route<const N: usize>(bits: &'static Bits<N>, index: u16) -> Route {
    // Relaxed: see `control`'s module docs.
    let word = bits.words.get(usize::from(index >> 6)).map_or(0, |w| w.load(std::sync::atomic::Ordering::Relaxed));
    let bit = 1 << (index & 63);
    if word & bit == 0 {
        return Route::Off;
    }
    if crate::emit::divert::any_at(bits.line) & bit == 0 {
        return Route::Common;
    }
    // A `bool`, as the capture's answer was: a `Route` from out of line would be matched
    // again in `emit_routed`, and the common path pays for the arguments' closure before it
    // (7 instructions an event, callgrind).
    if crate::emit::admit::admit(&bits.words, index) { Route::Diverted } else { Route::Off }
}

/// Records event `index` (its position in `set`, whose control bits are `bits`) on this
/// thread by the path that `route` (what [`route`] said, never [`Route::Off`]) names:
/// `fixed` bytes of fixed-size arguments and the string arguments `strs`, all written by
/// `fill`. The recording writes it with its wire code, the first of the range it gave `set`
/// plus `index`; a set that it does not hold has its event refused and counted. What
/// `event!` calls.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn emit_routed<const N: usize>(
    route: Route,
    bits: &'static Bits<N>,
    set: &'static EventSet,
    index: u16,
    fixed: usize,
    strs: &[Text<'_>],
    fill: impl FnOnce(&mut Cursor<'_>),
) {
    if route == Route::Common {
        return crate::emit::buffer::emit_event_at(bits.line, set, index, fixed, strs, fill);
    }
    // Diverted: a test's capture takes this thread's events (`capture`'s module docs);
    // otherwise the recording writes it and looks at it. One call out of line, so that
    // the diverted path takes no register of the common one (`diverted`).
    diverted(set, index, fixed, strs, fill)
}

/// Records event `index` of `set` as [`emit_routed`] does, the path chosen by the divert
/// word as it is now: for a caller that made no [`route`] test of its own.
#[inline(always)]
pub fn emit(set: &'static EventSet, index: u16, fixed: usize, strs: &[Text<'_>], fill: impl FnOnce(&mut Cursor<'_>)) {
    if crate::emit::divert::any() & (1 << (index & 63)) == 0 {
        return crate::emit::buffer::emit_event(set, index, fixed, strs, fill);
    }
    diverted(set, index, fixed, strs, fill)
}

/// An event diverted by its bit in the divert word: into this thread's capture when it has
/// one (`capture_buffer::try_emit`); else recorded, then looked at (`buffer::emit_watched`). Out of
/// line and cold: the common path keeps its registers (inlined into a caller's loop, the
/// diverted path held two of them, and the common path spilled: 2 instructions an event).
///
/// An event whose limit did not keep it but that a histogram counts is not recorded: its
/// arguments go to the histograms (`Aggregates::measure_unkept`).
#[cold]
#[inline(never)]
fn diverted(set: &'static EventSet, index: u16, fixed: usize, strs: &[Text<'_>], fill: impl FnOnce(&mut Cursor<'_>)) {
    if let Some(fill) = crate::emit::capture_buffer::try_emit(set, index, fixed, strs, fill) {
        crate::emit::buffer::emit_watched(set, index, fixed, strs, fill)
    }
}

/// Whether `module_path` (the caller's `module_path!()`) is a crate root: a module below it
/// has a `::` in its path. `include_events!` stops the build with its rule when it is not.
pub const fn at_crate_root(module_path: &str) -> bool {
    let b = module_path.as_bytes();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b':' && b[i + 1] == b':' {
            return false;
        }
        i += 1;
    }
    true
}

/// A string argument.
#[inline(always)]
pub fn text(s: &str) -> Text<'_> {
    Text::new(s)
}

/// Values accepted for a `P` (pointer) parameter.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not accepted for a `P` (pointer) parameter of an event",
    label = "expected a pointer: `*const T`, `*mut T`, `&T` or `usize`",
    note = "format letter P takes `*const T`, `*mut T`, `&T` or `usize`"
)]
pub trait ArgP {
    /// The value on the wire.
    fn arg_p(self) -> u64;
}
impl<T: ?Sized> ArgP for *const T {
    #[inline(always)]
    fn arg_p(self) -> u64 {
        self.cast::<()>() as usize as u64
    }
}
impl<T: ?Sized> ArgP for *mut T {
    #[inline(always)]
    fn arg_p(self) -> u64 {
        self.cast::<()>() as usize as u64
    }
}
impl<T: ?Sized> ArgP for &T {
    #[inline(always)]
    fn arg_p(self) -> u64 {
        (self as *const T).cast::<()>() as usize as u64
    }
}
impl ArgP for usize {
    #[inline(always)]
    fn arg_p(self) -> u64 {
        self as u64
    }
}

/// Values accepted for an `A` (address) parameter.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not accepted for an `A` (address) parameter of an event",
    label = "expected an address: `usize`, `u64`, `*const T`, `*mut T` or `&T`",
    note = "format letter A takes `usize`, `u64` or a pointer"
)]
pub trait ArgA {
    /// The value on the wire.
    fn arg_a(self) -> u64;
}
impl ArgA for u64 {
    #[inline(always)]
    fn arg_a(self) -> u64 {
        self
    }
}
impl<T: ArgP> ArgA for T {
    #[inline(always)]
    fn arg_a(self) -> u64 {
        self.arg_p()
    }
}

/// Values accepted for a `W` (word) parameter.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not accepted for a `W` (word) parameter of an event",
    label = "expected `u64`, `usize`, `u32`, `u16` or `u8`",
    note = "format letter W takes `u64`, `usize`, `u32`, `u16` or `u8`; convert other values explicitly"
)]
pub trait ArgW {
    /// The value on the wire.
    fn arg_w(self) -> u64;
}
macro_rules! word {
    ($($t:ty),*) => {$(
        impl ArgW for $t {
            #[inline(always)]
            fn arg_w(self) -> u64 {
                self as u64
            }
        }
    )*};
}
word!(u64, usize, u32, u16, u8);

/// Values accepted for a `U` (unsigned 32-bit) parameter.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not accepted for a `U` (unsigned 32-bit) parameter of an event",
    label = "expected `u32`, `u16` or `u8`",
    note = "format letter U takes `u32`, `u16` or `u8`; use W for 64-bit values"
)]
pub trait ArgU {
    /// The value on the wire.
    fn arg_u(self) -> u32;
}
macro_rules! unsigned {
    ($($t:ty),*) => {$(
        impl ArgU for $t {
            #[inline(always)]
            fn arg_u(self) -> u32 {
                u32::from(self)
            }
        }
    )*};
}
unsigned!(u32, u16, u8);

/// Values accepted for an `I` (signed) parameter.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not accepted for an `I` (signed integer) parameter of an event",
    label = "expected `i64`, `i32`, `i16`, `i8` or `isize`",
    note = "format letter I takes `i64`, `i32`, `i16`, `i8` or `isize`"
)]
pub trait ArgI {
    /// The value on the wire.
    fn arg_i(self) -> i64;
}
macro_rules! signed {
    ($($t:ty),*) => {$(
        impl ArgI for $t {
            #[inline(always)]
            fn arg_i(self) -> i64 {
                self as i64
            }
        }
    )*};
}
signed!(i64, i32, i16, i8, isize);

/// Values accepted for a `D` (double) parameter.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not accepted for a `D` (double) parameter of an event",
    label = "expected `f64` or `f32`",
    note = "format letter D takes `f64` or `f32`"
)]
pub trait ArgD {
    /// The value on the wire.
    fn arg_d(self) -> f64;
}
impl ArgD for f64 {
    #[inline(always)]
    fn arg_d(self) -> f64 {
        self
    }
}
impl ArgD for f32 {
    #[inline(always)]
    fn arg_d(self) -> f64 {
        f64::from(self)
    }
}

/// Values accepted for a `B` (bool) parameter.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not accepted for a `B` (bool) parameter of an event",
    label = "expected `bool`",
    note = "format letter B takes `bool`"
)]
pub trait ArgB {
    /// The value on the wire.
    fn arg_b(self) -> bool;
}
impl ArgB for bool {
    #[inline(always)]
    fn arg_b(self) -> bool {
        self
    }
}

/// Values accepted for an `S` (string) parameter: anything `AsRef<str>`, by reference.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not accepted for an `S` (string) parameter of an event",
    label = "expected a string: `&str`, `&String` or anything `AsRef<str>`",
    note = "format letter S takes `&str`, `&String` or anything that implements `AsRef<str>`"
)]
pub trait ArgS {
    /// The value on the wire.
    fn arg_s(&self) -> &str;
}
impl<T: AsRef<str> + ?Sized> ArgS for T {
    #[inline(always)]
    fn arg_s(&self) -> &str {
        self.as_ref()
    }
}

/// What the typed reader's generated `decode` calls (`read`'s module docs): a value of each
/// letter's Rust type, `None` for a value of another letter.
pub mod value {
    use event_format::wire::{Text, Value};

    /// One function per letter: the value when it is that letter's, else `None`.
    macro_rules! letters {
        ($($letter:literal $name:ident: $variant:ident -> $t:ty;)*) => {$(
            #[doc = $letter]
            #[inline]
            pub fn $name(v: Option<Value<'_>>) -> Option<$t> {
                if let Some(Value::$variant(x)) = v { Some(x) } else { None }
            }
        )*};
    }
    letters! {
        "`P`" p: Pointer -> u64;
        "`A`" a: Address -> u64;
        "`W`" w: Word -> u64;
        "`U`" u: Unsigned -> u32;
        "`I`" i: Signed -> i64;
        "`D`" d: Double -> f64;
        "`B`" b: Bool -> bool;
        "`S`" s: Str -> Text<'_>;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A set's control bits start a cache line, and keep on it the address of the recorder's
    /// own words that an enabled event reads next.
    #[test]
    fn the_control_bits_keep_the_recorders_line_on_theirs() {
        static BITS: Bits<2> = Bits::new();
        assert!(std::ptr::eq(BITS.line, &LINE));
        let base = &BITS as *const Bits<2> as usize;
        assert_eq!(base % 64, 0);
        assert_eq!(&BITS.words[0] as *const AtomicU64 as usize / 64, base / 64);
        assert_eq!(&BITS.line as *const &Line as usize / 64, base / 64);
    }
}
