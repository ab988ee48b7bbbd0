//! Richer error codes: an error code above `MPI_ERR_LASTCODE` that carries its class and, for a
//! while, its own message, so `MPI_Error_class` maps it back to the class and `MPI_Error_string`
//! says what actually went wrong ("MPI_Send: invalid rank 7 (communicator of size 4)").
//!
//! Layout of such a code (a positive `i32`): bit 30 set (so it is above `MPI_ERR_LASTCODE` =
//! 0x3fffffff), the class in bits 0–6 (every class is below 128), a sequence number in bits 7–29.
//! The class is in the code itself so that it survives the message.
//!
//! Why bounded: a code is a plain integer handed to C code that never says when it is done with
//! it, so the registry cannot know when to forget a message; an unbounded table would grow forever
//! in a program that meets recoverable errors in a loop (`MPI_ERRORS_RETURN` and retry). So the
//! registry keeps the last `capacity` messages in a ring. An older code keeps its class; only its
//! message is gone, and `MPI_Error_string` then returns the class's string with a note saying so.
//! The sequence number wraps after 2^23 codes: a code that old may then show a newer message of
//! the same class (the class is always right).

use super::{ERR_LASTCODE, ErrorClass};
use std::sync::{Mutex, OnceLock, PoisonError};

const DYNAMIC_BIT: i32 = 0x4000_0000;
const CLASS_BITS: u32 = 7;
const CLASS_MASK: i32 = (1 << CLASS_BITS) - 1;
const SEQ_MASK: u32 = (1 << 23) - 1;

/// Longest message kept, in bytes: `MPI_MAX_ERROR_STRING` (512) less the terminating NUL. Longer
/// messages are cut (on a character boundary), which bounds the ring's memory too.
pub const MAX_MESSAGE_BYTES: usize = 511;

/// How many messages the process-wide registry ([`registry`]) keeps.
pub const DEFAULT_CAPACITY: usize = 1024;

/// A bounded, thread-safe table of the messages of the last error codes created.
#[derive(Debug)]
pub struct CodeRegistry {
    ring: Mutex<Ring>,
}

#[derive(Debug)]
struct Slot {
    code: i32,
    message: Box<str>,
}

#[derive(Debug)]
struct Ring {
    /// Slot `seq % len` holds the last code with that sequence number.
    slots: Box<[Option<Slot>]>,
    next_seq: u32,
}

impl CodeRegistry {
    /// A registry keeping the messages of the last `capacity` codes (at least one).
    pub fn new(capacity: usize) -> Self {
        let slots = (0..capacity.max(1)).map(|_| None).collect();
        CodeRegistry { ring: Mutex::new(Ring { slots, next_seq: 0 }) }
    }

    /// How many messages the registry keeps.
    pub fn capacity(&self) -> usize {
        self.lock().slots.len()
    }

    /// A new code of class `class` carrying `message`. `MPI_SUCCESS` has no richer codes: it
    /// returns 0.
    pub fn register(&self, class: ErrorClass, message: &str) -> i32 {
        if class == ErrorClass::Success {
            return 0;
        }
        let message: Box<str> = truncate(message).into();
        let mut ring = self.lock();
        let seq = ring.next_seq;
        ring.next_seq = (seq + 1) & SEQ_MASK;
        let code = DYNAMIC_BIT | ((seq as i32) << CLASS_BITS) | class.code();
        let slot = seq as usize % ring.slots.len();
        ring.slots[slot] = Some(Slot { code, message });
        code
    }

    /// The message `code` was created with, while the ring still holds it.
    pub fn message(&self, code: i32) -> Option<String> {
        let seq = dynamic_parts(code)?.1;
        let ring = self.lock();
        match &ring.slots[seq as usize % ring.slots.len()] {
            Some(slot) if slot.code == code => Some(slot.message.to_string()),
            _ => None,
        }
    }

