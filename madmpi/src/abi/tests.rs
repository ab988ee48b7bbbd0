use super::*;
use proptest::prelude::*;

#[test]
fn kinds_and_objects_of_predefined_handles() {
    assert_eq!(handle_kind(MPI_COMM_NULL), HandleKind::Invalid);
    assert_eq!(handle_kind(MPI_COMM_WORLD), HandleKind::Builtin);
    assert_eq!(handle_kind(MPI_DOUBLE_INT), HandleKind::Direct);
    assert_eq!(handle_object(MPI_COMM_SELF), ObjectType::Comm);
    assert_eq!(handle_object(MPI_GROUP_EMPTY), ObjectType::Group);
    assert_eq!(handle_object(MPI_LONG_DOUBLE_INT), ObjectType::Datatype);
    assert_eq!(handle_object(MPI_ERRORS_RETURN), ObjectType::Errhandler);
    assert_eq!(handle_object(MPI_SUM), ObjectType::Op);
    assert_eq!(handle_object(MPI_INFO_ENV), ObjectType::Info);
    assert_eq!(handle_object(MPI_WIN_NULL), ObjectType::Win);
    assert_eq!(handle_object(MPI_KEYVAL_INVALID), ObjectType::Keyval);
    assert_eq!(handle_object(MPI_MESSAGE_NO_PROC), ObjectType::Request);
    assert_eq!(keyval_target(MPI_TAG_UB), Some(ObjectType::Comm));
    assert_eq!(keyval_target(MPI_APPNUM), Some(ObjectType::Comm));
    assert_eq!(keyval_target(MPI_KEYVAL_INVALID), None);
}

#[test]
fn builtin_sizes() {
    assert_eq!(builtin_datatype_size(MPI_CHAR), Some(1));
    assert_eq!(builtin_datatype_size(MPI_INT), Some(4));
    assert_eq!(builtin_datatype_size(MPI_LONG_DOUBLE), Some(16));
    assert_eq!(builtin_datatype_size(MPI_C_LONG_DOUBLE_COMPLEX), Some(32));
    assert_eq!(builtin_datatype_size(MPI_2INT), Some(8));
    assert_eq!(builtin_datatype_size(MPI_LB), Some(0));
    assert_eq!(builtin_datatype_size(MPI_DATATYPE_NULL), None);
    assert_eq!(builtin_datatype_size(MPI_FLOAT_INT), None);
    assert_eq!(builtin_datatype_size(MPI_COMM_WORLD), None);
}

#[test]
fn no_predefined_value_decodes_as_a_user_handle() {
    for &(name, value) in C_CONSTANTS {
        assert_eq!(decode_user_handle(value as Handle), None, "{name}");
    }
}

#[test]
fn user_handle_limits() {
    assert_eq!(encode_user_handle(UserObject::Comm, MAX_USER_SLOT + 1), None);
    assert_eq!(encode_user_handle(UserObject::Keyval(ObjectType::Group), 0), None);
    let last = encode_user_handle(UserObject::Keyval(ObjectType::Win), MAX_USER_SLOT).unwrap();
    assert_eq!(decode_user_handle(last), Some((UserObject::Keyval(ObjectType::Win), MAX_USER_SLOT)));
    assert_eq!(keyval_target(last), Some(ObjectType::Win));
    // A message and a request in the same slot are different handles.
    assert_ne!(encode_user_handle(UserObject::Message, 3), encode_user_handle(UserObject::Request, 3));
}

fn user_object() -> impl Strategy<Value = UserObject> {
    prop_oneof![
        Just(UserObject::Comm),
        Just(UserObject::Group),
        Just(UserObject::Datatype),
        Just(UserObject::Request),
        Just(UserObject::Message),
        Just(UserObject::ExpressRequest),
        Just(UserObject::Errhandler),
        Just(UserObject::Op),
        Just(UserObject::Info),
        Just(UserObject::Win),
        Just(UserObject::Session),
        Just(UserObject::Keyval(ObjectType::Comm)),
        Just(UserObject::Keyval(ObjectType::Datatype)),
        Just(UserObject::Keyval(ObjectType::Win)),
    ]
}

proptest! {
    #[test]
    fn user_handles_round_trip(object in user_object(), slot in 0..=MAX_USER_SLOT) {
        let h = encode_user_handle(object, slot).unwrap();
        prop_assert_eq!(handle_kind(h), HandleKind::Direct);
        prop_assert_eq!(decode_user_handle(h), Some((object, slot)));
    }

    #[test]
    fn decoding_is_injective(h in any::<i32>()) {
        if let Some((object, slot)) = decode_user_handle(h) {
            prop_assert_eq!(encode_user_handle(object, slot), Some(h));
        }
    }

    #[test]
    fn status_count_and_flag_are_independent(count in 0..=i64::MAX, cancelled: bool) {
        let mut st = Status::default();
        st.set_cancelled(cancelled);
        st.set_count(count);
        prop_assert_eq!(st.count(), count);
        prop_assert_eq!(st.cancelled(), cancelled);
        st.set_cancelled(!cancelled);
        prop_assert_eq!(st.count(), count);
    }
}
