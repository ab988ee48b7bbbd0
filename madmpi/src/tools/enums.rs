//! Enumerations (`MPI_T_enum`): the named values an integer variable takes.
//!
//! Owns the type; each enumeration is made where its variable is.

/// An enumeration: its name and its items, each a value and a name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enum {
    pub name: String,
    pub items: Vec<(i32, String)>,
}

impl Enum {
    /// Items numbered 0, 1, … in the order of `names`.
    pub fn numbered<S: AsRef<str>>(name: &str, names: &[S]) -> Enum {
        Enum {
            name: name.to_string(),
            items: names.iter().enumerate().map(|(i, n)| (i as i32, n.as_ref().to_string())).collect(),
        }
    }

    /// The value of the item named `name`.
    pub fn value_of(&self, name: &str) -> Option<i32> {
        self.items.iter().find(|(_, n)| n == name).map(|(v, _)| *v)
    }

    /// The name of the item of value `v`.
    pub fn name_of(&self, v: i64) -> Option<&str> {
        self.items.iter().find(|(x, _)| i64::from(*x) == v).map(|(_, n)| n.as_str())
    }
}
