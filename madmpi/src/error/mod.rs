//! MPI errors: the error classes ([`ErrorClass`], MPICH's numbers), the Rust API's [`Error`]
//! (a class and a message), richer error codes that carry their message ([`CodeRegistry`]), the
//! classes and codes programs add ([`UserErrors`]), and error handlers as data
//! ([`ErrhandlerKind`], [`ErrhandlerRegistry`]). [`class_of_code`] and [`error_string`] answer
//! `MPI_Error_class` and `MPI_Error_string` for all of them.
//!
//! This module owns the numbering of classes and codes and their strings. It must not invoke error
//! handlers nor know communicators: the communicator layer decides when a handler runs, and the C
//! layer maps handles and fills `MPI_Error_string`'s buffer.

mod class;
mod codes;
mod handler;
mod user;

pub use class::{ERR_LASTCODE, ErrorClass};
pub use codes::{CodeRegistry, DEFAULT_CAPACITY, MAX_MESSAGE_BYTES, error_class, registry};
pub use handler::{ErrhandlerId, ErrhandlerKind, ErrhandlerRegistry};
pub use user::{UserClass, UserErrors, user_errors};

/// `MPI_Error_class`: the class of a predefined class, a richer code or a user class or code;
/// `None` for a number that is none of them.
pub fn class_of_code(code: i32) -> Option<i32> {
    match user_errors().class_of(code) {
        Some(class) => Some(class.code()),
        None => error_class(code).map(ErrorClass::code),
    }
}

/// `MPI_Error_string`: the string of a predefined class, a richer code or a user class or code
/// (empty when the program added none); `None` for a number that is none of them.
pub fn error_string(code: i32) -> Option<String> {
    user_errors().string(code).or_else(|| registry().string(code))
}

use std::fmt;
use std::sync::OnceLock;

/// An MPI error: its class and what went wrong, e.g. class [`ErrorClass::Rank`] and
/// `"MPI_Send: invalid rank 7 (communicator of size 4)"`. Each class has a constructor named
/// after it ([`Error::rank`], [`Error::truncate`], [`Error::datatype`] for `MPI_ERR_TYPE`, ...).
#[derive(Clone, Debug)]
pub struct Error {
    class: ErrorClass,
    message: String,
    /// The code handed to C for this error: set by [`Error::from_code`] (so a code a user
    /// callback returned goes back unchanged) or on the first [`Error::code`].
    code: OnceLock<i32>,
}

/// A `Result` whose error is an MPI [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error of `class`; an empty message means "nothing more than the class".
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        Error { class, message: message.into(), code: OnceLock::new() }
    }

    /// The error class.
    pub fn class(&self) -> ErrorClass {
        self.class
    }

    /// The specific message (may be empty).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The error code to return to C: the class itself when there is no message, otherwise a
    /// richer code from the process-wide [`registry`] (created on the first call, then the same).
    pub fn code(&self) -> i32 {
        *self.code.get_or_init(|| {
            if self.message.is_empty() {
                self.class.code()
            } else {
                registry().register(self.class, &self.message)
            }
        })
    }

    /// Whether this error's code is already fixed: it was handed out by [`Error::code`], or the
    /// error comes from [`Error::from_code`] (a layer that names errors must then keep it).
    pub fn has_code(&self) -> bool {
        self.code.get().is_some()
    }

    /// The error a code stands for: a class, a richer code (with its message while the registry
    /// keeps it), or any other number, which a user callback may return: class
    /// [`ErrorClass::Unknown`]. [`Error::code`] gives `code` back in every case.
    pub fn from_code(code: i32) -> Self {
        let (class, message) = match (error_class(code), user_errors().class_of(code)) {
            (Some(class), _) if ErrorClass::from_code(code).is_some() => (class, String::new()),
            (Some(class), _) => (class, registry().message(code).unwrap_or_default()),
            // A user code keeps its predefined class if it has one; a user class has no
            // variant here, so it is `Unknown` with the user's string.
            (None, Some(user)) => {
                let class = match user {
                    UserClass::Predefined(class) => class,
                    UserClass::User(_) => ErrorClass::Unknown,
                };
                let text = user_errors().string(code).unwrap_or_default();
                (class, format!("user-defined error code {code}: {text}"))
            }
            (None, None) => (ErrorClass::Unknown, format!("unknown error code {code}")),
        };
        Error { class, message, code: OnceLock::from(code) }
    }
}

impl From<ErrorClass> for Error {
    fn from(class: ErrorClass) -> Self {
        Error::new(class, "")
    }
}

