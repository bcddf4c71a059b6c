"""The graph text form: printer, parser and structural hash (spec/text-form.md, TEXT-n).

The text is MLIR-like and line-oriented::

    graph @g(%0: tensor<f32[2,3] cpu:0>) {
      %1 = reshape(%0) {shape = (3, 2)} : tensor<f32[3,2] cpu:0>
      output(%1)
    }

Values are numbered in definition order and attributes sorted by name, so equal structure
gives equal text. ``parse`` is a hand-written tokenizer plus recursive-descent parser; it
re-stages every op through ``Graph.stage`` (the registry type rule) and checks the printed
result types. Every parse error is a ``GraphParseError`` naming line, column, what was
expected and what was found.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..dtype import DType
from ..errors import GraphParseError, GraphVerificationError
from ..registry import REGISTRY
from ..types import BufferType, DeviceRef, TensorType, ValueType
from .core import Graph, Value
from .splat import is_splat

__all__ = ["format_attr", "install_graph_methods", "parse", "parse_attr", "structural_hash",
           "to_text"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_CANONICAL_NAN = struct.unpack("<Q", struct.pack("<d", math.nan))[0]


# -- printing -------------------------------------------------------------------------
def _hex(arr: np.ndarray) -> str:
    data = np.ascontiguousarray(arr)
    if sys.byteorder != "little":  # pragma: no cover - big-endian hosts
        data = data.byteswap()
    return "0x" + data.tobytes().hex()


def _np_dtype(value: np.ndarray | np.generic) -> DType:
    try:
        return DType.from_numpy(value.dtype)
    except TypeError:
        raise GraphVerificationError(f"text form: attribute array of numpy dtype "
                                     f"{value.dtype} has no DType [TEXT-4]") from None


def _float(x: float) -> str:
    if math.isnan(x):
        bits = struct.unpack("<Q", struct.pack("<d", x))[0]
        return "nan" if bits == _CANONICAL_NAN else f"nan:0x{bits:016x}"
    return repr(x)  # shortest exact repr; always has '.', 'e', or is inf/-inf


def format_attr(value: Any) -> str:
    """The text of one attribute value (TEXT-4); ``parse_attr`` reads it back exactly."""
    if isinstance(value, np.ndarray):
        dims = ",".join(map(str, value.shape))
        if is_splat(value):  # one element broadcast (TEXT-4)
            return f"array<{_np_dtype(value).short}[{dims}] splat {_hex(value.flat[:1])}>"
        return f"array<{_np_dtype(value).short}[{dims}] {_hex(value)}>"
    if isinstance(value, np.generic):
        return f"scalar<{_np_dtype(value).short} {_hex(np.asarray(value))}>"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        try:
            return str(int(value))
        except ValueError:  # more digits than Python converts
            raise GraphVerificationError(f"text form: int attribute with {value.bit_length()}"
                                         " bits is too large to print [TEXT-4]") from None
    if isinstance(value, float):
        return _float(float(value))
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=True)
    if isinstance(value, tuple):
        items = [format_attr(v) for v in value]
        return "(" + items[0] + ",)" if len(items) == 1 else "(" + ", ".join(items) + ")"
    if isinstance(value, list):
        return "[" + ", ".join(format_attr(v) for v in value) + "]"
    if isinstance(value, DType):
        return value.short
    if isinstance(value, DeviceRef | TensorType | BufferType):
        return str(value)
    raise GraphVerificationError(f"text form: attribute value {value!r} of type "
                                 f"{type(value).__name__} has no text encoding [TEXT-4]")


def _graph_name(name: str) -> str:
    return "@" + (name if _IDENT.match(name) else json.dumps(name, ensure_ascii=True))


def _render(graph: Graph, name: str, locations: bool) -> str:
    ids: dict[Value, str] = {}

    def define(v: Value) -> str:
        ids[v] = f"%{len(ids)}"
        return ids[v]

    def use(v: Value) -> str:
        if v not in ids:
            raise GraphVerificationError(f"text form: graph {graph.name!r} uses {v!r} before "
                                         "it is defined [TEXT-2]")
        return ids[v]

    params = ", ".join(f"{define(v)}: {v.type}" for v in graph.inputs)
    lines = [f"graph {_graph_name(name)}({params}) {{"]
    for node in graph.nodes:
        operands = ", ".join(use(v) for v in node.operands)
        text = f"{node.op.name}({operands})"
        if node.attrs:
            text += " {" + ", ".join(f"{k} = {format_attr(node.attrs[k])}"
                                     for k in sorted(node.attrs)) + "}"
        if node.results:
            names = ", ".join(define(v) for v in node.results)
            types = ", ".join(str(v.type) for v in node.results)
            text = f"{names} = {text} : {types}"
        if locations and node.location is not None:
            text += "  // " + node.location_str().replace("\n", " ").replace("\r", " ")
        lines.append("  " + text)
    if graph.outputs is not None:
        lines.append("  output(" + ", ".join(use(v) for v in graph.outputs) + ")")
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_text(graph: Graph, *, locations: bool = False) -> str:
    """The canonical text of ``graph`` (TEXT-1). ``locations`` appends ``// file:line``
    comments, which the parser ignores."""
    return _render(graph, graph.name, locations)


def structural_hash(graph: Graph) -> str:
    """Hex sha256 of the text of ``graph`` with its name replaced by ``""`` (TEXT-7)."""
    return hashlib.sha256(_render(graph, "", False).encode("utf-8")).hexdigest()


# -- tokenizing -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # ident value gname number hex string punct eof
    text: str
    line: int
    col: int

    def describe(self) -> str:
        if self.kind == "eof":
            return "end of input"
        shown = self.text if len(self.text) <= 40 else self.text[:37] + "..."
        return repr(shown)


_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\n]+|//[^\n]*)
  | (?P<hex>0x[0-9a-fA-F]*)
  | (?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<value>%[A-Za-z0-9_]+)
  | (?P<gname>@(?:[A-Za-z_][A-Za-z0-9_.]*|"(?:[^"\\\n]|\\.)*"))
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<punct>[(){}\[\]<>,=:\-])
""", re.X)


