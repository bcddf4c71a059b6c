"""AST mutation operators and mutant construction for ``python -m conformance.mutants``.

A *mutation site* is one AST node of a Python function (pre-order index) with one
replacement; a :class:`Mutation` is one site x operator. :func:`function_mutations` lists
them for a function (deduplicated by the mutated source), :func:`compile_mutant` compiles a
mutated copy in a namespace equal to the function's module globals, with its closure cells
passed in (CONF-105).
"""

from __future__ import annotations
import __future__

import ast
import copy
import difflib
import functools
import inspect
import os
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["Mutation", "compile_mutant", "find_node", "function_mutations", "rebind"]

_BINOPS: dict[type[ast.operator], tuple[type[ast.operator], ...]] = {
    ast.Add: (ast.Sub,), ast.Sub: (ast.Add,), ast.Mult: (ast.Div,), ast.Div: (ast.Mult,),
    ast.FloorDiv: (ast.Div,), ast.Mod: (ast.FloorDiv,), ast.Pow: (ast.Mult,),
    ast.BitAnd: (ast.BitOr,), ast.BitOr: (ast.BitAnd,), ast.BitXor: (ast.BitOr,),
    ast.LShift: (ast.RShift,), ast.RShift: (ast.LShift,)}
_CMPOPS: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Lt: (ast.LtE, ast.Gt), ast.LtE: (ast.Lt, ast.Gt), ast.Gt: (ast.GtE, ast.Lt),
    ast.GtE: (ast.Gt, ast.Lt), ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,),
    ast.Is: (ast.IsNot,), ast.IsNot: (ast.Is,), ast.In: (ast.NotIn,), ast.NotIn: (ast.In,)}
#: numpy functions whose call is the special-value handling (NaN, inf, signed zero)
_SPECIAL_TESTS = {"isnan": "zeros_like", "isinf": "zeros_like", "signbit": "zeros_like",
                  "isfinite": "ones_like", "isneginf": "zeros_like", "isposinf": "zeros_like"}
#: numpy attribute swaps, as the source spells them (``np.`` or ``numpy.`` + name)
_NUMPY_SWAPS = {
    "np.fmax": "np.maximum", "np.fmin": "np.minimum", "np.maximum": "np.fmax",
    "np.minimum": "np.fmin", "np.nanmax": "np.max", "np.nanmin": "np.min",
    "np.nansum": "np.sum", "np.floor": "np.trunc", "np.ceil": "np.trunc",
    "np.trunc": "np.floor", "np.rint": "np.round", "np.argmax": "np.argmin",
    "np.argmin": "np.argmax", "np.cumsum": "np.cumprod", "np.float64": "np.float32",
    "np.float32": "np.float16", "np.int64": "np.int32", "np.longdouble": "np.float64",
    "np.uint64": "np.uint32", "np.isnan": "np.isinf", "np.isinf": "np.isnan"}
_ATTR_ARGS = {"keepdims": "keepdims", "axis": "axis", "reverse": "reverse"}


@dataclass(frozen=True)
class Mutation:
    """One mutant of one function: the operator, the site and the mutated source."""

    operator: str
    index: int  # pre-order index of the mutated node in the function's AST
    line: int  # line of the mutated node in the original file
    before: str
    after: str
    source: str  # the whole mutated function, unparsed

    def diff(self, original: str) -> str:
        return "\n".join(difflib.unified_diff(original.splitlines(), self.source.splitlines(),
                                              "reference", "mutant", lineterm="", n=1))


def _dup(node: ast.AST) -> Any:
    return copy.deepcopy(node)


def _expr(src: str) -> ast.expr:
    return ast.parse(src, mode="eval").body


def _np(name: str, module: str = "np") -> ast.expr:
    return ast.Attribute(ast.Name(module, ast.Load()), name, ast.Load())


def _plus(e: ast.expr, k: int) -> ast.expr:
    return ast.BinOp(copy.deepcopy(e), ast.Add() if k > 0 else ast.Sub(), ast.Constant(abs(k)))


def _call_name(call: ast.Call) -> str | None:
    f = call.func
    if isinstance(f, ast.Attribute):
        return f.attr
    return f.id if isinstance(f, ast.Name) else None