/// A datatype engine error as the MPI error it stands for (an overflow is `MPI_ERR_ARG`, as in
/// MPICH).
impl From<crate::datatype::TypeError> for Error {
    fn from(e: crate::datatype::TypeError) -> Self {
        use crate::datatype::ErrorKind;
        let class = match e.kind {
            ErrorKind::Count => ErrorClass::Count,
            ErrorKind::Arg | ErrorKind::Overflow => ErrorClass::Arg,
            ErrorKind::Type => ErrorClass::Type,
            ErrorKind::Truncate => ErrorClass::Truncate,
            ErrorKind::Conversion => ErrorClass::Conversion,
            ErrorKind::Other => ErrorClass::Other,
        };
        Error::new(class, e.msg)
    }
}

/// Two errors are equal when class and message are (the code is only how C names them).
impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        self.class == other.class && self.message == other.message
    }
}

impl Eq for Error {}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message.is_empty() {
            f.write_str(self.class.as_str())
        } else {
            write!(f, "{}: {}", self.class.name(), self.message)
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_accessors() {
        let e = Error::rank("MPI_Send: invalid rank 7 (communicator of size 4)");
        assert_eq!(e.class(), ErrorClass::Rank);
        assert_eq!(e.to_string(), "MPI_ERR_RANK: MPI_Send: invalid rank 7 (communicator of size 4)");
        assert_eq!(Error::from(ErrorClass::Truncate).to_string(), "MPI_ERR_TRUNCATE: message truncated");
        assert_eq!(Error::datatype("x").class(), ErrorClass::Type);
        assert_eq!(Error::t_invalid("x").class(), ErrorClass::TInvalid);
        let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(e);
        assert!(boxed.to_string().starts_with("MPI_ERR_RANK"));
    }

    #[test]
    fn code_round_trip() {
        let e = Error::keyval("MPI_Comm_set_attr: keyval 3 was freed");
        let code = e.code();
        assert!(code > ERR_LASTCODE);
        assert_eq!(e.code(), code, "one code per error value");
        assert_eq!(error_class(code), Some(ErrorClass::Keyval));
        let back = Error::from_code(code);
        assert_eq!(back, e);
        assert_eq!(back.code(), code);
        assert_eq!(registry().string(code).unwrap(), e.to_string());
    }

    #[test]
    fn datatype_errors_keep_their_class_and_message() {
        use crate::datatype::{Datatype, Predefined};
        let int = Datatype::predefined(Predefined::Int);
        let e: Error = Datatype::contiguous(-1, &int).unwrap_err().into();
        assert_eq!(e.class(), ErrorClass::Count);
        assert!(!e.message().is_empty());
        let v = Datatype::vector(2, 1, 3, &int).unwrap();
        let e: Error = v.layout(1).unwrap_err().into();
        assert_eq!(e.class(), ErrorClass::Type, "not committed: {e}");
    }

    #[test]
    fn plain_classes_and_foreign_codes() {
        assert_eq!(Error::from(ErrorClass::Truncate).code(), 14);
        assert_eq!(Error::from_code(14), Error::from(ErrorClass::Truncate));
        // A copy callback returning 7 makes MPI_Comm_dup return 7 (MPICH 4.0.2, attr_check.c).
        assert_eq!(Error::from_code(7).code(), 7);
        assert!(Error::from_code(7).has_code() && !Error::other("x").has_code());
        let odd = Error::from_code(12345);
        assert_eq!(odd.class(), ErrorClass::Unknown);
        assert_eq!(odd.code(), 12345);
    }

    #[test]
    fn user_codes_keep_their_value_class_and_string() {
        let class = user_errors().add_class().unwrap();
        let code = user_errors().add_code(class).unwrap();
        let on_rank = user_errors().add_code(ErrorClass::Rank.code()).unwrap();
        user_errors().set_string(code, "jammed").unwrap();
        assert_eq!(
            (class_of_code(code), class_of_code(on_rank)),
            (Some(class), Some(ErrorClass::Rank.code()))
        );
        assert_eq!(error_string(code).as_deref(), Some("jammed"));
        assert_eq!(error_string(on_rank).as_deref(), Some(""));
        assert_eq!(class_of_code(ErrorClass::Rank.code()), Some(ErrorClass::Rank.code()));
        let e = Error::from_code(code);
        assert_eq!((e.code(), e.class()), (code, ErrorClass::Unknown));
        assert!(e.message().ends_with("jammed"), "{}", e.message());
        assert_eq!(Error::from_code(on_rank).class(), ErrorClass::Rank);
    }
}
