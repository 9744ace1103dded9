//! The events.def parser on arbitrary text; a parsed schema renders and re-parses equal.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| event_format::fuzzing::fuzz_def(data));
