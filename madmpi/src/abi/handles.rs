//! The bit encoding of handles: MPICH's (kind, object type, builtin datatype sizes, keyval
//! targets) and that of the handles MadMPI creates ([`encode_user_handle`]).

use super::*;

/// Bits 31-30 of a handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum HandleKind {
    /// A `*_NULL` handle (or garbage).
    Invalid = 0,
    /// A predefined object.
    Builtin = 1,
    /// An object in a table indexed by the low bits.
    Direct = 2,
    /// MPICH's two-level tables; MadMPI creates none.
    Indirect = 3,
}

/// Bits 29-26 of a handle: MPICH's object type numbering (all 16 values are assigned).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ObjectType {
    /// MPICH-internal objects without an MPI handle type.
    Internal = 0,
    /// `MPI_Comm`.
    Comm = 1,
    /// `MPI_Group`.
    Group = 2,
    /// `MPI_Datatype`.
    Datatype = 3,
    /// `MPI_File` (a pointer in MPICH's C ABI; the number only tags keyvals and handlers).
    File = 4,
    /// `MPI_Errhandler`.
    Errhandler = 5,
    /// `MPI_Op`.
    Op = 6,
    /// `MPI_Info`.
    Info = 7,
    /// `MPI_Win`.
    Win = 8,
    /// Attribute keys (`int` keyvals).
    Keyval = 9,
    /// Attributes (MPICH-internal).
    Attr = 10,
    /// `MPI_Request`, and `MPI_Message`.
    Request = 11,
    /// Virtual connections (MPICH-internal).
    Vconn = 12,
    /// Generalized request classes (MPICH extension).
    GreqClass = 13,
    /// `MPI_Session` (MPI-4).
    Session = 14,
    /// Streams (MPICH extension).
    Stream = 15,
}

impl ObjectType {
    /// The object type numbered `n` (only the low 4 bits are read).
    pub const fn from_bits(n: u32) -> ObjectType {
        use ObjectType::*;
        const ALL: [ObjectType; 16] = [
            Internal, Comm, Group, Datatype, File, Errhandler, Op, Info, Win, Keyval, Attr, Request, Vconn,
            GreqClass, Session, Stream,
        ];
        ALL[(n & 0xf) as usize]
    }
}

/// Where the kind sits in a handle.
pub const KIND_SHIFT: u32 = 30;
/// Where the object type sits in a handle.
pub const OBJECT_SHIFT: u32 = 26;
/// Where a keyval's target object type (and a user handle's qualifier) sits.
pub const QUALIFIER_SHIFT: u32 = 22;

/// The kind of a handle.
pub const fn handle_kind(h: Handle) -> HandleKind {
    match (h as u32) >> KIND_SHIFT {
        0 => HandleKind::Invalid,
        1 => HandleKind::Builtin,
        2 => HandleKind::Direct,
        _ => HandleKind::Indirect,
    }
}

/// The object type a handle claims to designate (meaningful for null handles too).
pub const fn handle_object(h: Handle) -> ObjectType {
    ObjectType::from_bits((h as u32) >> OBJECT_SHIFT)
}

/// The size in bytes of a builtin datatype, read from the handle (bits 15-8); `None` for any
/// other handle, including `MPI_DATATYPE_NULL` and the direct pair types.
pub const fn builtin_datatype_size(h: Datatype) -> Option<usize> {
    if matches!(handle_kind(h), HandleKind::Builtin) && matches!(handle_object(h), ObjectType::Datatype) {
        Some((((h as u32) >> 8) & 0xff) as usize)
    } else {
        None
    }
}

/// The object type a keyval applies to (bits 25-22 of builtin and user keyval handles), e.g.
/// [`ObjectType::Comm`] for `MPI_TAG_UB`; `None` if `h` is not a builtin or direct keyval.
pub const fn keyval_target(h: Handle) -> Option<ObjectType> {
    match (handle_kind(h), handle_object(h)) {
        (HandleKind::Builtin | HandleKind::Direct, ObjectType::Keyval) => {
            Some(ObjectType::from_bits((h as u32) >> QUALIFIER_SHIFT))
        }
        _ => None,
    }
}

// ---- handles of the objects MadMPI creates
//
// Layout of a user handle (32 bits):
//   31-30  kind = Direct (2): never clashes with builtin or null handles;
//   29-26  object type as MPICH numbers it, so `handle_object` works on every handle;
//   25-22  qualifier: a keyval's target object type (the layout of MPICH's builtin keyvals),
//          MESSAGE_QUALIFIER for a matched message (which MPICH types as a request),
//          EXPRESS_QUALIFIER for an express request, else 0;
//   21-0   USER_INDEX_BASE + slot, the slot being the owning module's table index.
// Indices below USER_INDEX_BASE are MPICH's predefined direct handles (the pair datatypes),
// so no user handle can equal a predefined one.

