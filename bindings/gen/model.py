"""Neutral model of the public C header, read through SWIG's parser.

`swig -xml` gives a full C parse (types, struct member order, evaluated enum
values) without us writing a C parser. This module turns that XML into a few
plain dataclasses that the language emitters share, so each emitter only
decides how to spell a C type, never how to read the header.
"""
import ast
import dataclasses
import operator
import os
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from typing import List, Optional, Tuple

# Integer types a binding must know by width; everything else named in the
# header is one of the header's own typedefs.
PRIMITIVES = {
    "void", "char", "int", "unsigned int", "float", "double", "size_t",
    "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t",
}


@dataclasses.dataclass(frozen=True)
class CType:
    """A C type as a tree: kind is 'name', 'pointer', 'array' or 'function'."""
    kind: str
    name: str = ""                       # 'name': a primitive or a typedef of the header
    const: bool = False                  # 'name': the type is const; 'pointer': the pointer itself is
                                         # (`const char* const*`: a pointer to a const pointer to const char)
    target: Optional["CType"] = None     # 'pointer', 'array': element; 'function': return type
    length: int = 0                      # 'array'
    params: Tuple["CType", ...] = ()     # 'function'

    def __str__(self):  # C-like spelling, for messages and comments
        if self.kind == "name":
            return ("const " if self.const else "") + self.name
        if self.kind == "pointer":
            return f"{self.target}*" + (" const" if self.const else "")
        if self.kind == "array":
            return f"{self.target}[{self.length}]"
        return f"{self.target}(*)({', '.join(map(str, self.params))})"


@dataclasses.dataclass
class Param:
    name: str
    type: CType


@dataclasses.dataclass
class Enum:
    name: str
    values: List[Tuple[str, int]]


@dataclasses.dataclass
class Struct:
    name: str
    fields: List[Param]


@dataclasses.dataclass
class Function:
    name: str
    ret: CType
    params: List[Param]


@dataclasses.dataclass
class Callback:
    name: str
    ret: CType
    params: List[Param]


@dataclasses.dataclass
class Constant:
    name: str
    value: int
    expr: str  # as SWIG printed it after macro expansion, for comments


@dataclasses.dataclass
class Api:
    """Everything public, in header order within each list."""
    constants: List[Constant]
    enums: List[Enum]
    opaque: List[str]       # handle typedefs: typedef struct x x; without a body
    callbacks: List[Callback]
    structs: List[Struct]
    functions: List[Function]
    unmapped: List[str]     # declarations the model could not represent

    def kind_of(self, name):
        """Which kind of header typedef `name` is ('enum', 'struct', ...), or 'primitive'."""
        for kind, names in (("enum", [e.name for e in self.enums]),
                            ("struct", [s.name for s in self.structs]),
                            ("opaque", self.opaque),
                            ("callback", [c.name for c in self.callbacks])):
            if name in names:
                return kind
        if name in PRIMITIVES:
            return "primitive"
        raise KeyError(f"type {name!r} is neither a primitive nor declared in the header")


# ---- SWIG type strings -------------------------------------------------------
# SWIG writes a declarator as a prefix chain read left to right, e.g.
# 'p.q(const).char' = pointer to const char, 'a(8).int64_t' = int64_t[8],
# 'p.f(int,p.void).void' = pointer to function (int, void*) returning void.

def _split_top(text, sep=","):
    """Splits on `sep` outside parentheses (function parameter lists nest)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _closing(text, open_index):
    depth = 0
    for i in range(open_index, len(text)):
        depth += text[i] == "("
        depth -= text[i] == ")"
        if depth == 0:
            return i
    raise ValueError(f"unbalanced SWIG type {text!r}")


def parse_type(text):
    if text.startswith("p."):
        return CType("pointer", target=parse_type(text[2:]))
    if text.startswith("q("):
        end = _closing(text, 1)
        inner = parse_type(text[end + 2:])
        if "const" in text[2:end].split() and inner.kind in ("name", "pointer"):
            # On a pointer it does not change the ABI, but it tells the library
            # only reads through it (Rust: *const) and spells the prototype right.
            return dataclasses.replace(inner, const=True)
        return inner
    if text.startswith("a("):
        end = _closing(text, 1)
        return CType("array", length=int(_evaluate(text[2:end])), target=parse_type(text[end + 2:]))
    if text.startswith("f("):
        end = _closing(text, 1)
        args = [a for a in _split_top(text[2:end]) if a and a != "void"]
        return CType("function", target=parse_type(text[end + 2:]),
                     params=tuple(parse_type(a) for a in args))
    for prefix in ("struct ", "enum "):
        if text.startswith(prefix):
            text = text[len(prefix):]
    return CType("name", name=text)


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.FloorDiv: operator.floordiv, ast.Div: operator.floordiv, ast.Mod: operator.mod,
        ast.LShift: operator.lshift, ast.RShift: operator.rshift,
        ast.BitOr: operator.or_, ast.BitAnd: operator.and_, ast.BitXor: operator.xor,
        ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}


def _evaluate(expr):
    """Integer value of a C constant expression SWIG left unevaluated, e.g. '(0*10000+1*100+0)'.

    Only literals and arithmetic are accepted, so a later emitter can write a
    plain number whatever its language's expression syntax."""
    text = expr.strip()
    for suffix in ("ULL", "ull", "LL", "ll", "UL", "ul", "U", "u", "L", "l"):
        if text.endswith(suffix) and text[:-len(suffix)][-1:].isalnum():
            text = text[:-len(suffix)]
            break

    def walk(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.operand))
        raise ValueError(f"not an integer constant expression: {expr!r}")

    return walk(ast.parse(text, mode="eval").body)