def _fail(tok: Token, expected: str, note: str = "") -> GraphParseError:
    extra = f" ({note})" if note else ""
    return GraphParseError(f"line {tok.line}, col {tok.col}: expected {expected} but found "
                           f"{tok.describe()}{extra} [TEXT-6]")


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens (comments and whitespace dropped), ending with ``eof``."""
    tokens: list[Token] = []
    pos, line, line_start = 0, 1, 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        col = pos - line_start + 1
        if m is None or m.end() == pos:
            bad = Token("char", text[pos], line, col)
            note = "unterminated string" if text[pos] in "\"@" else ""
            raise _fail(bad, "a token", note)
        kind = m.lastgroup or ""
        if kind != "ws":
            tokens.append(Token(kind, m.group(), line, col))
        newlines = m.group().count("\n")
        if newlines:
            line += newlines
            line_start = pos + m.group().rfind("\n") + 1
        pos = m.end()
    tokens.append(Token("eof", "", line, pos - line_start + 1))
    return tokens


# -- parsing --------------------------------------------------------------------------
_KEYWORD_VALUES: dict[str, Any] = {"true": True, "false": False, "none": None,
                                   "inf": math.inf}


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = tokenize(text)
        self.i = 0

    # basic helpers
    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def next(self) -> Token:
        t = self.toks[self.i]
        if t.kind != "eof":
            self.i += 1
        return t

    def at(self, text: str) -> bool:
        return self.tok.kind in ("punct", "ident") and self.tok.text == text

    def expect(self, text: str) -> Token:
        if not self.at(text):
            raise _fail(self.tok, repr(text))
        return self.next()

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.next()
            return True
        return False

    def expect_kind(self, kind: str, what: str) -> Token:
        if self.tok.kind != kind:
            raise _fail(self.tok, what)
        return self.next()

    def sequence(self, close: str, item: Callable[[], Any]) -> list[Any]:
        """``item (',' item)* close`` or just ``close``; the opener is already consumed."""
        out: list[Any] = []
        if self.accept(close):
            return out
        out.append(item())
        while self.accept(","):
            out.append(item())
        self.expect(close)
        return out

    def integer(self, what: str, minimum: int | None = None) -> int:
        t = self.tok
        if t.kind != "number" or not re.fullmatch(r"-?\d+", t.text):
            raise _fail(t, what)
        self.next()
        try:
            n = int(t.text)
        except ValueError:  # more digits than Python converts
            raise _fail(t, what, "too many digits") from None
        if minimum is not None and n < minimum:
            raise _fail(t, what)
        return n

    def string(self, tok: Token) -> str:
        try:
            value = json.loads(tok.text)
        except ValueError as e:
            raise _fail(tok, "a string literal with JSON escapes", str(e)) from None
        assert isinstance(value, str)
        return value

    # types and attribute values
    def dtype(self) -> DType:
        t = self.expect_kind("ident", "a dtype (f32, si64, bf16, i1, ...)")
        try:
            return DType.from_short(t.text)
        except ValueError:
            raise _fail(t, "a dtype (f32, si64, bf16, i1, ...)") from None

    def device(self) -> DeviceRef:
        t = self.tok
        if not (t.kind == "ident" and t.text in ("cpu", "gpu")):
            raise _fail(t, "a device ('cpu:N' or 'gpu:N')")
        self.next()
        self.expect(":")
        return DeviceRef.parse(f"{t.text}:{self.integer('a device id', 0)}")

    def shape(self) -> tuple[int, ...]:
        self.expect("[")
        return tuple(self.sequence("]", lambda: self.integer("a dimension (int >= 0)", 0)))

    def type_body(self, kind: str) -> ValueType:
        self.expect("<")
        dtype, shape, device = self.dtype(), self.shape(), self.device()
        self.expect(">")
        return TensorType(dtype, shape, device) if kind == "tensor" else \
            BufferType(dtype, shape, device)

    def value_type(self) -> ValueType:
        t = self.tok
        if t.kind == "ident" and t.text in ("tensor", "buffer"):
            self.next()
            return self.type_body(t.text)
        raise _fail(t, "a type ('tensor<...>' or 'buffer<...>')")

    def raw_bytes(self, dtype: DType, shape: tuple[int, ...]) -> np.ndarray:
        t = self.expect_kind("hex", "raw bytes as hex (0x...)")
        digits = t.text[2:]
        want = math.prod(shape) * dtype.size_in_bytes
        if len(digits) != 2 * want:
            raise _fail(t, f"{2 * want} hex digits ({want} bytes of {dtype.short}"
                        f"[{','.join(map(str, shape))}])", f"{len(digits)} digits")
        data = bytes.fromhex(digits)
        if dtype is DType.bool and any(b > 1 for b in data):
            raise _fail(t, "bool bytes 00 or 01")
        arr = np.frombuffer(data, dtype.to_numpy())
        if sys.byteorder != "little":  # pragma: no cover - big-endian hosts
            arr = arr.byteswap()
        try:
            arr = arr.reshape(shape)
        except ValueError as e:  # e.g. dimensions too large for numpy
            raise _fail(t, f"bytes for an array of shape {list(shape)}", str(e)) from None
        arr.flags.writeable = False
        return arr

    def attr_value(self) -> Any:
        t = self.tok
        if t.kind == "number":
            self.next()
            if re.fullmatch(r"-?\d+", t.text):
                try:
                    return int(t.text)
                except ValueError:  # more digits than Python converts
                    raise _fail(t, "an int", "too many digits") from None
            return float(t.text)
        if t.kind == "string":
            self.next()
            return self.string(t)
        if self.accept("("):
            items = []
            if self.accept(")"):
                return ()
            items.append(self.attr_value())
            if self.accept(","):
                if self.accept(")"):
                    return (items[0],)
                items.extend(self.sequence(")", self.attr_value))
                return tuple(items)
            self.expect(")")
            raise _fail(self.toks[self.i - 1], "',' after the single item of a 1-tuple")
        if self.accept("["):
            return self.sequence("]", self.attr_value)
        if self.accept("-"):
            self.expect("inf")
            return -math.inf
        if t.kind != "ident":
            raise _fail(t, "an attribute value")
        word = t.text
        if word in _KEYWORD_VALUES:
            self.next()
            return _KEYWORD_VALUES[word]
        if word == "nan":
            self.next()
            if not self.accept(":"):
                return math.nan
            h = self.expect_kind("hex", "NaN bits as 16 hex digits (0x...)")
            bits = int(h.text[2:] or "0", 16)
            value: float = struct.unpack("<d", struct.pack("<Q", bits & (2**64 - 1)))[0]
            if len(h.text) != 18 or not math.isnan(value):
                raise _fail(h, "NaN bits as 16 hex digits (0x...)")
            return value
        if word in ("tensor", "buffer"):
            return self.value_type()
        if word in ("cpu", "gpu"):
            return self.device()
        if word == "array":
            self.next()
            self.expect("<")
            dtype, shape = self.dtype(), self.shape()
            if self.tok.kind == "ident" and self.tok.text == "splat":
                self.next()
                one = self.raw_bytes(dtype, (1,))
                arr = np.broadcast_to(one.reshape(()), shape)
                if arr.size <= 1:
                    raise _fail(self.tok, "a splat of more than one element")
            else:
                arr = self.raw_bytes(dtype, shape)
            self.expect(">")
            return arr
        if word == "scalar":
            self.next()
            self.expect("<")
            dtype = self.dtype()
            scalar = self.raw_bytes(dtype, ())[()]
            self.expect(">")
            return scalar
        try:
            dt = DType.from_short(word)
        except ValueError:
            raise _fail(t, "an attribute value") from None
        self.next()
        return dt

    # the graph
    def graph(self) -> Graph:
        self.expect("graph")
        name_tok = self.expect_kind("gname", "a graph name ('@name' or '@\"name\"')")
        name = name_tok.text[1:]
        if name.startswith('"'):
            name = self.string(Token("string", name, name_tok.line, name_tok.col + 1))
        self.expect("(")
        defined: dict[str, Token] = {}
        values: dict[str, Value] = {}
        params: list[tuple[Token, ValueType]] = []

        def param() -> None:
            tok = self.define(defined)
            self.expect(":")
            params.append((tok, self.value_type()))

        self.sequence(")", param)
        g = Graph(name)
        for tok, t in params:
            values[tok.text] = g.add_input(t)
        self.expect("{")
        while not self.at("}"):
            if self.at("output") and self.toks[self.i + 1].text == "(":
                self.output(g, values)
                break
            self.node(g, defined, values)
        self.expect("}")
        if self.tok.kind != "eof":
            raise _fail(self.tok, "end of input")
        return g

    def define(self, defined: dict[str, Token]) -> Token:
        tok = self.expect_kind("value", "a value name ('%N')")
        if tok.text in defined:
            first = defined[tok.text]
            raise _fail(tok, "a new value name", f"already defined at line {first.line}, "
                        f"col {first.col}")
        defined[tok.text] = tok
        return tok

    def use(self, values: dict[str, Value]) -> Value:
        tok = self.expect_kind("value", "a value ('%N')")
        if tok.text not in values:
            raise _fail(tok, "a defined value", "not defined before this use")
        return values[tok.text]

    def output(self, g: Graph, values: dict[str, Value]) -> None:
        tok = self.next()
        self.expect("(")
        outs = self.sequence(")", lambda: self.use(values))
        try:
            g.output(*outs)
        except Exception as e:
            raise _fail(tok, "tensor outputs", str(e)) from e

    def node(self, g: Graph, defined: dict[str, Token], values: dict[str, Value]) -> None:
        names: list[Token] = []
        if self.tok.kind == "value":
            names.append(self.define(defined))
            while self.accept(","):
                names.append(self.define(defined))
            self.expect("=")
        op_tok = self.expect_kind("ident", "an op name or 'output'")
        op = REGISTRY.get(op_tok.text)
        if op is None:
            raise _fail(op_tok, "a registered op name", f"unknown op {op_tok.text!r}")
        self.expect("(")
        operands = self.sequence(")", lambda: self.use(values))
        attrs: dict[str, Any] = {}
        if self.accept("{"):
            def attr() -> None:
                key = self.expect_kind("ident", "an attribute name")
                if key.text in attrs:
                    raise _fail(key, "a new attribute name", "duplicate attribute")
                self.expect("=")
                attrs[key.text] = self.attr_value()
            self.sequence("}", attr)
        types: list[ValueType] = []
        type_tok = self.tok
        if self.accept(":"):
            type_tok = self.tok
            types.append(self.value_type())
            while self.accept(","):
                types.append(self.value_type())
        try:
            results = g.stage(op, operands, attrs)
        except Exception as e:
            raise _fail(op_tok, f"operands and attributes valid for op {op.name!r}",
                        f"{type(e).__name__}: {e}") from e
        g.nodes[-1].site = None
        inferred = [r.type for r in results]
        if types != inferred:
            want = ", ".join(map(str, inferred)) or "no result types"
            got = ", ".join(map(str, types)) or "none"
            raise _fail(type_tok, f"result types {want} (inferred by {op.name})",
                        f"printed: {got}")
        if len(names) != len(results):
            where = names[0] if names else op_tok
            raise _fail(where, f"{len(results)} result name(s) for op {op.name!r}",
                        f"{len(names)} name(s)")
        for tok, v in zip(names, results, strict=True):
            values[tok.text] = v


def parse(text: str) -> Graph:
    """Parse the text form back into a graph (TEXT-5); errors are ``GraphParseError``."""
    if not isinstance(text, str):
        raise GraphParseError(f"line 1, col 1: expected the text form as a str but found "
                              f"{type(text).__name__} [TEXT-6]")
    parser = _Parser(text)
    try:
        return parser.graph()
    except RecursionError:
        raise _fail(parser.tok, "less deeply nested attribute values") from None


def parse_attr(text: str) -> Any:
    """Parse one attribute value written by ``format_attr`` (TEXT-4)."""
    p = _Parser(text)
    try:
        value = p.attr_value()
    except RecursionError:
        raise _fail(p.tok, "less deeply nested attribute values") from None
    if p.tok.kind != "eof":
        raise _fail(p.tok, "end of input")
    return value


def _graph_to_text(graph: Graph) -> str:
    return to_text(graph)


def install_graph_methods() -> None:
    """Attach ``Graph.to_text``, ``Graph.parse``, ``Graph.structural_hash`` and ``str(graph)``
    (declared in ``graph/core.py``; the text form lives here)."""
    Graph.to_text = _graph_to_text  # type: ignore[method-assign,assignment]
    Graph.__str__ = _graph_to_text  # type: ignore[method-assign,assignment]
    Graph.parse = staticmethod(parse)  # type: ignore[method-assign]
    Graph.structural_hash = structural_hash  # type: ignore[method-assign,assignment]


install_graph_methods()