def _replacements(node: ast.AST, has_np: bool) -> Iterator[tuple[str, ast.AST]]:
    """(operator name, replacement node) for every mutation of ``node`` itself."""
    if isinstance(node, ast.BinOp | ast.AugAssign):
        for op in _BINOPS.get(type(node.op), ()):
            new = _dup(node)
            new.op = op()
            yield "arithmetic swap", new
    elif isinstance(node, ast.Compare):
        for i, cmp in enumerate(node.ops):
            for cop in _CMPOPS.get(type(cmp), ()):
                new = _dup(node)
                new.ops[i] = cop()
                yield "comparison swap", new
        for i, c in enumerate(node.comparators):  # "fV" -> "f": a dtype kind dropped
            if (isinstance(c, ast.Constant) and isinstance(c.value, str) and 1 < len(c.value)
                    < 6 and isinstance(node.ops[i], ast.In | ast.NotIn)):
                for j in range(len(c.value)):
                    new = _dup(node)
                    new.comparators[i] = ast.Constant(c.value[:j] + c.value[j + 1:])
                    yield "narrowed dtype kind", new
    elif isinstance(node, ast.BoolOp):
        new = _dup(node)
        new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield "boolean swap", new
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub | ast.Invert):
        yield "dropped unary operator", copy.deepcopy(node.operand)
    elif isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool):
            yield "constant flip", ast.Constant(not v)
        elif isinstance(v, int | float) and not isinstance(v, complex):
            yield "constant +1", ast.Constant(v + 1)
            yield "constant -1", ast.Constant(v - 1)
    elif isinstance(node, ast.Slice):
        for part in ("lower", "upper", "step"):
            e = getattr(node, part)
            if e is None:
                continue
            for k in (1, -1):
                new = _dup(node)
                setattr(new, part, _plus(e, k))
                yield "slice off-by-one", new
    elif isinstance(node, ast.If | ast.IfExp | ast.While):
        for value in ((True, False) if not isinstance(node, ast.While) else (False,)):
            new = _dup(node)
            new.test = ast.Constant(value)
            yield f"branch forced {value}", new
    elif isinstance(node, ast.For):
        new = _dup(node)
        new.iter = ast.Call(ast.Name("reversed", ast.Load()),
                            [ast.Call(ast.Name("list", ast.Load()), [node.iter], [])], [])
        yield "reversed iteration order", new
    elif isinstance(node, ast.Call):
        yield from _call_replacements(node, has_np)
    elif isinstance(node, ast.Attribute) and has_np and f"np.{node.attr}" in _NUMPY_SWAPS \
            and isinstance(node.value, ast.Name) and node.value.id in ("np", "numpy", "xp"):
        what = ("narrowed dtype" if node.attr in ("float64", "float32", "int64", "uint64",
                                                   "longdouble") else "numpy function swap")
        swap = _NUMPY_SWAPS[f"np.{node.attr}"].removeprefix("np.")
        yield what, _np(swap, node.value.id)  # xp: the kernel's own namespace


def _call_replacements(node: ast.Call, has_np: bool) -> Iterator[tuple[str, ast.AST]]:
    name = _call_name(node)
    if name == "range" and node.args:
        stop = len(node.args) - 1 if len(node.args) < 3 else 1
        for k in (1, -1):
            new = _dup(node)
            new.args[stop] = _plus(node.args[stop], k)
            yield "loop bound off-by-one", new
        if len(node.args) >= 2:
            new = _dup(node)
            new.args[0] = _plus(node.args[0], 1)
            yield "loop bound off-by-one", new
    if name == "reversed" and len(node.args) == 1:
        yield "reversed iteration order", copy.deepcopy(node.args[0])
    if has_np and name in _SPECIAL_TESTS and node.args:
        yield "dropped special-value handling", ast.Call(
            _np(_SPECIAL_TESTS[name]), [copy.deepcopy(node.args[0])],
            [ast.keyword("dtype", ast.Name("bool", ast.Load()))])
    if name == "copysign" and len(node.args) == 2:
        yield "dropped special-value handling", copy.deepcopy(node.args[0])
    if name == "where" and len(node.args) == 3:
        yield "dropped np.where branch", copy.deepcopy(node.args[1])
        yield "dropped np.where branch", copy.deepcopy(node.args[2])
    if name == "astype" and isinstance(node.func, ast.Attribute):
        yield "dropped cast", copy.deepcopy(node.func.value)
    for i, kw in enumerate(node.keywords):
        new = _dup(node)
        if kw.arg == "dtype":
            del new.keywords[i]
            yield "dropped accumulation dtype", new
        elif kw.arg in ("keepdims", "reverse") and not isinstance(kw.value, ast.Constant):
            new.keywords[i].value = ast.UnaryOp(ast.Not(), copy.deepcopy(kw.value))
            yield f"swapped {kw.arg}", new
        elif kw.arg == "axis":
            for alt in ("None", "0", "-1"):
                new = _dup(node)
                new.keywords[i].value = _expr(alt)
                yield "swapped axis", new


class _Counter(ast.NodeVisitor):
    """Pre-order numbering of the nodes a mutation may touch (docstrings, annotations and
    decorators are skipped)."""

    def __init__(self) -> None:
        self.nodes: list[ast.AST] = []

    def visit(self, node: ast.AST) -> Any:
        self.nodes.append(node)
        for name, value in ast.iter_fields(node):
            if name in ("annotation", "returns", "decorator_list", "type_comment"):
                continue
            body = value
            if name == "body" and isinstance(value, list) and value and _is_docstring(value[0]):
                body = value[1:]
            for child in body if isinstance(body, list) else [body]:
                if isinstance(child, ast.AST) and not isinstance(child, ast.expr_context):
                    self.visit(child)


