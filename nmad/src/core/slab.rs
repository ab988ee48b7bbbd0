//! A slab handing out cookies: index plus generation, so a stale or forged cookie from the wire
//! finds nothing instead of another request.

#[derive(Debug)]
enum Slot<T> {
    Full(u32, T),
    Free(u32, Option<u32>),
}

#[derive(Debug)]
pub(crate) struct Slab<T> {
    slots: Vec<Slot<T>>,
    free: Option<u32>,
    len: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab { slots: Vec::new(), free: None, len: 0 }
    }
}

fn cookie(index: u32, generation: u32) -> u64 {
    u64::from(generation) << 32 | u64::from(index)
}

impl<T> Slab<T> {
    pub(crate) fn insert(&mut self, value: T) -> u64 {
        self.len += 1;
        match self.free {
            Some(i) => {
                let Slot::Free(g, next) = self.slots[i as usize] else {
                    unreachable!("free list points at a full slot")
                };
                self.free = next;
                let g = g.wrapping_add(1);
                self.slots[i as usize] = Slot::Full(g, value);
                cookie(i, g)
            }
            None => {
                let i = self.slots.len() as u32;
                self.slots.push(Slot::Full(1, value));
                cookie(i, 1)
            }
        }
    }

    fn index(&self, c: u64) -> Option<usize> {
        let (i, g) = ((c & 0xffff_ffff) as usize, (c >> 32) as u32);
        matches!(self.slots.get(i), Some(Slot::Full(sg, _)) if *sg == g).then_some(i)
    }

    pub(crate) fn get_mut(&mut self, c: u64) -> Option<&mut T> {
        let i = self.index(c)?;
        match &mut self.slots[i] {
            Slot::Full(_, v) => Some(v),
            Slot::Free(..) => None,
        }
    }

    pub(crate) fn remove(&mut self, c: u64) -> Option<T> {
        let i = self.index(c)?;
        let g = match &self.slots[i] {
            Slot::Full(g, _) => *g,
            Slot::Free(..) => return None,
        };
        let old = std::mem::replace(&mut self.slots[i], Slot::Free(g, self.free));
        self.free = Some(i as u32);
        self.len -= 1;
        match old {
            Slot::Full(_, v) => Some(v),
            Slot::Free(..) => None,
        }
    }

    /// Every entry with its cookie.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (u64, &mut T)> {
        self.slots.iter_mut().enumerate().filter_map(|(i, s)| match s {
            Slot::Full(g, v) => Some((cookie(i as u32, *g), v)),
            Slot::Free(..) => None,
        })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Removes and returns everything.
    pub(crate) fn drain(&mut self) -> Vec<T> {
        let mut v = Vec::with_capacity(self.len);
        for s in std::mem::take(&mut self.slots) {
            if let Slot::Full(_, x) = s {
                v.push(x);
            }
        }
        self.free = None;
        self.len = 0;
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_and_forged_cookies_find_nothing() {
        let mut s = Slab::default();
        let a = s.insert("a");
        let b = s.insert("b");
        assert_eq!(s.remove(a), Some("a"));
        let c = s.insert("c");
        assert_ne!(a, c, "the slot is reused with a new generation");
        assert!(s.get_mut(a).is_none() && s.remove(a).is_none());
        assert_eq!(s.get_mut(c).copied(), Some("c"));
        assert!(s.get_mut(u64::MAX).is_none() && s.get_mut(0).is_none());
        assert_eq!(s.len, 2);
        let mut all = s.drain();
        all.sort();
        assert_eq!(all, ["b", "c"]);
        assert!(s.remove(b).is_none());
    }
}
