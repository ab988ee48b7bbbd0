//! Property tests of the PMI wire parsers: arbitrary, truncated and oversized input never panics
//! and never makes a decoder wait forever; every valid message round-trips; errors quote the input.

use proptest::prelude::*;
use tools::pmi::wire::{
    Decoder, Framing, MAX_MESSAGE, Message, decode_value, encode_value, parse_v1, parse_v2_body,
};

fn key() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_/-]{1,16}"
}

/// Values safe on both wires.
fn value() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::char::range('!', '~'), 1..40)
        .prop_map(|v| v.into_iter().filter(|c| !matches!(c, '=' | ';' | '\\' | '#')).collect::<String>())
        .prop_filter("non-empty", |s| !s.is_empty())
}

fn message() -> impl Strategy<Value = Message> {
    ("[a-z_-]{1,12}", proptest::collection::vec((key(), value()), 0..8))
        .prop_map(|(cmd, attrs)| Message { cmd, attrs })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_v1(&bytes);
        let _ = parse_v2_body(&bytes);
        for framing in [Framing::V1, Framing::V2] {
            let mut d = Decoder::new();
            d.framing = framing;
            d.feed(&bytes);
            // Drain: every call makes progress or stops; no infinite loop, no panic.
            for _ in 0..bytes.len() + 1 {
                match d.next_message() {
                    Ok(Some(_)) => continue,
                    Ok(None) | Err(_) => break,
                }
            }
            let _ = d.finish();
        }
    }

    #[test]
    fn valid_messages_round_trip(m in message()) {
        prop_assert_eq!(parse_v1(m.encode_v1().as_bytes()).unwrap(), m.clone());
        let v2 = m.encode_v2();
        let mut d = Decoder::new();
        d.framing = Framing::V2;
        d.feed(&v2);
        prop_assert_eq!(d.next_message().unwrap(), Some(m));
    }

    #[test]
    fn truncated_messages_are_reported_not_parsed(m in message(), cut in 1usize..40) {
        for (framing, bytes) in [(Framing::V1, m.encode_v1().into_bytes()), (Framing::V2, m.encode_v2())] {
            let cut = cut.min(bytes.len() - 1);
            let mut d = Decoder::new();
            d.framing = framing;
            d.feed(&bytes[..bytes.len() - cut]);
            // Never a half message: either "need more" or an error.
            prop_assert!(!matches!(d.next_message(), Ok(Some(_))));
            let e = d.finish().unwrap_err();
            prop_assert!(e.to_string().contains("truncated"));
        }
    }

    #[test]
    fn corrupted_fields_are_errors_quoting_the_line(m in message(), pos in 0usize..200, byte in prop::sample::select(vec![b'=', b' ', 0u8, b'\n', 0xffu8, b';'])) {
        let mut line = m.encode_v1().into_bytes();
        let pos = pos % line.len();
        line[pos] = byte;
        if let Err(e) = parse_v1(&line) {
            prop_assert!(!e.quoted.is_empty() || line.is_empty());
        }
    }

    #[test]
    fn hex_values_round_trip(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        prop_assert_eq!(decode_value(&encode_value(&bytes)).unwrap(), bytes);
    }
}

#[test]
fn oversized_input_is_an_error_not_a_growing_buffer() {
    let mut d = Decoder::new();
    let chunk = vec![b'a'; 4096];
    let mut saw_error = false;
    for _ in 0..(MAX_MESSAGE / 4096 + 2) {
        d.feed(&chunk);
        if let Err(e) = d.next_message() {
            assert!(e.to_string().contains("no newline"), "{e}");
            saw_error = true;
            break;
        }
    }
    assert!(saw_error);
    let mut d = Decoder::new();
    d.framing = Framing::V2;
    d.feed(b"999999cmd=x;");
    assert!(d.next_message().unwrap_err().to_string().contains("out of range"));
}
