//! User error classes and codes: `MPI_Add_error_class`, `MPI_Add_error_code`,
//! `MPI_Add_error_string` and MPICH's `MPIX_Delete_error_class`/`code`/`string` (MPI 4.1's
//! `MPI_Remove_error_*`), with what `MPI_Error_class`, `MPI_Error_string` and the
//! `MPI_LASTUSEDCODE` attribute report about them.
//!
//! Numbering: a user class or code is `0x4000_0000 | n << 7` for n = 1, 2, ... in the order
//! they are added, classes and codes alike, never reused. Bit 30 puts them above
//! `MPI_ERR_LASTCODE` (as the standard requires, and as MPICH numbers its own); the zero low
//! bits keep them apart from the richer codes of [`super::CodeRegistry`], whose low bits hold a
//! predefined class, never 0. `MPI_LASTUSEDCODE` is the last value handed out
//! (`MPI_ERR_LASTCODE` before any), so it only grows, also when one is deleted.
//!
//! A user code belongs to a user class or to a predefined one (not `MPI_SUCCESS`). A class
//! that still has codes cannot be deleted. Strings can be attached to user classes and codes
//! only (the predefined strings are fixed); without one, the string is empty.
//!
//! Owns the user numbering and strings; it must not know the C layer nor invoke handlers.

use super::{ERR_LASTCODE, Error, ErrorClass, Result};
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

const USER_BIT: i32 = 0x4000_0000;
const INDEX_SHIFT: u32 = 7;
/// The largest n: the index field (bits 7-29) is 23 bits wide.
const MAX_INDEX: i32 = (1 << 23) - 1;

/// The class of a value the user added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserClass {
    /// A predefined class (a code added to it).
    Predefined(ErrorClass),
    /// A user class (the class itself, or a code added to it): its value.
    User(i32),
}

impl UserClass {
    /// The class's value, as `MPI_Error_class` returns it.
    pub fn code(self) -> i32 {
        match self {
            UserClass::Predefined(class) => class.code(),
            UserClass::User(value) => value,
        }
    }
}

#[derive(Debug)]
struct Entry {
    /// `None` for a class, its class for a code.
    class_of_code: Option<UserClass>,
    string: Option<Box<str>>,
}

#[derive(Debug, Default)]
struct Table {
    entries: BTreeMap<i32, Entry>,
    /// The last n handed out.
    last_index: i32,
}

/// The user classes and codes of a process ([`user_errors`]).
#[derive(Debug, Default)]
pub struct UserErrors {
    table: Mutex<Table>,
}

impl UserErrors {
    /// No user classes or codes yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// `MPI_Add_error_class`: a new class, with an empty string.
    pub fn add_class(&self) -> Result<i32> {
        let mut t = self.lock();
        let value = t.next_value()?;
        t.entries.insert(value, Entry { class_of_code: None, string: None });
        Ok(value)
    }

    /// `MPI_Add_error_code`: a new code of `class`, a user class or a predefined one other than
    /// `MPI_SUCCESS`.
    pub fn add_code(&self, class: i32) -> Result<i32> {
        let mut t = self.lock();
        let class = match ErrorClass::from_code(class) {
            Some(ErrorClass::Success) => return Err(Error::arg("MPI_SUCCESS has no error codes")),
            Some(predefined) => UserClass::Predefined(predefined),
            None if t.is_class(class) => UserClass::User(class),
            None => return Err(Error::arg(format!("{class} is not an error class"))),
        };
        let value = t.next_value()?;
        t.entries.insert(value, Entry { class_of_code: Some(class), string: None });
        Ok(value)
    }

    /// `MPI_Add_error_string`: sets (or replaces) the string of a user class or code. At most
    /// [`super::MAX_MESSAGE_BYTES`] bytes, as `MPI_Error_string` must return it whole.
    pub fn set_string(&self, code: i32, string: &str) -> Result<()> {
        if string.len() > super::MAX_MESSAGE_BYTES {
            return Err(Error::arg(format!(
                "the error string has {} bytes, more than MPI_MAX_ERROR_STRING - 1 = {}",
                string.len(),
                super::MAX_MESSAGE_BYTES
            )));
        }
        let mut t = self.lock();
        t.entry_mut(code)?.string = Some(string.into());
        Ok(())
    }

    /// `MPIX_Delete_error_class`: forgets a user class that has no codes left, and its string.
    pub fn delete_class(&self, class: i32) -> Result<()> {
        let mut t = self.lock();
        if !t.is_class(class) {
            return Err(Error::arg(format!("{class} is not a user-defined error class")));
        }
        let codes = t.entries.values().filter(|e| e.class_of_code == Some(UserClass::User(class))).count();
        if codes > 0 {
            return Err(Error::arg(format!("error class {class} still has {codes} error codes")));
        }
        t.entries.remove(&class);
        Ok(())
    }

    /// `MPIX_Delete_error_code`: forgets a user code and its string.
    pub fn delete_code(&self, code: i32) -> Result<()> {
        let mut t = self.lock();
        match t.entries.get(&code) {
            Some(Entry { class_of_code: Some(_), .. }) => {
                t.entries.remove(&code);
                Ok(())
            }
            _ => Err(Error::arg(format!("{code} is not a user-defined error code"))),
        }
    }

    /// `MPIX_Delete_error_string`: removes the string of a user class or code (it is empty
    /// again); one without a string is an error.
    pub fn delete_string(&self, code: i32) -> Result<()> {
        let mut t = self.lock();
        match t.entry_mut(code)?.string.take() {
            Some(_) => Ok(()),
            None => Err(Error::arg(format!("error code {code} has no string to delete"))),
        }
    }

