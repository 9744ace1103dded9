//! Color on a terminal (`--color auto|always|never`): event names, thread ids and warnings
//! stand out in a long dump, as in `ls`, `grep` and `cargo`. Only what a person reads is
//! colored: the text format and the reports, never JSON or CSV, which scripts read.
//!
//! `auto` (the default) colors a stream only when it is a terminal and `NO_COLOR` is unset or
//! empty (no-color.org); `always` colors whatever it is written to; `never` writes exactly
//! the bytes the plain text has. So a pipe, a file or a test gets the plain text by default.

use std::io::IsTerminal;

/// When to color, as `--color` says.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum ColorChoice {
    /// On a terminal, unless NO_COLOR is set.
    #[default]
    Auto,
    /// Always, even into a pipe or a file.
    Always,
    /// Never.
    Never,
}

/// What a piece of text is, for its color.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Style {
    /// An event's `Kind.Name`.
    Event,
    /// A thread id (`T3`) and its name.
    Thread,
    /// A warning: what could not be shown, what was lost.
    Warning,
    /// An error's prefix.
    Error,
}

impl Style {
    /// The SGR sequence that starts the style.
    fn start(self) -> &'static str {
        match self {
            Style::Event => "\x1b[36m",
            Style::Thread => "\x1b[35m",
            Style::Warning => "\x1b[33m",
            Style::Error => "\x1b[1;31m",
        }
    }
}

/// The SGR sequence that ends every style.
const RESET: &str = "\x1b[0m";

/// Whether one output stream is colored; `Palette::default()` is plain.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Palette {
    on: bool,
}

impl Palette {
    /// The palette for stdout under `choice`.
    pub(crate) fn stdout(choice: ColorChoice) -> Palette {
        Palette::decide(choice, std::io::stdout().is_terminal(), no_color())
    }

    /// The palette for stderr under `choice`.
    pub(crate) fn stderr(choice: ColorChoice) -> Palette {
        Palette::decide(choice, std::io::stderr().is_terminal(), no_color())
    }

    /// The rule itself: `always` colors, `never` does not, `auto` colors a terminal unless
    /// NO_COLOR says not to.
    fn decide(choice: ColorChoice, terminal: bool, no_color: bool) -> Palette {
        let on = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => terminal && !no_color,
        };
        Palette { on }
    }

    /// Starts `style` in `out` (nothing when plain).
    pub(crate) fn start(self, out: &mut String, style: Style) {
        if self.on {
            out.push_str(style.start());
        }
    }

    /// Ends the style started last (nothing when plain).
    pub(crate) fn end(self, out: &mut String) {
        if self.on {
            out.push_str(RESET);
        }
    }

    /// [`Palette::start`] for a line written as bytes.
    pub(crate) fn start_bytes(self, out: &mut Vec<u8>, style: Style) {
        if self.on {
            out.extend_from_slice(style.start().as_bytes());
        }
    }

    /// [`Palette::end`] for a line written as bytes.
    pub(crate) fn end_bytes(self, out: &mut Vec<u8>) {
        if self.on {
            out.extend_from_slice(RESET.as_bytes());
        }
    }

    /// `text` in `style`, as a new string.
    pub(crate) fn paint(self, style: Style, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + 12);
        self.start(&mut out, style);
        out.push_str(text);
        self.end(&mut out);
        out
    }
}

/// Whether NO_COLOR asks for no color: set to anything but the empty string.
fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_colors_a_terminal_unless_no_color() {
        assert!(Palette::decide(ColorChoice::Auto, true, false).on);
        assert!(!Palette::decide(ColorChoice::Auto, true, true).on, "NO_COLOR");
        assert!(!Palette::decide(ColorChoice::Auto, false, false).on, "a pipe");
        assert!(Palette::decide(ColorChoice::Always, false, true).on, "--color always wins");
        assert!(!Palette::decide(ColorChoice::Never, true, false).on);
    }

    #[test]
    fn plain_paints_nothing() {
        assert_eq!(Palette::default().paint(Style::Event, "Pool.PoolInit"), "Pool.PoolInit");
        let on = Palette { on: true };
        assert_eq!(on.paint(Style::Thread, "T3"), "\x1b[35mT3\x1b[0m");
    }
}
