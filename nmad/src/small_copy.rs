//! Short copies without a libc call: small packets are the latency path, and a `memcpy` call
//! costs more than copying them. Owns nothing else.

/// Copies `n` bytes; short copies inline (small packets are the latency path, and a libc call
/// costs more than copying them), longer ones with `memcpy`.
///
/// # Safety
/// As `ptr::copy_nonoverlapping`.
#[inline]
pub(crate) unsafe fn copy(src: *const u8, dst: *mut u8, n: usize) {
    // SAFETY: every access below lies within the first `n` bytes of `src` and `dst` (the two
    // overlapping words cover [0, n) when n is between one and two words).
    unsafe {
        match n {
            0 => {}
            1..=3 => {
                *dst = *src;
                *dst.add(n / 2) = *src.add(n / 2);
                *dst.add(n - 1) = *src.add(n - 1);
            }
            4..=7 => {
                let (a, b) =
                    (src.cast::<u32>().read_unaligned(), src.add(n - 4).cast::<u32>().read_unaligned());
                dst.cast::<u32>().write_unaligned(a);
                dst.add(n - 4).cast::<u32>().write_unaligned(b);
            }
            8..=16 => {
                let (a, b) =
                    (src.cast::<u64>().read_unaligned(), src.add(n - 8).cast::<u64>().read_unaligned());
                dst.cast::<u64>().write_unaligned(a);
                dst.add(n - 8).cast::<u64>().write_unaligned(b);
            }
            _ => std::ptr::copy_nonoverlapping(src, dst, n),
        }
    }
}
