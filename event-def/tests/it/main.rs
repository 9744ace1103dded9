//! event-def's integration tests, gathered in one test binary (the same layout as the other
//! crates'): the events.def parser and renderer.

mod def;
