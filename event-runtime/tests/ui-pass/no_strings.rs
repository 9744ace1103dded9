// The typed reader of a set without strings: `events::Event` has no lifetime, and a match on
// every variant is exhaustive.
event_runtime::include_events!("events.def");

fn describe(event: events::Event) -> String {
    match event {
        events::Event::Collect { bytes, seconds, full } => format!("{bytes} {seconds} {full}"),
        events::Event::Tick => "tick".to_owned(),
    }
}

fn main() {
    let mut reader = events::from_reader(&[][..]).map_err(|e| e.to_string());
    if let Ok(reader) = &mut reader {
        while let Some(item) = reader.next_item() {
            if let event_runtime::read::Item::Event(_, event) = item {
                println!("{}", describe(event));
            }
        }
    }
    let _: Option<events::Item<'static>> = None;
}
