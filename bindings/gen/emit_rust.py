"""Rust emitter: the raw FFI declarations of the fp8rl-sys crate (bindings/rust/fp8rl-sys/src/bindings.rs).

Enums become `i32` type aliases with one constant per value, never Rust enums:
a value the library adds later must not be undefined behaviour in an older
binding. Handles are zero-sized opaque structs used through raw pointers.
The file also lists every size, field offset and value it declares (LAYOUT,
VALUES), so a test can compare them with what the C compiler prints.
"""
import re

_PRIMITIVES = {
    "char": "c_char", "int": "c_int", "unsigned int": "c_uint", "float": "f32", "double": "f64",
    "size_t": "usize", "int8_t": "i8", "uint8_t": "u8", "int16_t": "i16", "uint16_t": "u16",
    "int32_t": "i32", "uint32_t": "u32", "int64_t": "i64", "uint64_t": "u64",
}


def rust_type(t, api, behind_pointer=False):
    """The Rust spelling of C type `t` (a parameter, field or return type)."""
    if t.kind == "name":
        if t.name == "void":
            raise ValueError("void by value")
        kind = api.kind_of(t.name)
        if kind == "primitive":
            return _PRIMITIVES[t.name]
        if kind == "opaque" and not behind_pointer:
            raise ValueError(f"opaque type {t.name} used by value")
        return t.name
    if t.kind == "array":
        return f"[{rust_type(t.target, api)}; {t.length}]"
    if t.kind == "pointer":
        target = t.target
        mutability = "const" if target.const else "mut"
        if target.kind == "name" and target.name == "void":
            return f"*{mutability} c_void"
        return f"*{mutability} {rust_type(target, api, behind_pointer=True)}"
    raise ValueError(f"cannot map {t} to Rust")


def _c_prototype(f):
    params = ", ".join(f"{p.type} {p.name}" for p in f.params) or "void"
    return f"{f.ret} {f.name}({params})"


def _return(t, api):
    return "" if t.kind == "name" and t.name == "void" else f" -> {rust_type(t, api)}"


def emit(api, source="capi/include/fp8rl/fp8rl.h"):
    out = ["// ---- #define constants"]
    for c in api.constants:
        out += [f"/// `#define {c.name} {c.expr}`", f"pub const {c.name}: u32 = {c.value};"]

    out += ["", "// ---- enums: 32-bit C ints (each has a FORCE_32BIT member)"]
    for e in api.enums:
        out += ["", f"/// C `enum {e.name}`.", f"pub type {e.name} = i32;"]
        out += [f"pub const {name}: {e.name} = {value:#x};" if value > 0xFFFF else
                f"pub const {name}: {e.name} = {value};" for name, value in e.values]

    out += ["", "// ---- opaque handles: only ever behind pointers"]
    for name in api.opaque:
        out += [f"/// Opaque C handle `{name}`.", "#[repr(C)]",
                f"pub struct {name} {{", "    _private: [u8; 0],", "}"]

    out += ["", "// ---- callbacks"]
    for cb in api.callbacks:
        params = ", ".join(f"{p.name}: {rust_type(p.type, api)}" for p in cb.params)
        out += [f"/// C callback type `{cb.name}`.",
                f'pub type {cb.name} = Option<unsafe extern "C" fn({params}){_return(cb.ret, api)}>;']

    out += ["", "// ---- structs: fields in header order"]
    for s in api.structs:
        out += ["", f"/// C `struct {s.name}`; fill with its init function where it has one.",
                "#[repr(C)]", "#[derive(Debug, Clone, Copy)]", f"pub struct {s.name} {{"]
        out += [f"    pub {f.name}: {rust_type(f.type, api)}," for f in s.fields]
        out.append("}")

    out += ["", "// ---- functions", 'extern "C" {']
    for f in api.functions:
        params = ", ".join(f"{p.name}: {rust_type(p.type, api)}" for p in f.params)
        out += [f"    /// `{_c_prototype(f)}`", f"    pub fn {f.name}({params}){_return(f.ret, api)};"]
    out.append("}")

    out += ["", "/// Every enum and struct size, and every field offset and size: (name, offset, size);",
            "/// sizes have offset 0. The layout test compares them with the C compiler's.",
            "pub const LAYOUT: &[(&str, usize, usize)] = &["]
    for e in api.enums:
        out.append(f'    ("{e.name}", 0, core::mem::size_of::<{e.name}>()),')
    for s in api.structs:
        out.append(f'    ("{s.name}", 0, core::mem::size_of::<{s.name}>()),')
        out += [f'    ("{s.name}.{f.name}", core::mem::offset_of!({s.name}, {f.name}), '
                f"core::mem::size_of::<{rust_type(f.type, api)}>()),"
                for f in s.fields]
    out += ["];", "", "/// Every constant and enum value: (name, value).", "pub const VALUES: &[(&str, i64)] = &["]
    out += [f'    ("{c.name}", {c.name} as i64),' for c in api.constants]
    out += [f'    ("{name}", {name} as i64),' for e in api.enums for name, _ in e.values]
    out += ["];", "", "/// The names of every function declared above, in header order.",
            "pub const FUNCTIONS: &[&str] = &["]
    out += [f'    "{f.name}",' for f in api.functions]
    out += ["];", ""]
    body = "\n".join(out)
    # Import only the C types the header uses: an unused import is a warning.
    ffi = [name for name in ("c_char", "c_int", "c_uint", "c_void") if re.search(rf"\b{name}\b", body)]
    head = [f"// generated by bindings/gen/generate.py from {source} — do not edit", ""]
    if ffi:
        head += [f"use core::ffi::{{{', '.join(ffi)}}};", ""]
    return "\n".join(head + [body])
