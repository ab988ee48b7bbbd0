//! Categories: the tree that groups the variables and events by component (MPI 4.0 §15.3.9).
//! `pm2` holds the four layers; each layer holds its variables and subcategories.
//!
//! The registry never changes once built (a variable is never added later), so the update number
//! of `MPI_T_category_changed` stays [`UPDATE_NUMBER`]. Owns the tree; membership comes from each
//! variable's own `category`.

/// What `MPI_T_category_changed` reports: the registry is built once, complete.
pub const UPDATE_NUMBER: i32 = 0;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Category {
    pub name: String,
    pub desc: String,
    pub cvars: Vec<usize>,
    pub pvars: Vec<usize>,
    pub events: Vec<usize>,
    pub subcategories: Vec<usize>,
}

/// (name, parent, description), parents first.
pub(crate) const TREE: &[(&str, Option<&str>, &str)] = &[
    ("pm2", None, "the pm2-rs stack: marcel threads, pioman progression, nmad messaging, madmpi"),
    ("marcel", Some("pm2"), "marcel: user-level threads on LWPs (settings of a marcel runtime)"),
    ("pioman", Some("pm2"), "pioman: the I/O event manager that runs every progression task"),
    ("pioman_polling", Some("pioman"), "polls: how many, from where, and how soon they detect events"),
    ("pioman_waits", Some("pioman"), "blocking waits: sleeping in the sources' file descriptors"),
    ("nmad", Some("pm2"), "nmad: the communication core (protocols, strategies)"),
    ("nmad_flow_control", Some("nmad"), "unexpected messages, credit and rendezvous slots"),
    ("nmad_drivers", Some("nmad"), "drivers (self, shm, tcp) and their traffic"),
    ("madmpi", Some("pm2"), "madmpi: the MPI layer"),
    ("madmpi_collectives", Some("madmpi"), "collective algorithms"),
    ("madmpi_communicators", Some("madmpi"), "per-communicator state"),
];

/// The categories of [`TREE`], with their members (`cvars`, `pvars`, `events`: the category
/// name of each variable and event, in index order).
pub(crate) fn build(cvars: &[&str], pvars: &[&str], events: &[&str]) -> Vec<Category> {
    let index = |n: &str| TREE.iter().position(|(name, _, _)| *name == n);
    let mut cats: Vec<Category> = TREE
        .iter()
        .map(|(name, _, desc)| Category {
            name: name.to_string(),
            desc: desc.to_string(),
            ..Default::default()
        })
        .collect();
    for (i, (_, parent, _)) in TREE.iter().enumerate() {
        if let Some(p) = parent.and_then(index) {
            cats[p].subcategories.push(i);
        }
    }
    type Members = fn(&mut Category) -> &mut Vec<usize>;
    let lists: [(&[&str], Members); 3] =
        [(cvars, |c| &mut c.cvars), (pvars, |c| &mut c.pvars), (events, |c| &mut c.events)];
    for (names, field) in lists {
        for (i, n) in names.iter().enumerate() {
            if let Some(c) = index(n) {
                field(&mut cats[c]).push(i);
            }
        }
    }
    cats
}
