//! The filter language (event-dump's `--filter`); a parsed filter's Display re-parses to the same.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| event_format::fuzzing::fuzz_filter(data));