def _is_docstring(stmt: ast.AST) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str))


def _numbered(root: ast.AST) -> list[ast.AST]:
    c = _Counter()
    c.visit(root)
    return c.nodes


def _replace(root: ast.AST, target: ast.AST, new: ast.AST) -> ast.AST:
    """A copy of ``root`` with node ``target`` (by identity in ``root``) replaced."""
    memo: dict[int, Any] = {id(target): new}
    out = copy.deepcopy(root, memo)
    return ast.fix_missing_locations(out)


@functools.cache
def _module_ast(path: str) -> ast.Module:
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read(), path)


def find_node(fn: types.FunctionType) -> ast.FunctionDef | ast.Lambda | None:
    """The definition of ``fn`` in its source file (by first line and name), or None."""
    try:
        path = inspect.getsourcefile(fn)
    except TypeError:
        return None
    if not path or not os.path.exists(path):  # generated code (dataclass methods, exec)
        return None
    code = fn.__code__
    found: list[ast.FunctionDef | ast.Lambda] = []
    for node in ast.walk(_module_ast(path)):
        if isinstance(node, ast.FunctionDef) and node.name == code.co_name:
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            if code.co_firstlineno in (first, node.lineno):
                found.append(node)
        elif isinstance(node, ast.Lambda) and code.co_name == "<lambda>" \
                and node.lineno == code.co_firstlineno \
                and [a.arg for a in node.args.args] == list(code.co_varnames[:code.co_argcount]):
            found.append(node)
    return found[0] if len(found) == 1 else None


def function_mutations(fn: types.FunctionType) -> list[Mutation]:
    """Every mutant of ``fn`` (one per site x operator), deduplicated by mutated source."""
    node = find_node(fn)
    if node is None:
        return []
    original = ast.unparse(node)
    has_np = "np" in fn.__globals__
    seen = {original}
    out: list[Mutation] = []
    for index, site in enumerate(_numbered(node)):
        if index == 0 and isinstance(site, ast.FunctionDef | ast.Lambda):
            continue
        for operator, new in _replacements(site, has_np):
            mutated = _replace(node, site, new)
            source = ast.unparse(mutated)
            if source in seen:
                continue
            seen.add(source)
            out.append(Mutation(operator, index, getattr(site, "lineno", 0),
                                _short(site), _short(new), source))
    return out


def _short(node: ast.AST) -> str:
    text = ast.unparse(node) if not isinstance(node, ast.stmt) else \
        ast.unparse(node).splitlines()[0]
    return text if len(text) <= 80 else text[:77] + "..."


def original_source(fn: types.FunctionType) -> str:
    node = find_node(fn)
    return ast.unparse(node) if node is not None else ""


def compile_mutant(fn: types.FunctionType, mutation: Mutation) -> types.FunctionType:
    """``mutation`` compiled like ``fn``: in a copy of its module globals, its free
    variables bound to ``fn``'s closure cells, its defaults and name kept."""
    tree = ast.parse(mutation.source)
    body = tree.body[0]
    if isinstance(body, ast.FunctionDef):
        body.decorator_list = []
        name = body.name
        inner: list[ast.stmt] = [body]
    else:  # a lambda
        name = "__mutant__"
        inner = [ast.Assign([ast.Name(name, ast.Store())], body.value)]  # type: ignore[attr-defined]
    free = list(fn.__code__.co_freevars)
    factory = ast.FunctionDef(
        name="__mutant_factory__",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(v) for v in free], kwonlyargs=[],
                           kw_defaults=[], defaults=[]),
        body=[*inner, ast.Return(ast.Name(name, ast.Load()))], decorator_list=[])
    module = ast.fix_missing_locations(ast.Module([factory], []))
    ns = dict(fn.__globals__)
    code = compile(module, f"<mutant of {fn.__qualname__}>", "exec",
                   flags=__future__.annotations.compiler_flag, dont_inherit=True)
    exec(code, ns)  # the mutant of a registry function, by design
    cells = [c.cell_contents for c in fn.__closure__ or ()]
    out: types.FunctionType = ns["__mutant_factory__"](*cells)
    out.__name__ = fn.__name__
    return out


def rebind(fn: types.FunctionType, *, free: dict[str, Any] | None = None,
           globals_: dict[str, Any] | None = None) -> types.FunctionType:
    """``fn`` with some closure cells or module globals replaced (its code unchanged)."""
    closure = fn.__closure__
    if free:
        closure = tuple(types.CellType(free[v]) if v in free else c
                        for v, c in zip(fn.__code__.co_freevars, closure or (), strict=True))
    g = fn.__globals__
    if globals_:
        g = {**g, **globals_}
    out = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, closure)
    out.__kwdefaults__ = fn.__kwdefaults__
    out.__qualname__ = fn.__qualname__
    return out


Kernel = Callable[..., Any]