# ---- SWIG XML ----------------------------------------------------------------

def _attrs(node):
    found = node.find("attributelist")
    if found is None:
        return {}
    return {a.get("name"): a.get("value") for a in found.findall("attribute")}


def _params(node):
    found = node.find("attributelist")
    parms = found.find("parmlist") if found is not None else None
    result = []
    for parm in ([] if parms is None else parms.findall("parm")):
        a = _attrs(parm)
        if a.get("type") == "void":  # f(void)
            continue
        result.append(Param(a.get("name", f"arg{len(result)}"), _decay(parse_type(a["type"]))))
    return result


def _decay(t):
    """A parameter declared as an array is a pointer to its element in C (uint8_t id[128] passes uint8_t*)."""
    return CType("pointer", target=t.target) if t.kind == "array" else t


def run_swig(header, swig="swig"):
    """The SWIG XML of `header`, parsed."""
    include_dir = os.path.dirname(os.path.dirname(os.path.abspath(header)))
    with tempfile.TemporaryDirectory() as tmp:
        interface = os.path.join(tmp, "fp8rl.i")
        # SWIG's preprocessor does not know GCC attributes; FP8RL_API expands to
        # one, so define it away rather than redefining FP8RL_API (an error in SWIG).
        with open(interface, "w") as f:
            f.write("%module fp8rl\n#define __attribute__(x)\n"
                    f'%include "{os.path.relpath(os.path.abspath(header), include_dir)}"\n')
        out = os.path.join(tmp, "fp8rl.xml")
        subprocess.run([swig, "-xml", "-xmllang", "python", "-I" + include_dir, "-o", out, interface],
                       check=True, capture_output=True, text=True)
        return ET.parse(out).getroot()


def build_model(root, prefix="fp8rl_"):
    api = Api([], [], [], [], [], [], [])
    struct_names = set()
    # The header's nodes sit under the <include> of the header itself; SWIG's
    # own library files (swig.swg, ...) are separate <include>s full of typemaps
    # we must not pick up, so only walk the direct declarations of includes.
    for include in root.iter("include"):
        for node in include:
            a = _attrs(node)
            name = a.get("name", "")
            if node.tag == "constant":
                try:
                    api.constants.append(Constant(name, _evaluate(a["value"]), a["value"]))
                except (ValueError, SyntaxError):
                    api.unmapped.append(f"#define {name} {a.get('value')} (not an integer)")
            elif node.tag == "enum":
                values = [(_attrs(i)["name"], _evaluate(_attrs(i)["enumvalue"])) for i in node.iter("enumitem")]
                api.enums.append(Enum(a.get("tdname") or name, values))
            elif node.tag == "class" and a.get("kind") == "struct":
                fields = []
                for member in node.findall("cdecl"):
                    m = _attrs(member)
                    fields.append(Param(m["name"], parse_type(m.get("decl", "") + m["type"])))
                api.structs.append(Struct(a.get("tdname") or name, fields))
                struct_names.add(name)
            elif node.tag == "class":
                api.unmapped.append(f"{a.get('kind')} {name} (only structs are mapped)")
            elif node.tag == "cdecl" and a.get("kind") == "function":
                full = parse_type(a.get("decl", "") + a["type"])
                api.functions.append(Function(name, full.target, _params(node)))
            elif node.tag == "cdecl" and a.get("kind") == "typedef":
                full = parse_type(a.get("decl", "") + a["type"])
                if full.kind == "pointer" and full.target.kind == "function":
                    api.callbacks.append(Callback(name, full.target.target, _params(node)))
                elif a["type"] == f"struct {name}" and name not in struct_names:
                    api.opaque.append(name)
                elif a["type"] not in (f"struct {name}", f"enum {name}"):
                    api.unmapped.append(f"typedef {a['type']} {name}")
            elif node.tag in ("cdecl", "class", "enum", "constant"):
                api.unmapped.append(f"{node.tag} {name}")
    for item in api.functions + api.structs + api.enums + api.callbacks:
        if not item.name.startswith(prefix):
            api.unmapped.append(f"{item.name} (no {prefix} prefix)")
    return api


def read_header(header, swig="swig"):
    return build_model(run_swig(header, swig))