    /// `MPI_Error_string`: the class's string for a class, `"NAME: message"` for a richer code
    /// still held, the class's string and a note for an older one; `None` for a number that is no
    /// code (the C layer reports that as `MPI_ERR_ARG`).
    pub fn string(&self, code: i32) -> Option<String> {
        let class = error_class(code)?;
        if ErrorClass::from_code(code).is_some() {
            return Some(class.as_str().to_owned());
        }
        Some(match self.message(code) {
            Some(m) => format!("{}: {m}", class.name()),
            None => format!("{} (the details of error code {code} are no longer kept)", class.as_str()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ring> {
        // The ring is consistent between statements: a panic elsewhere cannot leave it half-written.
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `MPI_Error_class`: the class of a class value or of a richer code (even one whose message is
/// gone); `None` for a number that is neither.
pub fn error_class(code: i32) -> Option<ErrorClass> {
    match dynamic_parts(code) {
        Some((class, _)) => Some(class),
        None => ErrorClass::from_code(code),
    }
}

/// The process-wide registry used by [`super::Error::code`] and [`super::Error::from_code`].
pub fn registry() -> &'static CodeRegistry {
    static REGISTRY: OnceLock<CodeRegistry> = OnceLock::new();
    REGISTRY.get_or_init(|| CodeRegistry::new(DEFAULT_CAPACITY))
}

/// `(class, sequence)` of a richer code, `None` for anything else.
fn dynamic_parts(code: i32) -> Option<(ErrorClass, u32)> {
    if code <= ERR_LASTCODE || code & DYNAMIC_BIT == 0 {
        return None;
    }
    let class = ErrorClass::from_code(code & CLASS_MASK).filter(|c| *c != ErrorClass::Success)?;
    Some((class, ((code & !DYNAMIC_BIT) >> CLASS_BITS) as u32))
}

fn truncate(message: &str) -> &str {
    if message.len() <= MAX_MESSAGE_BYTES {
        return message;
    }
    let mut end = MAX_MESSAGE_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    &message[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn codes_are_above_lastcode_and_map_back() {
        let r = CodeRegistry::new(4);
        let code = r.register(ErrorClass::Rank, "MPI_Send: invalid rank 7 (communicator of size 4)");
        assert!(code > ERR_LASTCODE);
        assert_eq!(error_class(code), Some(ErrorClass::Rank));
        assert_eq!(r.message(code).as_deref(), Some("MPI_Send: invalid rank 7 (communicator of size 4)"));
        assert_eq!(
            r.string(code).as_deref(),
            Some("MPI_ERR_RANK: MPI_Send: invalid rank 7 (communicator of size 4)")
        );
        assert_eq!(r.register(ErrorClass::Success, "nothing"), 0);
    }

    #[test]
    fn classes_are_their_own_codes() {
        let r = CodeRegistry::new(1);
        assert_eq!(error_class(14), Some(ErrorClass::Truncate));
        assert_eq!(r.string(14).as_deref(), Some("MPI_ERR_TRUNCATE: message truncated"));
        assert_eq!(r.message(14), None);
        for bad in [-1, 54, 12345, ERR_LASTCODE, DYNAMIC_BIT, DYNAMIC_BIT | 54, i32::MIN] {
            assert_eq!(error_class(bad), None, "{bad:#x}");
            assert_eq!(r.string(bad), None);
        }
    }

    #[test]
    fn old_codes_keep_their_class_but_lose_their_message() {
        let r = CodeRegistry::new(3);
        let codes: Vec<i32> =
            (0..5).map(|i| r.register(ErrorClass::Truncate, &format!("message {i}"))).collect();
        for (i, &code) in codes.iter().enumerate() {
            assert_eq!(error_class(code), Some(ErrorClass::Truncate));
            let expected = (i >= 2).then(|| format!("message {i}"));
            assert_eq!(r.message(code), expected);
        }
        assert_eq!(
            r.string(codes[0]).unwrap(),
            format!(
                "MPI_ERR_TRUNCATE: message truncated (the details of error code {} are no longer kept)",
                codes[0]
            )
        );
        let unique: std::collections::HashSet<_> = codes.iter().collect();
        assert_eq!(unique.len(), codes.len());
    }

    #[test]
    fn sequence_wraps_within_the_code_space() {
        let r = CodeRegistry::new(2);
        r.lock().next_seq = SEQ_MASK;
        let last = r.register(ErrorClass::MpixNoreq, "last");
        let first = r.register(ErrorClass::Arg, "first again");
        assert_eq!(last, i32::MAX & !CLASS_MASK | ErrorClass::MpixNoreq.code());
        assert_eq!(first, DYNAMIC_BIT | ErrorClass::Arg.code());
        assert_eq!(error_class(last), Some(ErrorClass::MpixNoreq));
        assert_eq!(r.message(last).as_deref(), Some("last"));
        assert_eq!(r.message(first).as_deref(), Some("first again"));
    }

    #[test]
    fn long_messages_are_cut_on_a_char_boundary() {
        let r = CodeRegistry::new(1);
        let long = "é".repeat(400); // 800 bytes
        let kept = r.message(r.register(ErrorClass::Other, &long)).unwrap();
        assert_eq!(kept.len(), 510);
        assert!(long.starts_with(&kept));
        assert_eq!(CodeRegistry::new(0).capacity(), 1);
    }

    #[test]
    fn concurrent_registration() {
        const THREADS: usize = 4;
        const PER_THREAD: usize = 500;
        let r = Arc::new(CodeRegistry::new(THREADS * PER_THREAD));
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let r = Arc::clone(&r);
                std::thread::spawn(move || {
                    let class = ErrorClass::ALL[t + 1];
                    (0..PER_THREAD)
                        .map(|i| {
                            let msg = format!("thread {t} error {i}");
                            let code = r.register(class, &msg);
                            // Readers run while other threads write.
                            assert_eq!(r.message(code).as_deref(), Some(msg.as_str()));
                            (code, class, msg)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let all: Vec<_> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
        let unique: std::collections::HashSet<_> = all.iter().map(|(c, _, _)| *c).collect();
        assert_eq!(unique.len(), THREADS * PER_THREAD);
        for (code, class, msg) in all {
            assert_eq!(error_class(code), Some(class));
            assert_eq!(r.message(code), Some(msg)); // the ring is big enough for all of them
        }
    }

    #[test]
    fn concurrent_eviction_never_mixes_messages() {
        let r = Arc::new(CodeRegistry::new(8));
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let r = Arc::clone(&r);
                std::thread::spawn(move || {
                    for i in 0..2000 {
                        let msg = format!("{t}/{i}");
                        let code = r.register(ErrorClass::Intern, &msg);
                        // Either still ours or evicted: never another code's message.
                        if let Some(m) = r.message(code) {
                            assert_eq!(m, msg);
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    }
}
