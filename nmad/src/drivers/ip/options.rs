//! Reading the IP drivers' tunables from the environment: a value parsed or a clear error
//! naming the variable, and sizes with `K`/`M` suffixes.

use std::io;

/// `name`'s value parsed by `parse`; `None` when unset, an error naming it when unparsable.
pub fn env_value<T>(name: &str, parse: impl Fn(&str) -> Option<T>) -> io::Result<Option<T>> {
    match std::env::var(name) {
        Err(_) => Ok(None),
        Ok(v) => parse(&v).map(Some).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("{name}=`{v}`: not a valid value"))
        }),
    }
}

/// Bytes, with an optional `K` or `M` suffix; `None` for 0, garbage or an overflow.
pub fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (digits, shift) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 10),
        'm' | 'M' => (&s[..s.len() - 1], 20),
        _ => (s, 0),
    };
    digits.parse::<usize>().ok()?.checked_mul(1 << shift).filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("64K"), Some(64 << 10));
        assert_eq!(parse_size("4m"), Some(4 << 20));
        assert_eq!(parse_size("0"), None);
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("99999999999999999999M"), None);
    }
}
