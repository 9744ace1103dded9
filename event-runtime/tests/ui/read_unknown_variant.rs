// The typed reader: matching on an event that events.def does not have.
event_runtime::include_events!("events.def");

use event_runtime::read::Item;

fn main() {
    let mut reader = events::from_reader(&[][..]).unwrap();
    while let Some(item) = reader.next_item() {
        if let Item::Event(_, events::Event::PoolFree { pool }) = item {
            println!("{pool}");
        }
    }
}
