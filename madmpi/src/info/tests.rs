use super::*;
use crate::error::ErrorClass;

fn keys(info: &Info) -> Vec<String> {
    info.keys().map(|k| String::from_utf8(k.to_vec()).unwrap()).collect()
}

#[test]
fn set_get_replace_and_delete_keep_the_order() {
    let mut info = Info::new();
    assert!(info.is_empty());
    info.set("c", "3").unwrap();
    info.set("a", "1").unwrap();
    info.set("b", "2").unwrap();
    assert_eq!(keys(&info), ["c", "a", "b"]);
    // Replacing keeps the place.
    info.set("a", "one").unwrap();
    assert_eq!(keys(&info), ["c", "a", "b"]);
    assert_eq!(info.get("a"), Some(&b"one"[..]));
    assert_eq!(info.get_str("a"), Some("one"));
    assert_eq!(info.get("z"), None);
    assert!(info.contains("b") && !info.contains("B"), "keys are case sensitive");
    assert_eq!((info.len(), info.nth_key(2), info.nth_key(3)), (3, Some(&b"b"[..]), None));
    // Deleting moves the later keys down.
    info.delete("c").unwrap();
    assert_eq!(keys(&info), ["a", "b"]);
    assert_eq!(info.delete("c").unwrap_err().class(), ErrorClass::InfoNokey);
    assert_eq!(info.delete("").unwrap_err().class(), ErrorClass::InfoKey);
    info.set("c", "").unwrap();
    assert_eq!(keys(&info), ["a", "b", "c"], "a deleted key set again goes last");
    assert_eq!(info.get("c"), Some(&b""[..]), "empty values are values");
    let pairs: Vec<_> = info.iter().collect();
    assert_eq!(pairs[0], (&b"a"[..], &b"one"[..]));
}

#[test]
fn limits_and_their_error_classes() {
    let mut info = Info::new();
    let longest_key = "k".repeat(MAX_KEY);
    let longest_value = "v".repeat(MAX_VALUE);
    info.set(&longest_key, &longest_value).unwrap();
    assert_eq!(info.get(&longest_key).map(<[u8]>::len), Some(MAX_VALUE));
    let class = |r: Result<()>| r.unwrap_err().class();
    assert_eq!(class(info.set("k".repeat(MAX_KEY + 1), "v")), ErrorClass::InfoKey);
    assert_eq!(class(info.set("", "v")), ErrorClass::InfoKey);
    assert_eq!(class(info.set("a\0b", "v")), ErrorClass::InfoKey);
    assert_eq!(class(info.set("k", "v".repeat(MAX_VALUE + 1))), ErrorClass::InfoValue);
    assert_eq!(class(info.set("k", "a\0b")), ErrorClass::InfoValue);
    assert_eq!(class(info.delete("k".repeat(MAX_KEY + 1))), ErrorClass::InfoKey);
    assert_eq!(info.len(), 1, "failed calls change nothing");
    // Any bytes but NUL, UTF-8 or not, and blank keys are keys.
    info.set([0xffu8, b' '], [0xfeu8]).unwrap();
    info.set("  ", "blank").unwrap();
    assert_eq!(info.get([0xffu8, b' ']), Some(&[0xfeu8][..]));
    assert_eq!(info.get_str([0xffu8, b' ']), None, "not UTF-8");
    assert_eq!(format!("{:?}", Info::from_pairs([("a", "1")]).unwrap()), r#"{"a": "1"}"#);
}

#[test]
fn dup_is_independent_and_from_pairs_keeps_the_last_value() {
    let mut a = Info::from_pairs([("x", "1"), ("y", "2"), ("x", "3")]).unwrap();
    assert_eq!((keys(&a), a.get_str("x")), (vec!["x".to_owned(), "y".to_owned()], Some("3")));
    let b = a.dup();
    a.set("x", "changed").unwrap();
    a.delete("y").unwrap();
    assert_eq!((b.get_str("x"), b.get_str("y")), (Some("3"), Some("2")));
    assert_ne!(a, b);
    assert!(Info::from_pairs([("", "v")]).is_err());
}

#[test]
fn the_environment_tells_what_is_known() {
    let e = env_with_args(&["/bin/prog", "-n", "two words"]);
    assert_eq!(e.get_str("command"), Some("/bin/prog"));
    assert_eq!(e.get_str("argv"), Some("-n two words"));
    assert_eq!(e.get_str("arch"), Some(std::env::consts::ARCH));
    assert_eq!(e.get_str("host").map(str::to_owned), Some(crate::info::processor_name()));
    assert!(e.contains("wdir"));
    assert!(!e.contains("soft") && !e.contains("file"));
    // This test process's own command line: the test binary.
    let own = env();
    let command = own.get_str("command").unwrap();
    assert!(command.contains("madmpi"), "{command}");
    assert_eq!(keys(&own)[..2], ["command", "argv"]);
    // No command line: no command; long arguments are cut, never an error.
    assert!(!env_with_args::<&str>(&[]).contains("command"));
    let long = env_with_args(&["p".to_owned(), "a".repeat(2 * MAX_VALUE)]);
    assert_eq!(long.get("argv").map(<[u8]>::len), Some(MAX_VALUE));
    assert_eq!(env_with_args(&["p", "a\0b"]).get_str("argv"), Some("a"));
}

#[test]
fn hints_take_valid_values_of_known_keys() {
    let mut h = CommHints::default();
    let given = Info::from_pairs([
        ("mpi_assert_no_any_tag", "true"),
        ("unknown_key", "x"),
        ("mpi_assert_exact_length", "1"),
    ])
    .unwrap();
    h.update(&given);
    assert_eq!(h, CommHints { no_any_tag: true, ..Default::default() }, "\"1\" is not a boolean here");
    h.update(
        &Info::from_pairs([("mpi_assert_no_any_tag", "maybe"), ("mpi_assert_allow_overtaking", "true")])
            .unwrap(),
    );
    assert!(h.no_any_tag && h.allow_overtaking, "an invalid value leaves the hint as it was");
    h.update(&Info::from_pairs([("mpi_assert_no_any_tag", "false")]).unwrap());
    assert!(!h.no_any_tag);
    let reported = h.to_info();
    assert_eq!(
        keys(&reported),
        [
            "mpi_assert_no_any_tag",
            "mpi_assert_no_any_source",
            "mpi_assert_exact_length",
            "mpi_assert_allow_overtaking"
        ]
    );
    assert_eq!(reported.get_str("mpi_assert_allow_overtaking"), Some("true"));
    assert_eq!(reported.get_str("mpi_assert_no_any_source"), Some("false"));
    assert_eq!(CommHints::from_info(&reported), h, "get_info then set_info is the identity");
    assert_eq!(CommHints::from_info(&Info::new()), CommHints::default());
}
