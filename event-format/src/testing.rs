//! Small, deterministic sample data for tests, examples and documentation: a schema that
//! uses every format letter, and a stream of it with several threads, blocks, built-in events
//! and a time extension. Not meant for production use.

use crate::codec::wire::{
    BlockHeader, BlockWriter, Clock, ClockSource, Header, MIN_BLOCK_SIZE, Order, Producer, Text, Value,
};
use event_def::builtin;
use event_def::schema::Schema;

/// The sample's events.def text.
pub const SAMPLE_DEF: &str = r#"VERSION(1, 2, 3)
KIND(Arena, "arenas")
KIND(Pool, "pools")
RELATION(ArenaCreate, 0x0001, TRUE, Arena, PAW, arena, base, size)
RELATION(PoolInit, 0x0002, TRUE, Pool, PPSU, pool, arena, class, align)
RELATION(PoolStats, 0x0003, FALSE, Pool, PIDB, pool, balance, load, full)
RELATION(Poll, 0x0004, FALSE, Arena, 0)
RETIRED(OldPoll, 0x0005)
"#;

/// The sample's schema.
pub fn sample_schema() -> Schema {
    match event_def::def::parse(SAMPLE_DEF, "sample.def") {
        Ok(schema) => schema,
        Err(errors) => unreachable!("the sample events.def is valid: {errors}"),
    }
}

/// The sample's header: a deterministic clock of 1 GHz starting at tick 1000, fixed
/// producer facts, the smallest block size.
pub fn sample_header(order: Order) -> Header {
    let clock = Clock {
        source: ClockSource::Deterministic,
        ticks_per_second: 1_000_000_000,
        ref_ticks: 1000,
        ref_wall_ns: 1_700_000_000_000_000_000,
        start_ticks: 1000,
    };
    let producer = Producer {
        pointer_width: 8,
        arch: "x86_64".to_owned(),
        os: "linux".to_owned(),
        pid: 4242,
        program: "sample".to_owned(),
        host: "sample-host".to_owned(),
        start_wall_ns: 1_700_000_000_000_000_000,
    };
    let mut header = Header::new(sample_schema(), MIN_BLOCK_SIZE, clock, producer);
    header.order = order;
    header
}

/// A whole sample stream in `order`: two threads; thread 1 fills more than one block.
pub fn sample_stream(order: Order) -> Vec<u8> {
    let header = sample_header(order);
    let mut out = match header.encode() {
        Ok(bytes) => bytes,
        Err(e) => unreachable!("the sample header encodes: {e}"),
    };
    let size = header.block_size;
    let mut thread1 = BlockWriter::new(order, size, &BlockHeader { thread: 1, base_time: 1000, ..Default::default() });
    let mut sequence = 0;
    let mut push = |block: &mut BlockWriter, out: &mut Vec<u8>, code, time, values: &[Value<'_>]| {
        if block.push(code, time, values).is_err() {
            sequence += 1;
            let next = BlockWriter::new(
                order,
                size,
                &BlockHeader { thread: 1, sequence, base_time: time, ..Default::default() },
            );
            out.extend(std::mem::replace(block, next).finish());
            assert!(block.push(code, time, values).is_ok(), "a sample record fits an empty block");
        }
    };
    push(&mut thread1, &mut out, builtin::THREAD_NAME, 1000, &[Value::Word(1), Value::Str(Text::new("main"))]);
    push(
        &mut thread1,
        &mut out,
        0x0001,
        1200,
        &[Value::Pointer(0x7f00_0000_1000), Value::Address(0x7f00_0000_0000), Value::Word(1 << 20)],
    );
    push(&mut thread1, &mut out, builtin::INTERN, 1300, &[Value::Word(1), Value::Str(Text::new("the arena"))]);
    push(&mut thread1, &mut out, builtin::LABEL, 1300, &[Value::Address(0x7f00_0000_1000), Value::Word(1)]);
    for i in 0..40u32 {
        let t = 2000 + u64::from(i) * 250;
        push(
            &mut thread1,
            &mut out,
            0x0002,
            t,
            &[
                Value::Pointer(0x5000 + u64::from(i) * 0x40),
                Value::Pointer(0x7f00_0000_1000),
                Value::Str(Text::new(if i % 2 == 0 { "AMC \"mobile\"" } else { "MVFF\tfirst-fit" })),
                Value::Unsigned(8 << (i % 4)),
            ],
        );
        push(
            &mut thread1,
            &mut out,
            0x0003,
            t + 100,
            &[
                Value::Pointer(0x5000 + u64::from(i) * 0x40),
                Value::Signed(i64::from(i) - 20),
                Value::Double(f64::from(i) / 8.0),
                Value::Bool(i % 3 == 0),
            ],
        );
    }
    // A gap longer than 2^32 ticks: the writer adds a TimeExtend record.
    push(&mut thread1, &mut out, 0x0004, 20_000_000_000, &[]);
    push(&mut thread1, &mut out, builtin::MESSAGE, 20_000_000_500, &[Value::Str(Text::new("done, caf\u{e9}"))]);
    out.extend(thread1.finish());

    let mut thread2 =
        BlockWriter::new(order, size, &BlockHeader { thread: 2, base_time: 1500, lost: 3, ..Default::default() });
    for (code, time, values) in [
        (builtin::THREAD_NAME, 1500, vec![Value::Word(2), Value::Str(Text::new("worker"))]),
        (builtin::DROPPED, 1500, vec![Value::Word(2), Value::Word(3)]),
        (0x0004, 2100, vec![]),
        (builtin::CLOCK_SYNC, 2500, vec![Value::Word(2500), Value::Signed(1_700_000_000_000_001_500)]),
    ] {
        if let Err(e) = thread2.push(code, time, &values) {
            unreachable!("thread 2's few records fit one block: {e}");
        }
    }
    out.extend(thread2.finish());
    out
}