/// Number of bits of the index of a user handle.
pub const USER_INDEX_BITS: u32 = 22;
/// First index used by user handles; the lower ones belong to predefined direct handles
/// (`MPI_FLOAT_INT` .. `MPI_LONG_DOUBLE_INT` are direct datatypes 0 to 4).
pub const USER_INDEX_BASE: u32 = 16;
/// Largest slot a user handle can carry (about four million live objects per type).
pub const MAX_USER_SLOT: u32 = (1 << USER_INDEX_BITS) - 1 - USER_INDEX_BASE;
/// Qualifier of a request-typed handle that designates a matched message.
const MESSAGE_QUALIFIER: u32 = 1;
/// Qualifier of a request handle of the C library's express table (receives its hot path
/// posted), beside the general table's.
const EXPRESS_QUALIFIER: u32 = 2;

/// The kinds of objects MadMPI hands out handles for, with what their handles must encode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UserObject {
    /// A communicator.
    Comm,
    /// A group.
    Group,
    /// A derived datatype.
    Datatype,
    /// A request.
    Request,
    /// A matched message (`MPI_Mprobe`): request-typed, like MPICH's.
    Message,
    /// A request of the express table (a receive `MPI_Irecv`'s hot path posted): a request to
    /// the program, in a table of its own.
    ExpressRequest,
    /// An error handler.
    Errhandler,
    /// A user reduction operation.
    Op,
    /// An info object.
    Info,
    /// A window.
    Win,
    /// A session (MPI-4).
    Session,
    /// An attribute key for objects of the given type: [`ObjectType::Comm`],
    /// [`ObjectType::Datatype`] or [`ObjectType::Win`].
    Keyval(ObjectType),
}

impl UserObject {
    /// The (object type, qualifier) pair of this kind's handles, `None` for an impossible
    /// keyval target.
    const fn bits(self) -> Option<(ObjectType, u32)> {
        Some(match self {
            UserObject::Comm => (ObjectType::Comm, 0),
            UserObject::Group => (ObjectType::Group, 0),
            UserObject::Datatype => (ObjectType::Datatype, 0),
            UserObject::Request => (ObjectType::Request, 0),
            UserObject::Message => (ObjectType::Request, MESSAGE_QUALIFIER),
            UserObject::ExpressRequest => (ObjectType::Request, EXPRESS_QUALIFIER),
            UserObject::Errhandler => (ObjectType::Errhandler, 0),
            UserObject::Op => (ObjectType::Op, 0),
            UserObject::Info => (ObjectType::Info, 0),
            UserObject::Win => (ObjectType::Win, 0),
            UserObject::Session => (ObjectType::Session, 0),
            UserObject::Keyval(target @ (ObjectType::Comm | ObjectType::Datatype | ObjectType::Win)) => {
                (ObjectType::Keyval, target as u32)
            }
            UserObject::Keyval(_) => return None,
        })
    }
}

/// The handle of the object of kind `object` in slot `slot` of its module's table; `None`
/// if the slot is above [`MAX_USER_SLOT`] or the keyval target is not a comm, type or window.
#[inline]
pub const fn encode_user_handle(object: UserObject, slot: u32) -> Option<Handle> {
    let Some((ty, qualifier)) = object.bits() else { return None };
    if slot > MAX_USER_SLOT {
        return None;
    }
    let bits = ((HandleKind::Direct as u32) << KIND_SHIFT)
        | ((ty as u32) << OBJECT_SHIFT)
        | (qualifier << QUALIFIER_SHIFT)
        | (slot + USER_INDEX_BASE);
    Some(bits as Handle)
}

/// The inverse of [`encode_user_handle`]: what `h` designates and its slot, or `None` if `h`
/// is not a handle MadMPI could have created (null, builtin, predefined direct, garbage).
#[inline]
pub const fn decode_user_handle(h: Handle) -> Option<(UserObject, u32)> {
    let bits = h as u32;
    if !matches!(handle_kind(h), HandleKind::Direct) {
        return None;
    }
    let index = bits & ((1 << USER_INDEX_BITS) - 1);
    if index < USER_INDEX_BASE {
        return None;
    }
    let qualifier = (bits >> QUALIFIER_SHIFT) & 0xf;
    let object = match (handle_object(h), qualifier) {
        (ObjectType::Comm, 0) => UserObject::Comm,
        (ObjectType::Group, 0) => UserObject::Group,
        (ObjectType::Datatype, 0) => UserObject::Datatype,
        (ObjectType::Request, 0) => UserObject::Request,
        (ObjectType::Request, MESSAGE_QUALIFIER) => UserObject::Message,
        (ObjectType::Request, EXPRESS_QUALIFIER) => UserObject::ExpressRequest,
        (ObjectType::Errhandler, 0) => UserObject::Errhandler,
        (ObjectType::Op, 0) => UserObject::Op,
        (ObjectType::Info, 0) => UserObject::Info,
        (ObjectType::Win, 0) => UserObject::Win,
        (ObjectType::Session, 0) => UserObject::Session,
        (ObjectType::Keyval, q) => match ObjectType::from_bits(q) {
            target @ (ObjectType::Comm | ObjectType::Datatype | ObjectType::Win) => {
                UserObject::Keyval(target)
            }
            _ => return None,
        },
        _ => return None,
    };
    Some((object, index - USER_INDEX_BASE))
}
