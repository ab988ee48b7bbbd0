//! The registry: every control variable, performance variable, enumeration, category and event
//! type, built once at first use and never changed (indices are stable for the whole run, as
//! MPI requires between `MPI_T_init_thread` and `MPI_T_finalize`, and across them here).

use super::categories::{self, Category};
use super::cvars::{self, Cvar};
use super::enums::Enum;
use super::events::types::TYPES;
use super::pvars::{self, Pvar};
use std::sync::LazyLock;

pub struct Registry {
    pub cvars: Vec<Cvar>,
    pub pvars: Vec<Pvar>,
    pub enums: Vec<Enum>,
    pub categories: Vec<Category>,
}

impl Registry {
    /// Adds an enumeration; returns its index.
    pub fn add_enum(&mut self, e: Enum) -> usize {
        self.enums.push(e);
        self.enums.len() - 1
    }

    pub fn enum_index(&self, name: &str) -> Option<usize> {
        self.enums.iter().position(|e| e.name == name)
    }

    pub fn cvar_index(&self, name: &str) -> Option<usize> {
        self.cvars.iter().position(|v| v.name == name)
    }

    /// Performance variables are named per class: the same name may exist in two classes.
    pub fn pvar_index(&self, name: &str, class: super::kinds::Class) -> Option<usize> {
        self.pvars.iter().position(|v| v.name == name && v.class == class)
    }

    pub fn category_index(&self, name: &str) -> Option<usize> {
        self.categories.iter().position(|c| c.name == name)
    }

    pub fn event_index(&self, name: &str) -> Option<usize> {
        TYPES.iter().position(|t| t.name == name)
    }

    fn build() -> Registry {
        let mut r =
            Registry { cvars: Vec::new(), pvars: Vec::new(), enums: Vec::new(), categories: Vec::new() };
        cvars::settings::add(&mut r);
        cvars::coll::add(&mut r);
        pvars::list::add(&mut r);
        let cv: Vec<&str> = r.cvars.iter().map(|v| v.category).collect();
        let pv: Vec<&str> = r.pvars.iter().map(|v| v.category).collect();
        let ev: Vec<&str> = TYPES.iter().map(|t| t.category).collect();
        r.categories = categories::build(&cv, &pv, &ev);
        r
    }
}

static REGISTRY: LazyLock<Registry> = LazyLock::new(Registry::build);

pub fn registry() -> &'static Registry {
    &REGISTRY
}