    /// The class of a user class or code; `None` for any other number.
    pub fn class_of(&self, code: i32) -> Option<UserClass> {
        let t = self.lock();
        let entry = t.entries.get(&code)?;
        Some(entry.class_of_code.unwrap_or(UserClass::User(code)))
    }

    /// The string of a user class or code (empty when none was added); `None` for any other
    /// number.
    pub fn string(&self, code: i32) -> Option<String> {
        let t = self.lock();
        t.entries.get(&code).map(|e| e.string.as_deref().unwrap_or_default().to_owned())
    }

    /// `MPI_LASTUSEDCODE`: the last class or code added, `MPI_ERR_LASTCODE` before any.
    pub fn last_used_code(&self) -> i32 {
        match self.lock().last_index {
            0 => ERR_LASTCODE,
            n => value_of(n),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // Every method leaves the table consistent before anything can panic.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Table {
    fn next_value(&mut self) -> Result<i32> {
        if self.last_index == MAX_INDEX {
            return Err(Error::other(format!("no more error classes or codes: {MAX_INDEX} were added")));
        }
        self.last_index += 1;
        Ok(value_of(self.last_index))
    }

    fn is_class(&self, value: i32) -> bool {
        matches!(self.entries.get(&value), Some(Entry { class_of_code: None, .. }))
    }

    fn entry_mut(&mut self, code: i32) -> Result<&mut Entry> {
        if code <= ERR_LASTCODE {
            return Err(Error::arg(format!(
                "{code} is a predefined error class or code: its string cannot be changed"
            )));
        }
        self.entries
            .get_mut(&code)
            .ok_or_else(|| Error::arg(format!("{code} is not a user-defined error class or code")))
    }
}

fn value_of(index: i32) -> i32 {
    USER_BIT | index << INDEX_SHIFT
}

/// The process-wide user classes and codes.
pub fn user_errors() -> &'static UserErrors {
    static USER: OnceLock<UserErrors> = OnceLock::new();
    USER.get_or_init(UserErrors::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_and_codes_are_numbered_above_lastcode_in_order() {
        let u = UserErrors::new();
        assert_eq!(u.last_used_code(), ERR_LASTCODE);
        let class = u.add_class().unwrap();
        let code = u.add_code(class).unwrap();
        let on_predefined = u.add_code(ErrorClass::Rank.code()).unwrap();
        assert!(ERR_LASTCODE < class && class < code && code < on_predefined);
        assert_eq!(u.last_used_code(), on_predefined);
        assert_eq!(u.class_of(class), Some(UserClass::User(class)));
        assert_eq!(u.class_of(code), Some(UserClass::User(class)));
        assert_eq!(u.class_of(on_predefined).map(UserClass::code), Some(ErrorClass::Rank.code()));
        assert_eq!(u.class_of(ErrorClass::Rank.code()), None);
        // Not mistaken for the richer codes of the registry, nor they for these.
        assert_eq!(super::super::error_class(code), None);
        let richer = super::super::CodeRegistry::new(1).register(ErrorClass::Rank, "x");
        assert_eq!(u.class_of(richer), None);
    }

    #[test]
    fn add_code_needs_a_class() {
        let u = UserErrors::new();
        let class = u.add_class().unwrap();
        let code = u.add_code(class).unwrap();
        for bad in [0, code, -5, 54, class + 1] {
            assert_eq!(u.add_code(bad).unwrap_err().class(), ErrorClass::Arg, "{bad}");
        }
    }

    #[test]
    fn strings_are_empty_until_added_and_only_for_user_values() {
        let u = UserErrors::new();
        let class = u.add_class().unwrap();
        assert_eq!(u.string(class).as_deref(), Some(""));
        u.set_string(class, "my class").unwrap();
        u.set_string(class, "my class, renamed").unwrap();
        assert_eq!(u.string(class).as_deref(), Some("my class, renamed"));
        assert_eq!(u.string(ErrorClass::Other.code()), None);
        assert_eq!(u.set_string(ErrorClass::Other.code(), "no").unwrap_err().class(), ErrorClass::Arg);
        assert_eq!(u.set_string(class + 128, "no").unwrap_err().class(), ErrorClass::Arg);
        let long = "x".repeat(super::super::MAX_MESSAGE_BYTES + 1);
        assert_eq!(u.set_string(class, &long).unwrap_err().class(), ErrorClass::Arg);
        u.delete_string(class).unwrap();
        assert_eq!(u.string(class).as_deref(), Some(""));
        assert_eq!(u.delete_string(class).unwrap_err().class(), ErrorClass::Arg);
    }

    #[test]
    fn deleting() {
        let u = UserErrors::new();
        let class = u.add_class().unwrap();
        let code = u.add_code(class).unwrap();
        assert_eq!(u.delete_class(class).unwrap_err().class(), ErrorClass::Arg, "codes left");
        assert_eq!(u.delete_code(class).unwrap_err().class(), ErrorClass::Arg, "a class");
        assert_eq!(u.delete_class(code).unwrap_err().class(), ErrorClass::Arg, "a code");
        u.delete_code(code).unwrap();
        assert_eq!(u.class_of(code), None);
        u.delete_class(class).unwrap();
        assert_eq!(u.string(class), None);
        assert_eq!(u.last_used_code(), code, "never lowered");
        assert!(u.add_class().unwrap() > code, "values are not reused");
    }
}
