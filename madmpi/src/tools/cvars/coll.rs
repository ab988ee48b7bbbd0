//! madmpi's collective settings as control variables: `MADMPI_COLL_<NAME>` (the algorithm
//! forced, `auto` for the choice by size) and `MADMPI_COLL_HIERARCHICAL`, which the collectives
//! read at every call ([`crate::coll::choice::Forced::from_env`]), so a write applies from the
//! next call; and `MADMPI_COLL_TRACE`.
//!
//! Scope: a forced algorithm must be the same on every rank of a communicator (ranks running
//! different algorithms do not match), hence `MPI_T_SCOPE_ALL_EQ`: every process writes the same
//! value between the same collective calls. The trace is local.

use super::super::enums::Enum;
use super::super::error::TError;
use super::super::kinds::{Scope, Type, Value, Verbosity};
use super::super::registry::Registry;
use super::Cvar;
use crate::coll::choice::{self, Forced, VARIABLES};

/// The choice in force, or the defaults when the environment's is invalid (the first
/// collective call reports that).
fn in_force() -> Forced {
    Forced::from_env().unwrap_or_default()
}

pub(crate) fn add(r: &mut Registry) {
    let c = "madmpi_collectives";
    for &(var, names) in VARIABLES {
        // Item 0 is "auto" (choose by size); the algorithms follow in the table's order. For
        // MADMPI_COLL_HIERARCHICAL the names are already auto/off.
        let items: Vec<&str> = if names.first() == Some(&"auto") {
            names.to_vec()
        } else {
            std::iter::once("auto").chain(names.iter().copied()).collect()
        };
        let e = Enum::numbered(&format!("{}_algorithm", var.to_ascii_lowercase()), &items);
        let idx = r.add_enum(e.clone());
        let (re, we) = (e.clone(), e);
        let desc = format!(
            "{var}: the algorithm forced ({}), or auto to choose by size; all processes must write the \
             same value between the same collective calls; applies from the next call",
            items[1..].join(", ")
        );
        r.cvars.push(
            Cvar::new(var, Type::Int, Scope::AllEq, Verbosity::TunerBasic, c, &desc, move || {
                let name = in_force().get(var).flatten().unwrap_or("auto");
                Value::Int(re.value_of(name).map_or(0, i64::from))
            })
            .with_enum(idx)
            .with_write(move |v| {
                let name = we.name_of(v.as_i64()).ok_or(TError::Invalid)?;
                let mut f = in_force();
                f.set(var, (name != "auto" || var == "MADMPI_COLL_HIERARCHICAL").then_some(name))
                    .map_err(|_| TError::Invalid)?;
                Forced::replace(f);
                Ok(())
            }),
        );
    }
    let yes_no = r.enum_index("boolean").expect("settings added first");
    r.cvars.push(
        Cvar::new(
            "MADMPI_COLL_TRACE",
            Type::Int,
            Scope::Local,
            Verbosity::DevBasic,
            c,
            "yes: every collective call prints the algorithm chosen on stderr (from the next call)",
            || Value::Int(i64::from(choice::tracing())),
        )
        .with_enum(yes_no)
        .with_write(|v| match v.as_i64() {
            0 | 1 => {
                choice::set_tracing(v.as_i64() == 1);
                Ok(())
            }
            _ => Err(TError::Invalid),
        }),
    );
}
