//! The three shapes every C type of the API takes in Rust, written once.
//!
//! - `c_enum!`: a C enum as a Rust enum plus `Unknown(i32)`, so any value the
//!   library returns converts without loss (a newer library may add values).
//! - `c_options!`: an options struct as a Rust struct with public fields and
//!   builder setters of the same names; its defaults come from the library's
//!   `_init` function, and conversion starts from those defaults again, so a
//!   field the C struct gains later keeps the library's default. An options
//!   struct is itself a field type, for the C structs that embed one
//!   (`fp8rl_trainer_options::importance`).
//! - `c_output!`: a struct the library fills (metrics, reports) as a read-only
//!   Rust struct; `#[non_exhaustive]` because C fields are only ever appended.
//!   The C struct handed to the library comes from its `_init` function.

/// Converts a field between its Rust and C types (bool <-> int32_t, enum <-> int).
pub(crate) trait CField: Sized {
    /// The C type of the field.
    type C: Copy;
    /// The C value.
    fn to_c(&self) -> Self::C;
    /// The Rust value of a C value.
    fn from_c(value: Self::C) -> Self;
}

macro_rules! identity_fields {
    ($($t:ty),*) => {$(
        impl CField for $t {
            type C = $t;
            fn to_c(&self) -> $t { *self }
            fn from_c(value: $t) -> $t { value }
        }
    )*};
}
identity_fields!(i32, i64, u64, f32, f64);

impl CField for bool {
    type C = i32;
    fn to_c(&self) -> i32 {
        i32::from(*self)
    }
    fn from_c(value: i32) -> bool {
        value != 0
    }
}

/// Fills a C options struct with the defaults of its `_init` function.
///
/// # Safety
/// `T` must be a plain C struct for which all-zero bytes are a valid value
/// (integers, floats, raw pointers, `Option<fn>`), as every options struct is.
pub(crate) unsafe fn c_defaults<T>(init: unsafe extern "C" fn(*mut T) -> fp8rl_sys::fp8rl_status) -> T {
    // SAFETY: the caller promises all-zero is a valid T; init fills it.
    let mut value: T = unsafe { std::mem::zeroed() };
    let status = unsafe { init(&mut value) };
    // The init functions fail only for a NULL pointer.
    assert_eq!(status, fp8rl_sys::FP8RL_OK, "an fp8rl _init function failed");
    value
}

macro_rules! c_enum {
    (
        $(#[doc = $doc:literal])*
        pub enum $name:ident {
            $( $(#[doc = $vdoc:literal])* $variant:ident = $c:path, )*
        }
    ) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[doc = $vdoc])* $variant, )*
            /// A value this binding does not know: one a newer library returned,
            /// or one passed through for the library to reject.
            Unknown(i32),
        }

        impl $name {
            /// The enum of a C value; values this binding does not know become `Unknown`.
            pub fn from_raw(value: i32) -> Self {
                match value {
                    $( v if v == $c => Self::$variant, )*
                    other => Self::Unknown(other),
                }
            }

            /// The C value.
            pub fn as_raw(self) -> i32 {
                match self {
                    $( Self::$variant => $c, )*
                    Self::Unknown(value) => value,
                }
            }
        }

        impl $crate::macros::CField for $name {
            type C = i32;
            fn to_c(&self) -> i32 { self.as_raw() }
            fn from_c(value: i32) -> Self { Self::from_raw(value) }
        }
    };
}

macro_rules! c_options {
    (
        $(#[doc = $doc:literal])*
        pub struct $name:ident: $c:ty = $init:path {
            $( $(#[doc = $fdoc:literal])* $field:ident: $ty:ty, )*
        }
        $( by_hand { $( $(#[doc = $xdoc:literal])* $xfield:ident: $xty:ty, )* } )?
    ) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name {
            $( $(#[doc = $fdoc])* pub $field: $ty, )*
            $($( $(#[doc = $xdoc])* pub $xfield: $xty, )*)?
        }

        impl $name {
            #[doc = concat!("The library's defaults (`", stringify!($init), "`); the same as `default()`.")]
            pub fn new() -> Self {
                Self::default()
            }

            $(
                $(#[doc = $fdoc])*
                ///
                /// Builder setter of the field of the same name.
                #[must_use]
                pub fn $field(mut self, value: $ty) -> Self {
                    self.$field = value;
                    self
                }
            )*

            /// The C struct: the library's defaults, overwritten by every field
            /// this macro knows (fields converted by hand are left at their defaults).
            #[allow(dead_code)]
            pub(crate) fn c_fields(&self) -> $c {
                // SAFETY: the options structs are plain C data (see c_defaults).
                let mut c = unsafe { $crate::macros::c_defaults::<$c>($init) };
                $( c.$field = $crate::macros::CField::to_c(&self.$field); )*
                c
            }

            /// The Rust struct of a C struct (fields converted by hand are left empty).
            pub(crate) fn from_c_fields(c: &$c) -> Self {
                Self {
                    $( $field: $crate::macros::CField::from_c(c.$field), )*
                    $($( $xfield: Default::default(), )*)?
                }
            }
        }

        impl Default for $name {
            fn default() -> Self {
                // SAFETY: the options structs are plain C data (see c_defaults).
                Self::from_c_fields(&unsafe { $crate::macros::c_defaults::<$c>($init) })
            }
        }

        // An options struct embedded in another converts as a whole, starting
        // from its own _init function (which sets its struct_size).
        impl $crate::macros::CField for $name {
            type C = $c;
            fn to_c(&self) -> $c {
                self.c_fields()
            }
            fn from_c(value: $c) -> Self {
                Self::from_c_fields(&value)
            }
        }
    };
}

macro_rules! c_output {
    (
        $(#[doc = $doc:literal])*
        pub struct $name:ident: $c:ty = $init:path {
            $( $(#[doc = $fdoc:literal])* $field:ident: $ty:ty, )*
        }
    ) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, Copy, PartialEq)]
        #[non_exhaustive]
        pub struct $name {
            $( $(#[doc = $fdoc])* pub $field: $ty, )*
        }

        impl $name {
            #[doc = concat!("An empty C struct from `", stringify!($init), "`: its `struct_size` says which")]
            /// fields this binding knows, the rest is zero.
            pub(crate) fn empty_c() -> $c {
                // SAFETY: plain C data (see c_defaults); init sets struct_size and zeroes the rest.
                unsafe { $crate::macros::c_defaults::<$c>($init) }
            }

            pub(crate) fn from_c(c: &$c) -> Self {
                Self { $( $field: $crate::macros::CField::from_c(c.$field), )* }
            }
        }
    };
}
