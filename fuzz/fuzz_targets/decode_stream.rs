//! The stream decoder and the ring-file reader on arbitrary bytes, as they are and with
//! their CRCs repaired.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| event_format::fuzzing::fuzz_decode(data));
