//! Records `ArenaCreate` (always TRUE) and `ObjectAlloc` (always FALSE) and prints which were
//! recorded and which evaluated their arguments: built by tests/it/varieties.rs once per variety.
#![deny(warnings)]

event_runtime::include_events!("../../events.def");

use event_format::decode::{Catalog, Decoder, Entry};

fn main() {
    let mut evaluated: Vec<&str> = Vec::new();
    let recording = match event_runtime::Recorder::new().start() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("event-varieties: {e}");
            std::process::exit(1);
        }
    };
    event!(
        ArenaCreate,
        {
            evaluated.push("ArenaCreate");
            0x1000usize
        },
        0x2000usize,
        4096u64
    );
    event!(
        ObjectAlloc,
        {
            evaluated.push("ObjectAlloc");
            0x1000usize
        },
        0x3000usize,
        48u64,
        1u32
    );
    let stream = recording.stop().unwrap();

    let mut recorded = Vec::new();
    let mut decoder = Decoder::new(&stream[..]).expect("the recorder's stream decodes");
    let catalog = Catalog::new(&decoder.header().sets);
    while let Some(block) = decoder.next_block() {
        for entry in block.expect("no damage").entries(&catalog) {
            if let Entry::Event(event) = entry
                && !event.desc.is_builtin()
            {
                recorded.push(event.desc.name.clone());
            }
        }
    }
    println!("recorded={recorded:?} evaluated={evaluated:?}");
}
