//! event-dump's `--filter` language; a parsed filter's Display re-parses to the same.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| event_dump::fuzzing::fuzz_filter(data));
